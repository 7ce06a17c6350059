/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-vm: what its files share -- the options and the state of
 * one run: the servers it started, the guest's kernel and initramfs, and
 * the QEMU that boots them.
 *
 * Like largeblock-run (run.h), every child is recorded the moment it
 * exists, so teardown can stop exactly what was started, whenever a
 * signal or a timeout arrives; children are started and waited for only
 * through proc.h.  The guest talks back through files in the private
 * directory: the serial log (its console) and the status port (see
 * largeblock-vm-init).
 *
 * Single-threaded.
 */
#ifndef LARGEBLOCK_VM_H
#define LARGEBLOCK_VM_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "largeblock/geometry.h"

#define VM_PROG "largeblock-vm"
#define VM_MAX_DISKS 8
#define VM_MAX_CONNECTIONS 8
#define VM_MAX_KERNEL_DEBS 8

/* Exit statuses of its own (otherwise: COMMAND's). */
#define VM_EXIT_REFUSED 123 /* the guest kernel cannot take the geometry */
#define VM_EXIT_TIMEOUT 124 /* --timeout reached */
#define VM_EXIT_FAILED 125  /* failed before COMMAND could run */

struct vm_options {
  const char *kernel;  /* --kernel: an image, or NULL */
  const char *modules; /* --modules: its modules, or NULL */
  const char *kernel_debs[VM_MAX_KERNEL_DEBS]; /* --kernel-deb, repeatable */
  unsigned nr_kernel_debs;
  const char *kernel_release; /* --kernel-release: lbs | 6.12 */
  const char *attach;         /* virtio | nbd */
  const char *accel;          /* auto | kvm | tcg */
  const char *memory;         /* QEMU -m */
  const char *plugin;
  const char *nbdkit;
  unsigned disks, connections, timeout_s;
  bool verbose;
  char **params;
  int nr_params;
  char *command; /* the shell command line the guest runs */
};

struct vm_disk {
  char sock[PATH_MAX];
  char pidfile[PATH_MAX];
  pid_t server_pid;
};

struct vm {
  struct vm_options opt;
  bool kernel_release_given; /* not the default */
  struct lb_geometry geom;
  uint32_t logical, physical; /* what the export advertises */
  char workdir[PATH_MAX / 2]; /* leaves room for file names */
  char kernel[PATH_MAX];      /* the image QEMU boots */
  char moddir[PATH_MAX];      /* its (usr/)lib/modules/VERSION, or "" */
  char initrd[PATH_MAX];
  char serial_log[PATH_MAX];
  char status_file[PATH_MAX];
  struct vm_disk disks[VM_MAX_DISKS];
  unsigned nr_disks; /* disks whose server was started */
  pid_t qemu_pid;
  bool kvm;
};

/* vm-step.c: messages shown with --verbose. */
void vm_verbose (const struct vm *vm, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

/* vm-step.c: where one of our own files is (largeblock-vm-helper,
 * largeblock-vm-init, largeblock-run): next to largeblock-vm (the
 * scripts, in a build tree; every program, installed), else in the
 * installed libexec directory.  0, or -1 if neither has it.
 */
int vm_find_own_file (const char *name, char *path, size_t len);

/* vm-step.c: run largeblock-vm-helper with args (NULL-terminated),
 * keeping the end of its stdout in out (if outlen > 0); a signal stops
 * it.  0 if it exited 0, else -1 (it said why).
 */
int vm_run_helper (const struct vm *vm, char *const args[], char *out,
                   size_t outlen);

/* vm-step.c: the cache directory (largeblock-vm-helper keeps what it
 * fetches and packs there): $LARGEBLOCK_VM_CACHE, else
 * $XDG_CACHE_HOME/largeblock-vm, else ~/.cache/largeblock-vm.
 */
void vm_cache_dir (char *dir, size_t len);

/* vm-kernel.c: fill vm->kernel and vm->moddir from the options. */
int vm_find_kernel (struct vm *vm);

/* vm-guest.c: write the guest's configuration and build vm->initrd. */
int vm_build_initramfs (struct vm *vm);

/* vm-qemu.c: decide vm->kvm from --accel (probing when auto). */
int vm_choose_accel (struct vm *vm);

/* vm-qemu.c: boot the guest, relay its output, wait; returns the exit
 * status largeblock-vm should have.
 */
int vm_run_guest (struct vm *vm);

#endif /* LARGEBLOCK_VM_H */
