/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-vm: QEMU -- the command line that shows the guest its
 * disks, the choice between KVM and TCG, and reading what the guest
 * reported once it powered off.
 *
 * The guest has no network, ever.  Its disks reach the host's servers
 * through QEMU's own NBD client (virtio-blk, with the export's logical
 * and physical block sizes) or through virtio-serial ports that QEMU
 * connects to the servers' sockets (the guest's nbd driver, one port per
 * connection).  Its console goes to the serial log, its status lines to
 * a second serial port's file, and the command's stdout and stderr to
 * two virtio consoles that QEMU writes to its own stdout and stderr:
 * pipes to us, which we relay.
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel-version.h"
#include "proc.h"
#include "vm.h"

#define QEMU "qemu-system-x86_64"
#define QBOOT "/usr/share/qemu/qboot.rom"
#define PROBE_TIMEOUT_MS 20000
#define MAX_ARGS 160
#define SERIAL_TAIL_LINES 20

/* argv under construction; strings live in its own pool. */
struct qemu_cmd {
  char *argv[MAX_ARGS];
  int argc;
  char pool[16384];
  size_t used;
};

static void __attribute__ ((format (printf, 2, 3)))
add (struct qemu_cmd *q, const char *fmt, ...)
{
  va_list ap;
  char *s = q->pool + q->used;
  int n;

  if (q->argc >= MAX_ARGS - 1 || q->used >= sizeof q->pool)
    return; /* caught by the overflow check in build_command */
  va_start (ap, fmt);
  n = vsnprintf (s, sizeof q->pool - q->used, fmt, ap);
  va_end (ap);
  if (n < 0 || (size_t) n >= sizeof q->pool - q->used) {
    q->used = sizeof q->pool;
    return;
  }
  q->used += n + 1;
  q->argv[q->argc++] = s;
  q->argv[q->argc] = NULL;
}

static void
add_machine (struct qemu_cmd *q, const struct vm *vm, bool probe)
{
  add (q, QEMU);
  add (q, "-accel");
  /* One TCG thread: with thread=multi, QEMU 7.2 let the guest run code
   * the kernel was live-patching (a boot panic in about 1 in 15). */
  add (q, vm->kvm ? "kvm" : "tcg,thread=single");
  add (q, "-cpu");
  add (q, vm->kvm ? "host" : "max");
  add (q, "-smp");
  add (q, "2");
  add (q, "-m");
  add (q, "%s", vm->opt.memory);
  add (q, "-machine");
  add (q, "q35");
  if (access (QBOOT, R_OK) == 0) { /* boots in a fraction of SeaBIOS's time */
    add (q, "-bios");
    add (q, QBOOT);
  }
  add (q, "-nodefaults");
  add (q, "-no-user-config");
  add (q, "-nic");
  add (q, "none");
  add (q, "-display");
  add (q, "none");
  add (q, "-no-reboot");
  add (q, "-kernel");
  add (q, "%s", vm->kernel);
  add (q, "-initrd");
  add (q, "%s", vm->initrd);
  add (q, "-append");
  add (q, "console=ttyS0 panic=-1 %s%s", vm->opt.verbose ? "" : "quiet",
       probe ? " lbvm.probe" : "");
  add (q, "-chardev");
  add (q, "file,id=console,path=%s", vm->serial_log);
  add (q, "-serial");
  add (q, "chardev:console");
  add (q, "-chardev");
  add (q, "file,id=status,path=%s", vm->status_file);
  add (q, "-serial");
  add (q, "chardev:status");
}

/* /dev/stdout and /dev/stderr are QEMU's own: the pipes we read. */
static void
add_output_consoles (struct qemu_cmd *q)
{
  add (q, "-device");
  add (q, "virtio-serial-pci,id=vser");
  add (q, "-chardev");
  add (q, "file,id=out,path=/dev/stdout");
  add (q, "-device");
  add (q, "virtconsole,chardev=out,name=stdout");
  add (q, "-chardev");
  add (q, "file,id=err,path=/dev/stderr");
  add (q, "-device");
  add (q, "virtconsole,chardev=err,name=stderr");
}

static void
add_disks (struct qemu_cmd *q, const struct vm *vm)
{
  bool nbd = strcmp (vm->opt.attach, "nbd") == 0;

  for (unsigned i = 0; i < vm->nr_disks; i++) {
    const char *sock = vm->disks[i].sock;

    if (!nbd) {
      add (q, "-blockdev");
      add (q,
           "driver=nbd,node-name=disk%u,server.type=unix,server.path=%s,"
           "discard=unmap",
           i, sock);
      add (q, "-device");
      add (q,
           "virtio-blk-pci,drive=disk%u,logical_block_size=%u,"
           "physical_block_size=%u",
           i, vm->logical, vm->physical);
      continue;
    }
    for (unsigned c = 0; c < vm->opt.connections; c++) {
      add (q, "-chardev");
      add (q, "socket,id=nbd%u.%u,path=%s", i, c, sock);
      add (q, "-device");
      add (q, "virtserialport,chardev=nbd%u.%u,name=nbd%u.%u", i, c, i, c);
    }
  }
}

