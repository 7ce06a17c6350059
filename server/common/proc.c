/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: the process layer (see proc.h for
 * what it owns and its signal rules).
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cap-ng.h>

#include "proc.h"

#define STOP_GRACE_MS 1000 /* a set-up helper that outlives its signal */
#define RESEND_TERM_MS 500 /* a daemon may not listen yet: say it again */
#define WAKE_MS 200 /* belt and braces: look again at least this often */

static volatile sig_atomic_t caught_signal;
static sigset_t handled;       /* blocked except inside wait_event */
static sigset_t while_waiting; /* the mask inside wait_event */
static bool initialised;
static int grace_ms = PROC_GRACE_MS_DEFAULT;

static void
on_terminating_signal (int sig)
{
  if (caught_signal == 0)
    caught_signal = sig;
}

static void
on_child (int sig)
{
  /* Only to interrupt wait_event. */
}

void
proc_init (void)
{
  struct sigaction sa;

  if (initialised)
    return;
  sigemptyset (&handled);
  sigaddset (&handled, SIGINT);
  sigaddset (&handled, SIGTERM);
  sigaddset (&handled, SIGHUP);
  sigaddset (&handled, SIGCHLD);
  sigprocmask (SIG_BLOCK, &handled, &while_waiting);
  sigdelset (&while_waiting, SIGINT);
  sigdelset (&while_waiting, SIGTERM);
  sigdelset (&while_waiting, SIGHUP);
  sigdelset (&while_waiting, SIGCHLD);

  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_terminating_signal;
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction (SIGCHLD, &sa, NULL);
  signal (SIGPIPE, SIG_IGN);
  initialised = true;
}

/* Let the handlers see what is pending now: a signal the kernel holds
 * for us (blocked) is as caught as one a wait let in, so a step that
 * ends before its next wait cannot hide it.  Unblocking delivers every
 * pending one before sigprocmask returns.
 */
static void
take_pending_signals (void)
{
  sigset_t pending, saved;

  if (!initialised || sigpending (&pending) == -1)
    return;
  if (!sigismember (&pending, SIGINT) && !sigismember (&pending, SIGTERM) &&
      !sigismember (&pending, SIGHUP))
    return;
  sigprocmask (SIG_SETMASK, &while_waiting, &saved);
  sigprocmask (SIG_SETMASK, &saved, NULL);
}

int
proc_caught_signal (void)
{
  take_pending_signals ();
  return caught_signal;
}

void
proc_forget_signal (void)
{
  caught_signal = 0;
}

static int64_t
now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The one place the program waits, and the only place its signals are
 * delivered: until one of fds[0..nfds) is readable, timeout_ms (-1: for
 * ever) passed, or a signal (including SIGCHLD) arrived.  Negative fds
 * are ignored.
 */
static void
wait_events (const int *fds, int nfds, int timeout_ms)
{
  struct pollfd pfd[2];
  struct timespec ts, *tsp = NULL;

  for (int i = 0; i < nfds; i++)
    pfd[i] = (struct pollfd) { .fd = fds[i], .events = POLLIN };
  if (timeout_ms >= 0) {
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = (timeout_ms % 1000) * 1000000L;
    tsp = &ts;
  }
  ppoll (pfd, nfds, tsp, &while_waiting);
}

static void
wait_event (int fd, int timeout_ms)
{
  wait_events (&fd, 1, timeout_ms);
}

void
proc_sleep_ms (int ms, bool interruptible)
{
  int64_t end = now_ms () + ms;

  for (int64_t left = ms; left > 0; left = end - now_ms ()) {
    if (interruptible && caught_signal)
      return;
    wait_event (-1, (int) left);
  }
}

void
proc_wait_for_signal (void)
{
  while (!caught_signal)
    wait_event (-1, -1);
}

int
proc_poll_until (bool (*done) (void *arg), void *arg, int timeout_ms,
                 int interval_ms, bool interruptible)
{
  int64_t end = now_ms () + timeout_ms;

  for (;;) {
    if (done (arg))
      return 1;
    if (interruptible && caught_signal)
      return -1;
    if (now_ms () >= end)
      return 0;
    proc_sleep_ms (interval_ms, interruptible);
  }
}

/* One line on stderr, after the program's name. */
static void __attribute__ ((format (printf, 1, 2)))
complain (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s: ", program_invocation_short_name);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
}

