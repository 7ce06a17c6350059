/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-vm: boot a guest kernel under QEMU with largeblock disks
 * attached, run a command in it, and always tear down.
 *
 * This file reads the options and sequences the run: check what can be
 * checked before anything exists, start one server per disk, ask the
 * first one what block sizes it advertises, find the kernel
 * (vm-kernel.c), pack the guest (vm-guest.c), boot it and wait
 * (vm-qemu.c), then stop every QEMU and nbdkit it started, by PID, and
 * remove its private directory -- on success, failure, timeout, or
 * SIGINT, SIGTERM or SIGHUP, which arrive only where proc.h waits.
 *
 * Single-threaded; the whole state is one struct vm (vm.h).
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

#include "cmdline.h"
#include "plugin-choice.h"
#include "proc.h"
#include "serve.h"
#include "vm.h"

static void
usage (FILE *fp)
{
  fprintf (fp,
           "usage: " VM_PROG " [--kernel-release=lbs|6.12 | "
           "--kernel=IMAGE [--modules=DIR] |\n"
           "       --kernel-deb=PKG.deb ...]\n"
           "       [--attach=virtio|nbd] [--connections=N] [--disks=N]\n"
           "       [--accel=auto|kvm|tcg] [--memory=SIZE] "
           "[--timeout=SECONDS]\n"
           "       [--plugin=PATH] [--verbose] [PARAM=VALUE ...] -- "
           "COMMAND\n"
           "       " VM_PROG " --help | --version\n");
}

/* COMMAND's words joined by spaces: the guest runs it with bash -c, so
 * "-- 'cat /sys/...'" and "-- cat /sys/..." do the same.
 */
static int
join_command (struct vm *vm, char **words, int n)
{
  size_t len = 1;

  for (int i = 0; i < n; i++)
    len += strlen (words[i]) + 1;
  vm->opt.command = calloc (1, len + 1);
  if (vm->opt.command == NULL) {
    perror (VM_PROG);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    strcat (vm->opt.command, words[i]);
    strcat (vm->opt.command, i + 1 < n ? " " : "\n");
  }
  return 0;
}

static int
add_kernel_deb (struct vm *vm, const char *deb)
{
  if (vm->opt.nr_kernel_debs == VM_MAX_KERNEL_DEBS) {
    fprintf (stderr, VM_PROG ": --kernel-deb=%s: at most %d packages\n", deb,
             VM_MAX_KERNEL_DEBS);
    return -1;
  }
  vm->opt.kernel_debs[vm->opt.nr_kernel_debs++] = deb;
  return 0;
}

static int
check_choice (const char *opt, const char *value, const char *a, const char *b,
              const char *c)
{
  if (strcmp (value, a) == 0 || strcmp (value, b) == 0 ||
      (c && strcmp (value, c) == 0))
    return 0;
  fprintf (stderr, VM_PROG ": --%s=%s: must be %s%s%s or %s\n", opt, value, a,
           c ? ", " : "", c ? b : "", c ? c : b);
  return -1;
}

static int
check_options (struct vm *vm)
{
  if (check_choice ("attach", vm->opt.attach, "virtio", "nbd", NULL) == -1 ||
      check_choice ("accel", vm->opt.accel, "auto", "kvm", "tcg") == -1)
    return -1;
  if (check_choice ("kernel-release", vm->opt.kernel_release, "lbs", "6.12",
                    NULL) == -1)
    return -1;
  if (vm->opt.nr_kernel_debs && (vm->opt.kernel || vm->opt.modules)) {
    fprintf (stderr,
             VM_PROG ": --kernel-deb cannot be combined with "
                     "--kernel or --modules\n");
    return -1;
  }
  if (vm->kernel_release_given && (vm->opt.nr_kernel_debs || vm->opt.kernel)) {
    fprintf (stderr,
             VM_PROG ": --kernel-release=%s chooses a kernel to fetch: "
                     "not with --kernel or --kernel-deb\n",
             vm->opt.kernel_release);
    return -1;
  }
  if (vm->opt.modules && !vm->opt.kernel) {
    fprintf (stderr, VM_PROG ": --modules needs --kernel\n");
    return -1;
  }
  if (vm->opt.connections > 1 && strcmp (vm->opt.attach, "nbd") != 0) {
    fprintf (stderr,
             VM_PROG ": --connections=%u needs --attach=nbd "
                     "(QEMU's NBD client makes one)\n",
             vm->opt.connections);
    return -1;
  }
  if (vm->opt.command == NULL) {
    fprintf (stderr, VM_PROG ": no COMMAND after --\n");
    usage (stderr);
    return -1;
  }
  return 0;
}