static int
build_command (struct qemu_cmd *q, const struct vm *vm, bool probe)
{
  q->argc = 0;
  q->used = 0;
  add_machine (q, vm, probe);
  if (!probe) {
    add_output_consoles (q);
    add_disks (q, vm);
  }
  if (q->argc >= MAX_ARGS - 1 || q->used >= sizeof q->pool) {
    fprintf (stderr, VM_PROG ": the QEMU command line is too long\n");
    return -1;
  }
  if (vm->opt.verbose) {
    fprintf (stderr, VM_PROG ": running");
    for (int i = 0; i < q->argc; i++)
      fprintf (stderr, " %s", q->argv[i]);
    fputc ('\n', stderr);
  }
  return 0;
}

/* ---- what the guest said ---- */

struct guest_report {
  bool probed, exited;
  int exit_status;
  char fail[1024];    /* LBVM-FAIL's reason */
  char refused[1024]; /* LBVM-REFUSED's fields */
  char detach_fail[1024];
};

static void
chomp (char *s)
{
  size_t n = strlen (s);

  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
    s[--n] = '\0';
}

static void
read_report (const struct vm *vm, struct guest_report *r)
{
  FILE *fp = fopen (vm->status_file, "r");
  char line[1024];

  memset (r, 0, sizeof *r);
  while (fp && fgets (line, sizeof line, fp)) {
    chomp (line);
    if (strcmp (line, "LBVM-PROBE") == 0)
      r->probed = true;
    else if (sscanf (line, "LBVM-EXIT %d", &r->exit_status) == 1)
      r->exited = true;
    else if (strncmp (line, "LBVM-FAIL ", 10) == 0)
      snprintf (r->fail, sizeof r->fail, "%s", line + 10);
    else if (strncmp (line, "LBVM-REFUSED ", 13) == 0)
      snprintf (r->refused, sizeof r->refused, "%s", line + 13);
    else if (strncmp (line, "LBVM-DETACH-FAIL ", 17) == 0)
      snprintf (r->detach_fail, sizeof r->detach_fail, "%s", line + 17);
  }
  if (fp)
    fclose (fp);
}

static void
print_serial_tail (const struct vm *vm)
{
  char lines[SERIAL_TAIL_LINES][256], buf[256];
  FILE *fp = fopen (vm->serial_log, "r");
  unsigned n = 0;

  if (fp == NULL)
    return;
  while (fgets (buf, sizeof buf, fp)) {
    chomp (buf);
    snprintf (lines[n % SERIAL_TAIL_LINES], sizeof lines[0], "%s", buf);
    n++;
  }
  fclose (fp);
  if (n == 0) {
    fprintf (stderr, VM_PROG ": the guest's serial log is empty\n");
    return;
  }
  fprintf (stderr, VM_PROG ": the end of the guest's serial log:\n");
  for (unsigned i = n > SERIAL_TAIL_LINES ? n - SERIAL_TAIL_LINES : 0; i < n;
       i++)
    fprintf (stderr, "  %s\n", lines[i % SERIAL_TAIL_LINES]);
}

/* The kernel's "Kernel panic - not syncing: ..." line, if it panicked:
 * a reason worth more than QEMU's exit status.
 */
static bool
find_panic (const struct vm *vm, char *line, size_t len)
{
  char buf[256], *p;
  FILE *fp = fopen (vm->serial_log, "r");
  bool found = false;

  while (fp && !found && fgets (buf, sizeof buf, fp)) {
    if ((p = strstr (buf, "Kernel panic")) != NULL) {
      chomp (p);
      snprintf (line, len, "%s", p);
      found = true;
    }
  }
  if (fp)
    fclose (fp);
  return found;
}

/* The guest kernel would not take the geometry: say which and why. */
static void
explain_refusal (const struct vm *vm, const char *fields)
{
  char release[128] = "?", dev[32] = "?";
  unsigned want_l = 0, want_p = 0, got_l = 0, got_p = 0;

  sscanf (fields, "%127s %31s %u %u %u %u", release, dev, &want_l, &want_p,
          &got_l, &got_p);
  if (want_l > 4096 && kernel_release_older_than (release, 6, 15))
    fprintf (stderr,
             VM_PROG ": guest kernel %s refuses a %u-byte logical block "
                     "size (needs 6.15)\n",
             release, want_l);
  else if (got_l == 0)
    fprintf (stderr,
             VM_PROG ": guest kernel %s did not create /dev/%s "
                     "(logical %u, physical %u; --attach=%s)\n",
             release, dev, want_l, want_p, vm->opt.attach);
  else
    fprintf (stderr,
             VM_PROG ": guest kernel %s gave /dev/%s logical %u, physical "
                     "%u; the export has logical %u, physical %u\n",
             release, dev, got_l, got_p, want_l, want_p);
}