/* ---- spawning ---- */

static void
close_extra_fds (int keep_fd)
{
  long max = sysconf (_SC_OPEN_MAX);

  for (int fd = 3; fd < max && fd < 4096; fd++)
    if (fd != keep_fd)
      close (fd);
}

/* A child that is to lead its own group has just left ours, but a
 * signal sent to our group before it left (a terminal's Ctrl-C) is
 * still pending in it, blocked since fork.  Ignoring a signal discards
 * a pending one: largeblock-run got the same signal, and decides
 * itself what its helpers get.
 */
static void
discard_group_signals (void)
{
  signal (SIGINT, SIG_IGN);
  signal (SIGTERM, SIG_IGN);
  signal (SIGHUP, SIG_IGN);
}

static void
reset_signals (void)
{
  sigset_t none;

  signal (SIGINT, SIG_DFL);
  signal (SIGTERM, SIG_DFL);
  signal (SIGHUP, SIG_DFL);
  signal (SIGCHLD, SIG_DFL);
  signal (SIGPIPE, SIG_DFL);
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
}

static void
connect_sink (enum proc_sink sink, int pipe_fd, int target_fd)
{
  int fd = -1;

  if (sink == PROC_PIPE)
    fd = pipe_fd;
  else if (sink == PROC_DEVNULL)
    fd = open ("/dev/null", O_WRONLY);
  if (fd >= 0 && dup2 (fd, target_fd) == -1)
    _exit (127);
}

/* In the child: never returns.  exec_pipe is close-on-exec: the parent
 * sees it close when the program starts (or the child exits). */
static void
exec_child (const struct proc_spec *spec, int out_pipe, int err_pipe,
            int exec_pipe)
{
  if (spec->own_group) {
    setpgid (0, 0);
    discard_group_signals ();
  }
  reset_signals ();
  connect_sink (spec->out, out_pipe, STDOUT_FILENO);
  connect_sink (spec->err, err_pipe, STDERR_FILENO);
  close_extra_fds (exec_pipe);
  if (spec->drop_caps) {
    /* Lock first: setting the securebits needs CAP_SETPCAP. */
    capng_clear (CAPNG_SELECT_ALL);
    if (capng_lock () != 0 || capng_apply (CAPNG_SELECT_ALL) != 0) {
      complain ("cannot drop capabilities for %s\n", spec->argv[0]);
      _exit (127);
    }
  }
  execvp (spec->argv[0], spec->argv);
  complain ("cannot run %s: %m\n", spec->argv[0]);
  _exit (127);
}

static int
open_pipe (enum proc_sink sink, int fds[2])
{
  fds[0] = fds[1] = -1;
  if (sink != PROC_PIPE)
    return 0;
  if (pipe2 (fds, O_CLOEXEC) == -1) {
    complain ("pipe: %m\n");
    return -1;
  }
  fcntl (fds[0], F_SETFL, O_NONBLOCK);
  return 0;
}

static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

/* Until the child runs its program, a signal sent to it can be lost:
 * under valgrind, one that arrives while it is still blocked is held in
 * valgrind's own queue, which exec discards.  So wait for the exec (the
 * close-on-exec pipe reaching EOF); our signals are blocked meanwhile
 * and reach the program once it runs. */
static void
wait_for_exec (int exec_pipe[2])
{
  char byte;

  close_fd (&exec_pipe[1]);
  while (read (exec_pipe[0], &byte, 1) == -1 && errno == EINTR)
    ;
  close_fd (&exec_pipe[0]);
}

