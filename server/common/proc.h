/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: the process layer -- starting
 * children, waiting for them and for time to pass, stopping them, and
 * the signals that interrupt all of that.
 *
 * Owns the program's signal state.  proc_init blocks SIGINT, SIGTERM,
 * SIGHUP and SIGCHLD for the rest of the program's life; they are
 * delivered only inside the one function that waits (ppoll with them
 * unblocked) and when proc_caught_signal asks, so a signal can never
 * land between a check and a wait and be missed.  The handlers only
 * record the signal.
 *
 * Children start with default dispositions and an empty signal mask.
 * Helpers and daemons run in a process group of their own, so a
 * terminal's Ctrl-C reaches the program (and the user's command,
 * which stays in ours) but not them: the program decides what each
 * child gets, and when.  Both sides of the fork set the group, and the
 * child discards a group signal that reached it before it left ours.
 *
 * Single-threaded, like the program.
 */
#ifndef LARGEBLOCK_COMMON_PROC_H
#define LARGEBLOCK_COMMON_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where a child's stdout or stderr goes. */
enum proc_sink {
  PROC_INHERIT, /* ours */
  PROC_DEVNULL, /* /dev/null */
  PROC_PIPE,    /* a pipe the caller reads */
};

/* What a wait does when the program catches a signal meanwhile. */
enum proc_on_signal {
  PROC_STOP,    /* set-up step: pass the signal to the
                 * child's process group, SIGKILL it if it
                 * lives on; the wait returns promptly */
  PROC_FORWARD, /* the user's command: pass the signal to
                 * it and give it proc_grace_ms() to end */
  PROC_FINISH,  /* teardown step: let it run to the end */
};

/* How long a process told to stop gets before SIGKILL: 5 s, or
 * LARGEBLOCK_STOP_TIMEOUT seconds.  A server that takes longer to end
 * (one under valgrind, one flushing a large file disk to slow storage)
 * would otherwise be killed and reported as ignoring SIGTERM.
 */
#define PROC_GRACE_MS_DEFAULT 5000
#define PROC_STOP_TIMEOUT_MAX_S 3600
int proc_grace_ms (void);

/* Read LARGEBLOCK_STOP_TIMEOUT into proc_grace_ms(); -1 with a one-line
 * message in err if it is set but not whole seconds from 1 to
 * PROC_STOP_TIMEOUT_MAX_S.
 */
int proc_read_stop_timeout (char *err, size_t errlen);

struct proc_spec {
  char *const *argv; /* argv[0] is found on PATH */
  enum proc_sink out, err;
  bool own_group; /* start a process group of its own */
  bool drop_caps; /* clear and lock every capability */
};

/* Install the handlers and block the signals (see above).  Idempotent. */
void proc_init (void);

/* The first SIGINT, SIGTERM or SIGHUP caught, or 0.  One that is
 * pending counts: it is taken now.
 */
int proc_caught_signal (void);

/* Forget the signal caught, once it has been acted on as the normal
 * end of a wait (largeblock-run's Ctrl-C without COMMAND): a later one
 * counts again.
 */
void proc_forget_signal (void);

/* Start spec->argv.  *pid is set before this returns and before
 * anything can interrupt, so the caller's record of the child is never
 * behind reality; it is 0 if no child started.  Pipe read ends are
 * returned in *out_fd / *err_fd (may be NULL when not asked for).
 * Returns 0, or -1 after printing why.
 */
int proc_spawn (const struct proc_spec *spec, pid_t *pid, int *out_fd,
                int *err_fd);

/* Wait for *pid to end, reading fd meanwhile (if fd >= 0) into buf: the
 * last buflen - 1 bytes of what it writes, NUL-terminated; fd is closed.
 * Sets *pid = 0 once reaped.  Returns the wait status, or -1.
 */
int proc_wait (pid_t *pid, enum proc_on_signal on_signal, int fd, char *buf,
               size_t buflen);

/* Wait for *pid like proc_wait, meanwhile copying what it writes to the
 * pipes out_fd and err_fd (either may be -1) to our stdout and stderr as
 * it comes; both are closed.  If timeout_ms (> 0) passes first, the
 * child is stopped as PROC_STOP stops it on SIGTERM, and *timed_out is
 * set.
 */
int proc_wait_relay (pid_t *pid, enum proc_on_signal on_signal, int out_fd,
                     int err_fd, int timeout_ms, bool *timed_out);

/* Stop a daemon we started: SIGTERM to its process group, repeated in
 * case it was not yet listening, SIGKILL after proc_grace_ms(); reaped.
 * Sets *pid = 0.  Signals caught meanwhile do not shorten it.
 */
void proc_stop (const char *what, pid_t *pid);

/* Has *pid ended?  Reaps it (and sets *pid = 0) if so. */
bool proc_reaped (pid_t *pid);

/* Call done(arg) every interval_ms until it returns true (returns 1),
 * timeout_ms passed (0), or -- if interruptible -- a signal was caught
 * (-1).  done runs at least once.
 */
int proc_poll_until (bool (*done) (void *arg), void *arg, int timeout_ms,
                     int interval_ms, bool interruptible);

/* Sleep ms, or less if interruptible and a signal is caught. */
void proc_sleep_ms (int ms, bool interruptible);

/* Until a signal is caught. */
void proc_wait_for_signal (void);

/* Did the child exit with status 0?  (status as proc_wait returns.) */
bool proc_exited_zero (int status);

/* How a child that did not exit 0 ended, for messages. */
const char *proc_status_text (int status, char *buf, size_t len);

/* Is name an executable file in one of $PATH's directories? */
bool proc_in_path (const char *name);

#endif /* LARGEBLOCK_COMMON_PROC_H */