/* The exit status, from QEMU's wait status and the guest's report. */
static int
outcome (const struct vm *vm, int status, bool timed_out)
{
  struct guest_report r;
  char how[64], panic[200];

  if (proc_caught_signal ())
    return 128 + proc_caught_signal ();
  read_report (vm, &r);
  if (timed_out) {
    fprintf (stderr, VM_PROG ": --timeout=%u reached; the guest was stopped\n",
             vm->opt.timeout_s);
    print_serial_tail (vm);
    return VM_EXIT_TIMEOUT;
  }
  if (r.refused[0]) {
    explain_refusal (vm, r.refused);
    return VM_EXIT_REFUSED;
  }
  if (r.fail[0]) {
    fprintf (stderr, VM_PROG ": in the guest: %s\n", r.fail);
    print_serial_tail (vm);
    return VM_EXIT_FAILED;
  }
  if (!r.exited && find_panic (vm, panic, sizeof panic)) {
    fprintf (stderr, VM_PROG ": the guest kernel panicked: %s\n", panic);
    print_serial_tail (vm);
    return VM_EXIT_FAILED;
  }
  if (!r.exited) {
    fprintf (stderr,
             VM_PROG ": the guest ended before the command did (%s %s)\n",
             QEMU, proc_status_text (status, how, sizeof how));
    print_serial_tail (vm);
    return VM_EXIT_FAILED;
  }
  if (r.detach_fail[0]) {
    fprintf (stderr,
             VM_PROG ": in the guest: nbd-client -d left /dev/%s connected\n",
             r.detach_fail);
    return r.exit_status ? r.exit_status : VM_EXIT_FAILED;
  }
  return r.exit_status;
}

/* Start QEMU and wait for it, relaying the guest's output. */
static int
boot (struct vm *vm, bool probe, int timeout_ms, bool *timed_out)
{
  struct qemu_cmd *q = malloc (sizeof *q);
  /* A probe's QEMU may complain about KVM: that is the answer, not
   * something to show. */
  enum proc_sink sink = probe ? PROC_DEVNULL : PROC_PIPE;
  struct proc_spec spec = { .own_group = true, .out = sink, .err = sink };
  int out_fd = -1, err_fd = -1, status = -1;

  if (q == NULL || build_command (q, vm, probe) == -1) {
    free (q);
    return -1;
  }
  unlink (vm->status_file);
  unlink (vm->serial_log);
  spec.argv = q->argv;
  if (proc_spawn (&spec, &vm->qemu_pid, &out_fd, &err_fd) == 0)
    status = proc_wait_relay (&vm->qemu_pid, PROC_STOP, out_fd, err_fd,
                              timeout_ms, timed_out);
  free (q);
  return status;
}

int
vm_run_guest (struct vm *vm)
{
  bool timed_out = false;
  int status = boot (vm, false, vm->opt.timeout_s * 1000, &timed_out);

  if (status == -1 && !proc_caught_signal ())
    return VM_EXIT_FAILED;
  return outcome (vm, status, timed_out);
}

/* KVM only when a guest really boots with it: where /dev/kvm exists but
 * cannot run a stock kernel, QEMU stops with an internal error.
 */
static bool
kvm_boots (struct vm *vm)
{
  struct guest_report r;
  bool timed_out = false;
  int status;

  if (access ("/dev/kvm", R_OK | W_OK) == -1) {
    vm_verbose (vm, "--accel=auto: /dev/kvm: %s; using TCG", strerror (errno));
    return false;
  }
  vm->kvm = true;
  status = boot (vm, true, PROBE_TIMEOUT_MS, &timed_out);
  read_report (vm, &r);
  vm->kvm = r.probed && proc_exited_zero (status);
  vm_verbose (vm, "--accel=auto: a KVM probe boot %s; using %s",
              vm->kvm ? "worked" : "failed", vm->kvm ? "KVM" : "TCG");
  return vm->kvm;
}

int
vm_choose_accel (struct vm *vm)
{
  if (strcmp (vm->opt.accel, "kvm") == 0)
    vm->kvm = true;
  else if (strcmp (vm->opt.accel, "tcg") == 0)
    vm->kvm = false;
  else
    vm->kvm = kvm_boots (vm);
  return proc_caught_signal () ? -1 : 0;
}