int
proc_spawn (const struct proc_spec *spec, pid_t *pid, int *out_fd, int *err_fd)
{
  int out[2], err[2], exec_pipe[2];

  proc_init ();
  *pid = 0;
  if (open_pipe (spec->out, out) == -1)
    return -1;
  if (open_pipe (spec->err, err) == -1) {
    close_fd (&out[0]);
    close_fd (&out[1]);
    return -1;
  }
  if (pipe2 (exec_pipe, O_CLOEXEC) == -1) {
    complain ("pipe: %m\n");
    close_fd (&out[0]);
    close_fd (&out[1]);
    close_fd (&err[0]);
    close_fd (&err[1]);
    return -1;
  }
  /* Signals stay blocked across fork: nothing runs between fork's
   * return and the caller's record of *pid. */
  *pid = fork ();
  if (*pid == 0)
    exec_child (spec, out[1], err[1], exec_pipe[1]);
  if (*pid > 0 && spec->own_group)
    setpgid (*pid, *pid); /* as the child does: whichever runs first */
  close_fd (&out[1]);
  close_fd (&err[1]);
  if (*pid == -1) {
    complain ("fork: %m\n");
    *pid = 0;
    close_fd (&out[0]);
    close_fd (&err[0]);
    close_fd (&exec_pipe[0]);
    close_fd (&exec_pipe[1]);
    return -1;
  }
  wait_for_exec (exec_pipe);
  if (out_fd)
    *out_fd = out[0];
  else
    close_fd (&out[0]);
  if (err_fd)
    *err_fd = err[0];
  else
    close_fd (&err[0]);
  return 0;
}

/* ---- waiting and stopping ---- */

/* Signal the child's process group if it leads one, else the child. */
static void
signal_child (pid_t pid, int sig)
{
  if (kill (-pid, sig) == -1)
    kill (pid, sig);
}

bool
proc_reaped (pid_t *pid)
{
  if (*pid <= 0)
    return true;
  if (waitpid (*pid, NULL, WNOHANG) != *pid)
    return false;
  *pid = 0;
  return true;
}

/* Append what fd has now to buf (keeping the newest bytes); false at EOF
 * or error.
 */
static bool
drain (int fd, char *buf, size_t buflen, size_t *len)
{
  char chunk[4096];
  ssize_t n;

  for (;;) {
    n = read (fd, chunk, sizeof chunk);
    if (n == -1 && errno == EINTR)
      continue;
    if (n == -1 && errno == EAGAIN)
      return true;
    if (n <= 0)
      return false;
    if (buf == NULL || buflen < 2)
      continue;
    for (ssize_t i = 0; i < n; i++) {
      if (*len == buflen - 1) { /* full: keep the newer half */
        memmove (buf, buf + *len / 2, *len - *len / 2);
        *len -= *len / 2;
      }
      buf[(*len)++] = chunk[i];
    }
    buf[*len] = '\0';
  }
}

/* A caught signal's effect on the child we wait for; returns when, in
 * now_ms() time, to SIGKILL it (-1: never).
 */
static int64_t
pass_on_signal (pid_t pid, enum proc_on_signal on_signal, int sig)
{
  if (on_signal == PROC_STOP) {
    signal_child (pid, sig);
    return now_ms () + STOP_GRACE_MS;
  }
  kill (pid, sig);
  return now_ms () + grace_ms;
}

/* Copy what fd has now to to_fd; false at EOF or error. */
static bool
relay (int fd, int to_fd)
{
  char chunk[4096];
  ssize_t n, done;

  for (;;) {
    n = read (fd, chunk, sizeof chunk);
    if (n == -1 && errno == EINTR)
      continue;
    if (n == -1 && errno == EAGAIN)
      return true;
    if (n <= 0)
      return false;
    for (ssize_t off = 0; off < n; off += done) {
      done = write (to_fd, chunk + off, n - off);
      if (done == -1 && errno == EINTR)
        done = 0;
      else if (done == -1)
        break; /* nobody reads: drop it, but keep the child going */
    }
  }
}

/* What proc_wait and proc_wait_relay share: wait for *pid, draining
 * fds[0] into buf or relaying fds[i] to our fd i + 1, and treating a
 * passed deadline (timeout_ms > 0) like a PROC_STOP signal.
 */
struct waiting {
  int fds[2];
  char *buf;
  size_t buflen, len;
  bool relay;
};

static void
read_children_output (struct waiting *w)
{
  for (int i = 0; i < 2; i++) {
    if (w->fds[i] < 0)
      continue;
    if (w->relay ? !relay (w->fds[i], i + 1)
                 : !drain (w->fds[i], w->buf, w->buflen, &w->len))
      close_fd (&w->fds[i]);
  }
}