static int
parse_options (struct vm *vm, int argc, char **argv)
{
  enum {
    O_ACCEL = 256,
    O_ATTACH,
    O_CONNECTIONS,
    O_DISKS,
    O_KERNEL,
    O_KERNEL_DEB,
    O_KERNEL_RELEASE,
    O_MEMORY,
    O_MODULES,
    O_PLUGIN,
    O_TIMEOUT,
    O_VERSION
  };
  static const struct option longopts[] = {
    { "accel", required_argument, NULL, O_ACCEL },
    { "attach", required_argument, NULL, O_ATTACH },
    { "connections", required_argument, NULL, O_CONNECTIONS },
    { "disks", required_argument, NULL, O_DISKS },
    { "help", no_argument, NULL, 'h' },
    { "kernel", required_argument, NULL, O_KERNEL },
    { "kernel-deb", required_argument, NULL, O_KERNEL_DEB },
    { "kernel-release", required_argument, NULL, O_KERNEL_RELEASE },
    { "memory", required_argument, NULL, O_MEMORY },
    { "modules", required_argument, NULL, O_MODULES },
    { "plugin", required_argument, NULL, O_PLUGIN },
    { "timeout", required_argument, NULL, O_TIMEOUT },
    { "verbose", no_argument, NULL, 'v' },
    { "version", no_argument, NULL, O_VERSION },
    { NULL, 0, NULL, 0 }
  };
  int c, r = 0, first_word;
  char from[64], err[128];

  if (proc_read_stop_timeout (err, sizeof err) == -1) {
    fprintf (stderr, VM_PROG ": %s\n", err);
    return -1;
  }
  while (r == 0 &&
         (c = getopt_long (argc, argv, "+hv", longopts, NULL)) != -1) {
    switch (c) {
    case O_ACCEL: vm->opt.accel = optarg; break;
    case O_ATTACH: vm->opt.attach = optarg; break;
    case O_KERNEL: vm->opt.kernel = optarg; break;
    case O_KERNEL_DEB: r = add_kernel_deb (vm, optarg); break;
    case O_KERNEL_RELEASE:
      vm->opt.kernel_release = optarg;
      vm->kernel_release_given = true;
      break;
    case O_MEMORY: vm->opt.memory = optarg; break;
    case O_MODULES: vm->opt.modules = optarg; break;
    case O_PLUGIN: vm->opt.plugin = optarg; break;
    case 'v': vm->opt.verbose = true; break;
    case 'h': usage (stdout); exit (EXIT_SUCCESS);
    case O_VERSION:
      printf (VM_PROG " " PACKAGE_VERSION "\n");
      exit (EXIT_SUCCESS);
    case O_CONNECTIONS:
      r = cmdline_count (VM_PROG, "connections", optarg, VM_MAX_CONNECTIONS,
                         &vm->opt.connections);
      break;
    case O_DISKS:
      r = cmdline_count (VM_PROG, "disks", optarg, VM_MAX_DISKS,
                         &vm->opt.disks);
      break;
    case O_TIMEOUT:
      r = cmdline_count (VM_PROG, "timeout", optarg, 7 * 24 * 3600,
                         &vm->opt.timeout_s);
      break;
    default: usage (stderr); return -1;
    }
  }
  if (r == -1)
    return -1;
  first_word = cmdline_split (argc, argv, optind, &vm->opt.params,
                              &vm->opt.nr_params);
  if (first_word < argc &&
      join_command (vm, &argv[first_word], argc - first_word) == -1)
    return -1;
  vm->opt.plugin = plugin_choose (vm->opt.plugin, VM_PROG, from, sizeof from);
  vm_verbose (vm, "plugin %s (%s)", vm->opt.plugin, from);
  vm->opt.nbdkit = cmdline_nbdkit ();
  return check_options (vm);
}

/* ---- servers ---- */

