/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-vm: how a step runs and says what it does -- the messages
 * --verbose shows, where the program's own files are (the helper, the
 * guest's /init, the programs it copies into the guest), and running
 * largeblock-vm-helper, which does the file work (apt, cpio, the
 * cache) for vm-kernel.c and vm-guest.c.
 *
 * The helper runs in a process group of its own and a caught signal
 * stops it (proc.h).  No state of its own; single-threaded.
 */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "vm.h"

void
vm_verbose (const struct vm *vm, const char *fmt, ...)
{
  va_list ap;

  if (!vm->opt.verbose)
    return;
  va_start (ap, fmt);
  fprintf (stderr, VM_PROG ": ");
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
}

/* Next to our own executable (a build tree), else where make install
 * put it.
 */
int
vm_find_own_file (const char *name, char *path, size_t len)
{
  char exe[PATH_MAX];
  ssize_t n = readlink ("/proc/self/exe", exe, sizeof exe - 1);
  char *slash;

  if (n > 0) {
    exe[n] = '\0';
    slash = strrchr (exe, '/');
    if (slash) {
      *slash = '\0';
      snprintf (path, len, "%s/%s", exe, name);
      if (access (path, R_OK) == 0)
        return 0;
    }
  }
  snprintf (path, len, "%s/%s", LARGEBLOCK_PKGLIBEXECDIR, name);
  return access (path, R_OK) == 0 ? 0 : -1;
}

int
vm_run_helper (const struct vm *vm, char *const args[], char *out,
               size_t outlen)
{
  char helper[PATH_MAX], how[64];
  char *argv[80];
  struct proc_spec spec = { .argv = argv,
                            .own_group = true,
                            .out = outlen ? PROC_PIPE : PROC_DEVNULL };
  int fd = -1, status, n = 0;
  pid_t pid;

  if (vm_find_own_file ("largeblock-vm-helper", helper, sizeof helper) == -1) {
    fprintf (stderr, VM_PROG ": cannot find largeblock-vm-helper in %s\n",
             LARGEBLOCK_PKGLIBEXECDIR);
    return -1;
  }
  argv[n++] = helper;
  for (int i = 0; args[i] && n < 79; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  vm_verbose (vm, "running largeblock-vm-helper %s", args[0]);
  if (proc_spawn (&spec, &pid, outlen ? &fd : NULL, NULL) == -1)
    return -1;
  status = proc_wait (&pid, PROC_STOP, fd, out, outlen);
  if (proc_exited_zero (status))
    return 0;
  if (status != -1 && !proc_caught_signal () &&
      !(WIFEXITED (status) && WEXITSTATUS (status) == 1))
    fprintf (stderr, VM_PROG ": largeblock-vm-helper %s %s\n", args[0],
             proc_status_text (status, how, sizeof how));
  return -1;
}

void
vm_cache_dir (char *dir, size_t len)
{
  const char *xdg = getenv ("XDG_CACHE_HOME"), *home = getenv ("HOME");

  if (getenv ("LARGEBLOCK_VM_CACHE"))
    snprintf (dir, len, "%s", getenv ("LARGEBLOCK_VM_CACHE"));
  else if (xdg && *xdg)
    snprintf (dir, len, "%s/largeblock-vm", xdg);
  else
    snprintf (dir, len, "%s/.cache/largeblock-vm", home ? home : "/tmp");
}