static int
wait_child (pid_t *pid, enum proc_on_signal on_signal, struct waiting *w,
            int timeout_ms, bool *timed_out)
{
  int64_t kill_at = -1,
          deadline = timeout_ms > 0 ? now_ms () + timeout_ms : -1;
  int passed_on = 0, status = -1;
  pid_t r;

  for (;;) {
    read_children_output (w);
    r = waitpid (*pid, &status, WNOHANG);
    if (r == *pid || (r == -1 && errno != EINTR))
      break;
    if (on_signal != PROC_FINISH && caught_signal && !passed_on) {
      passed_on = caught_signal;
      kill_at = pass_on_signal (*pid, on_signal, passed_on);
    }
    if (deadline >= 0 && now_ms () >= deadline && !passed_on) {
      passed_on = SIGTERM;
      *timed_out = true;
      kill_at = pass_on_signal (*pid, PROC_STOP, SIGTERM);
    }
    if (kill_at >= 0 && now_ms () >= kill_at) {
      signal_child (*pid, SIGKILL);
      kill_at = -1;
    }
    wait_events (w->fds, 2, WAKE_MS);
  }
  read_children_output (w); /* what is there; no more waiting */
  for (int i = 0; i < 2; i++)
    close_fd (&w->fds[i]);
  *pid = 0;
  return r == -1 ? -1 : status;
}

int
proc_wait (pid_t *pid, enum proc_on_signal on_signal, int fd, char *buf,
           size_t buflen)
{
  struct waiting w = { .fds = { fd, -1 }, .buf = buf, .buflen = buflen };
  bool timed_out = false;

  if (buf && buflen)
    buf[0] = '\0';
  return wait_child (pid, on_signal, &w, 0, &timed_out);
}

int
proc_wait_relay (pid_t *pid, enum proc_on_signal on_signal, int out_fd,
                 int err_fd, int timeout_ms, bool *timed_out)
{
  struct waiting w = { .fds = { out_fd, err_fd }, .relay = true };

  *timed_out = false;
  return wait_child (pid, on_signal, &w, timeout_ms, timed_out);
}

static bool
reaped (void *pid)
{
  return proc_reaped (pid);
}

void
proc_stop (const char *what, pid_t *pid)
{
  if (*pid <= 0)
    return;
  for (int waited_ms = 0; waited_ms < grace_ms; waited_ms += RESEND_TERM_MS) {
    signal_child (*pid, SIGTERM);
    if (proc_poll_until (reaped, pid, RESEND_TERM_MS, 10, false))
      return;
  }
  complain ("%s (pid %d) ignored SIGTERM, killing it\n", what, (int) *pid);
  signal_child (*pid, SIGKILL);
  waitpid (*pid, NULL, 0);
  *pid = 0;
}

/* ---- small helpers ---- */

int
proc_grace_ms (void)
{
  return grace_ms;
}

int
proc_read_stop_timeout (char *err, size_t errlen)
{
  const char *value = getenv ("LARGEBLOCK_STOP_TIMEOUT");
  char *end;
  long s;

  if (!value)
    return 0;
  errno = 0;
  s = strtol (value, &end, 10);
  if (errno || end == value || *end || s < 1 || s > PROC_STOP_TIMEOUT_MAX_S) {
    snprintf (err, errlen,
              "LARGEBLOCK_STOP_TIMEOUT=%s: must be whole seconds from 1 "
              "to %d",
              value, PROC_STOP_TIMEOUT_MAX_S);
    return -1;
  }
  grace_ms = (int) s * 1000;
  return 0;
}

bool
proc_exited_zero (int status)
{
  return status != -1 && WIFEXITED (status) && WEXITSTATUS (status) == 0;
}

const char *
proc_status_text (int status, char *buf, size_t len)
{
  if (status == -1)
    snprintf (buf, len, "could not be waited for");
  else if (WIFSIGNALED (status))
    snprintf (buf, len, "killed by signal %d", WTERMSIG (status));
  else
    snprintf (buf, len, "failed with exit status %d", WEXITSTATUS (status));
  return buf;
}

bool
proc_in_path (const char *name)
{
  const char *dir = getenv ("PATH");
  char path[PATH_MAX];

  if (dir == NULL || *dir == '\0')
    dir = "/usr/bin:/bin";
  for (;;) {
    size_t len = strcspn (dir, ":");
    snprintf (path, sizeof path, "%.*s/%s", (int) (len ? len : 1),
              len ? dir : ".", name);
    if (access (path, X_OK) == 0)
      return true;
    if (dir[len] == '\0')
      return false;
    dir += len + 1;
  }
}