static int
start_servers (struct vm *vm)
{
  char *argv[8 + 64];

  for (unsigned i = 0; i < vm->opt.disks; i++) {
    struct vm_disk *d = &vm->disks[i];

    snprintf (d->sock, sizeof d->sock, "%s/disk%u.sock", vm->workdir, i);
    snprintf (d->pidfile, sizeof d->pidfile, "%s/disk%u.pid", vm->workdir, i);
    if (serve_nbdkit_argv (argv, 8 + 64, vm->opt.nbdkit, d->sock, d->pidfile,
                           vm->opt.plugin, vm->opt.params,
                           vm->opt.nr_params) == -1) {
      fprintf (stderr, VM_PROG ": too many PARAM=VALUE arguments\n");
      return -1;
    }
    vm->nr_disks = i + 1;
    vm_verbose (vm, "starting %s on %s", vm->opt.nbdkit, d->sock);
    if (start_daemon (vm->opt.verbose, "nbdkit", argv, d->pidfile, true,
                      &d->server_pid) == -1)
      return -1;
  }
  return 0;
}

/* The block sizes the guest must see are what the export advertises,
 * not what the user typed: ask the first server.
 */
static int
read_advertised_geometry (struct vm *vm)
{
  struct nbd_handle *h = nbd_create ();
  int64_t minimum = -1, preferred = -1;

  if (h && nbd_connect_unix (h, vm->disks[0].sock) == 0) {
    minimum = nbd_get_block_size (h, LIBNBD_SIZE_MINIMUM);
    preferred = nbd_get_block_size (h, LIBNBD_SIZE_PREFERRED);
    nbd_shutdown (h, 0);
  }
  if (minimum <= 0 || preferred <= 0) {
    fprintf (stderr,
             VM_PROG ": cannot read the block sizes %s advertises: %s\n",
             vm->disks[0].sock, h ? nbd_get_error () : "out of memory");
    nbd_close (h);
    return -1;
  }
  nbd_close (h);
  vm->logical = minimum;
  vm->physical = preferred;
  vm_verbose (vm, "the export advertises logical %u, physical %u", vm->logical,
              vm->physical);
  return 0;
}

/* ---- private directory ---- */

static int
make_workdir (struct vm *vm)
{
  const char *tmp = getenv ("TMPDIR");

  snprintf (vm->workdir, sizeof vm->workdir, "%s/largeblock-vm.XXXXXX",
            tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp (vm->workdir) == NULL) {
    fprintf (stderr, VM_PROG ": mkdtemp %s: %m\n", vm->workdir);
    vm->workdir[0] = '\0';
    return -1;
  }
  snprintf (vm->serial_log, sizeof vm->serial_log, "%s/serial.log",
            vm->workdir);
  snprintf (vm->status_file, sizeof vm->status_file, "%s/status", vm->workdir);
  return 0;
}

static int
remove_entry (const char *path, const struct stat *st, int type,
              struct FTW *ftw)
{
  if (remove (path) == -1 && errno != ENOENT)
    fprintf (stderr, VM_PROG ": cannot remove %s: %m\n", path);
  return 0;
}

static void
teardown (struct vm *vm)
{
  proc_stop ("qemu", &vm->qemu_pid);
  for (unsigned i = vm->nr_disks; i-- > 0;)
    proc_stop ("nbdkit", &vm->disks[i].server_pid);
  if (vm->workdir[0])
    nftw (vm->workdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int
run (struct vm *vm)
{
  if (make_workdir (vm) == -1 || vm_find_kernel (vm) == -1 ||
      start_servers (vm) == -1 || read_advertised_geometry (vm) == -1 ||
      vm_build_initramfs (vm) == -1 || vm_choose_accel (vm) == -1)
    return VM_EXIT_FAILED;
  if (proc_caught_signal ())
    return VM_EXIT_FAILED;
  return vm_run_guest (vm);
}

int
main (int argc, char **argv)
{
  static struct vm vm = { .opt = { .kernel_release = "lbs",
                                   .attach = "virtio",
                                   .accel = "auto",
                                   .memory = "1G",
                                   .disks = 1,
                                   .connections = 1,
                                   .timeout_s = 600 } };
  int status;

  /* Before anything can start a child: from here on, signals arrive
   * only where proc.h waits. */
  proc_init ();
  if (parse_options (&vm, argc, argv) == -1 ||
      serve_check_params (vm.opt.params, vm.opt.nr_params, &vm.geom, NULL) ==
        -1)
    return VM_EXIT_FAILED;
  status = run (&vm);
  if (proc_caught_signal ()) {
    fprintf (stderr, VM_PROG ": caught signal %d, tearing down\n",
             proc_caught_signal ());
    status = 128 + proc_caught_signal ();
  }
  teardown (&vm);
  free (vm.opt.command);
  return status;
}
