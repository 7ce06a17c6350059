/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: how one set-up or teardown step runs a helper.
 *
 * Set-up helpers are stopped by a caught signal (the run then tears
 * down); teardown helpers run to the end whatever arrives.  Helpers and
 * daemons get a process group of their own, so a terminal's Ctrl-C does
 * not reach them behind largeblock-run's back.  No state of its own.
 */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>

#include "kstate.h"
#include "proc.h"
#include "run.h"

void
verbose (const struct run *run, const char *fmt, ...)
{
  va_list ap;

  if (!run->opt.verbose)
    return;
  va_start (ap, fmt);
  fprintf (stderr, PROG ": ");
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
}

static void
show_command (const struct run *run, char *const argv[])
{
  if (!run->opt.verbose)
    return;
  fprintf (stderr, PROG ": running");
  for (int i = 0; argv[i]; i++)
    fprintf (stderr, " %s", argv[i]);
  fputc ('\n', stderr);
}

static int
run_helper (struct run *run, char *const argv[], enum proc_on_signal on_signal)
{
  struct proc_spec spec = {
    .argv = argv,
    .own_group = true,
    .out = run->opt.verbose ? PROC_INHERIT : PROC_DEVNULL,
  };
  char how[64];
  int status;
  pid_t pid;

  show_command (run, argv);
  if (proc_spawn (&spec, &pid, NULL, NULL) == -1)
    return -1;
  status = proc_wait (&pid, on_signal, -1, NULL, 0);
  if (proc_exited_zero (status))
    return 0;
  /* A set-up step a caught signal ended: main says why we stop. */
  if (status != -1 && !(on_signal == PROC_STOP && proc_caught_signal ()))
    fprintf (stderr, PROG ": %s %s\n", argv[0],
             proc_status_text (status, how, sizeof how));
  return -1;
}

int
run_step (struct run *run, char *const argv[])
{
  return run_helper (run, argv, PROC_STOP);
}

int
run_teardown_step (struct run *run, char *const argv[])
{
  return run_helper (run, argv, PROC_FINISH);
}

int
run_step_capture (struct run *run, char *const argv[], char *out,
                  size_t outlen)
{
  struct proc_spec spec = { .argv = argv,
                            .own_group = true,
                            .out = PROC_PIPE };
  int fd;
  pid_t pid;

  out[0] = '\0';
  show_command (run, argv);
  if (proc_spawn (&spec, &pid, &fd, NULL) == -1)
    return -1;
  return proc_wait (&pid, PROC_STOP, fd, out, outlen);
}

/* The user's command stays in our process group, so that it keeps the
 * terminal; a signal we catch is forwarded to it.
 */
int
run_user_command (struct run *run, char *const argv[])
{
  struct proc_spec spec = { .argv = argv };
  int status;
  pid_t pid;

  verbose (run, "running %s", argv[0]);
  if (proc_spawn (&spec, &pid, NULL, NULL) == -1)
    return 1;
  status = proc_wait (&pid, PROC_FORWARD, -1, NULL, 0);
  if (proc_caught_signal ())
    return 128 + proc_caught_signal ();
  if (status == -1)
    return 1;
  if (WIFSIGNALED (status))
    return 128 + WTERMSIG (status);
  return WEXITSTATUS (status);
}

int
check_logical_blksize (const struct run *run, const char *dev)
{
  char path[PATH_MAX];
  unsigned long got = 0;

  if (kstate_read_block_attr (dev, "queue/logical_block_size", &got) == -1) {
    kstate_block_attr_path (path, sizeof path, dev,
                            "queue/logical_block_size");
    fprintf (stderr, PROG ": cannot read %s: %m\n", path);
    return -1;
  }
  if (got != run->geom.logical_bytes) {
    fprintf (stderr,
             PROG ": %s: kernel logical block size is %lu, "
                  "logical-blksize is %u\n",
             dev, got, run->geom.logical_bytes);
    return -1;
  }
  return 0;
}
