/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: server/common/proc unit tests, with /bin/sh children.
 *
 * Exit statuses and output come back; children start with default
 * signal handling and, when asked, their own process group, which a
 * signal sent to ours before they left it does not follow; a signal
 * that arrives while nothing waits is held, not lost, and is seen when
 * asked for or at the next wait, which then stops a set-up step,
 * forwards to a command, or lets a teardown step finish; daemons are
 * stopped even when they ignore SIGTERM.  Check forks each test, so each
 * starts unsignalled.
 */
#include <config.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"
#include "proc.h"

static int
sh_status (const char *script, enum proc_on_signal on_signal, char *buf,
           size_t buflen)
{
  char *argv[] = { "/bin/sh", "-c", (char *) script, NULL };
  struct proc_spec spec = { .argv = argv,
                            .own_group = true,
                            .out = buf ? PROC_PIPE : PROC_INHERIT };
  pid_t pid;
  int fd = -1;

  ck_assert_int_eq (proc_spawn (&spec, &pid, buf ? &fd : NULL, NULL), 0);
  ck_assert_int_gt (pid, 0);
  return proc_wait (&pid, on_signal, fd, buf, buflen);
}

START_TEST (test_exit_status_returned)
{
  int status = sh_status ("exit 3", PROC_STOP, NULL, 0);

  ck_assert (WIFEXITED (status));
  ck_assert_int_eq (WEXITSTATUS (status), 3);
  ck_assert (!proc_exited_zero (status));
  ck_assert (proc_exited_zero (sh_status ("true", PROC_STOP, NULL, 0)));
}
END_TEST

START_TEST (test_stdout_captured)
{
  char buf[64];

  sh_status ("echo hello; echo world", PROC_STOP, buf, sizeof buf);
  ck_assert_str_eq (buf, "hello\nworld\n");
}
END_TEST

START_TEST (test_capture_keeps_newest_bytes)
{
  char buf[16];

  sh_status ("i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done",
             PROC_STOP, buf, sizeof buf);
  ck_assert_uint_le (strlen (buf), sizeof buf - 1);
  ck_assert_msg (strstr (buf, "line99\n") != NULL, "got \"%s\"", buf);
}
END_TEST

START_TEST (test_missing_program_is_127)
{
  char *argv[] = { "/nonexistent/largeblock-no-such-tool", NULL };
  struct proc_spec spec = { .argv = argv, .err = PROC_DEVNULL };
  pid_t pid;
  int status;

  ck_assert_int_eq (proc_spawn (&spec, &pid, NULL, NULL), 0);
  status = proc_wait (&pid, PROC_STOP, -1, NULL, 0);
  ck_assert (WIFEXITED (status));
  ck_assert_int_eq (WEXITSTATUS (status), 127);
  ck_assert_int_eq (pid, 0);
}
END_TEST

START_TEST (test_own_process_group)
{
  char buf[64], want[32];
  char *argv[] = { "/bin/sh", "-c", "ps -o pgid= -p $$ | tr -d ' '", NULL };
  struct proc_spec spec = { .argv = argv,
                            .own_group = true,
                            .out = PROC_PIPE };
  pid_t pid, child;
  int fd;

  ck_assert_int_eq (proc_spawn (&spec, &pid, &fd, NULL), 0);
  child = pid;
  proc_wait (&pid, PROC_STOP, fd, buf, sizeof buf);
  snprintf (want, sizeof want, "%d\n", (int) child);
  ck_assert_str_eq (buf, want);
}
END_TEST

START_TEST (test_child_signals_default)
{
  /* Were our blocked mask inherited, the TERM would wait for ever. */
  int status = sh_status ("kill -TERM $$; sleep 5", PROC_FINISH, NULL, 0);

  ck_assert (WIFSIGNALED (status));
  ck_assert_int_eq (WTERMSIG (status), SIGTERM);
}
END_TEST

START_TEST (test_signal_held_until_wait)
{
  proc_init ();
  raise (SIGTERM); /* blocked: not fatal, held for the next wait */
  proc_sleep_ms (10, true);
  ck_assert_int_eq (proc_caught_signal (), SIGTERM);
}
END_TEST

START_TEST (test_pending_signal_is_caught)
{
  /* A step that ends before its next wait must not hide a signal
   * that came meanwhile: asking takes it. */
  proc_init ();
  raise (SIGHUP);
  ck_assert_int_eq (proc_caught_signal (), SIGHUP);
  raise (SIGTERM); /* the first one stays the answer */
  ck_assert_int_eq (proc_caught_signal (), SIGHUP);
}
END_TEST

/* A group signal (Ctrl-C) that reaches a child between fork and its
 * setpgid, while it is still in our group: raised in the child by an
 * atfork handler, at exactly that moment.
 */
static volatile sig_atomic_t signal_forked_child;

static void
raise_in_forked_child (void)
{
  if (signal_forked_child)
    raise (SIGINT);
}

START_TEST (test_group_signal_before_setpgid_discarded)
{
  char *argv[] = { "/bin/sh", "-c", "exit 0", NULL };
  struct proc_spec spec = { .argv = argv, .own_group = true };
  int status;
  pid_t pid;

  proc_init ();
  pthread_atfork (NULL, NULL, raise_in_forked_child);
  signal_forked_child = 1;
  ck_assert_int_eq (proc_spawn (&spec, &pid, NULL, NULL), 0);
  signal_forked_child = 0;
  status = proc_wait (&pid, PROC_STOP, -1, NULL, 0);
  ck_assert_msg (proc_exited_zero (status),
                 "the helper got the group's signal: status %#x", status);
}
END_TEST

START_TEST (test_signal_stops_setup_step)
{
  int status;

  proc_init ();
  raise (SIGHUP);
  status = sh_status ("sleep 30", PROC_STOP, NULL, 0);
  ck_assert_int_eq (proc_caught_signal (), SIGHUP);
  ck_assert (WIFSIGNALED (status));
  ck_assert_int_eq (WTERMSIG (status), SIGHUP);
}
END_TEST

START_TEST (test_signal_stops_whole_group)
{
  char buf[64];
  int status;

  /* The wrapper's own child must not be left: the group is signalled,
   * and the pipe's write end, which the grandchild holds, reaches EOF. */
  proc_init ();
  raise (SIGTERM);
  status = sh_status ("sleep 30; echo survived", PROC_STOP, buf, sizeof buf);
  ck_assert (WIFSIGNALED (status));
  ck_assert_str_eq (buf, "");
}
END_TEST

START_TEST (test_teardown_step_finishes)
{
  int status;

  proc_init ();
  raise (SIGINT);
  status = sh_status ("sleep 0.2; exit 4", PROC_FINISH, NULL, 0);
  ck_assert_int_eq (proc_caught_signal (), SIGINT);
  ck_assert (WIFEXITED (status));
  ck_assert_int_eq (WEXITSTATUS (status), 4);
}
END_TEST

START_TEST (test_command_gets_forwarded_signal)
{
  char ready[] = "/tmp/check-proc-ready.XXXXXX", script[256];
  char *argv[] = { "/bin/sh", "-c", script, NULL };
  struct proc_spec spec = { .argv = argv };
  pid_t pid;
  int fd, status;

  /* The shell says when its trap is set: a fixed sleep is not enough
   * on a loaded machine. */
  fd = mkstemp (ready);
  ck_assert_int_ge (fd, 0);
  close (fd);
  unlink (ready);
  snprintf (script, sizeof script,
            "trap 'exit 9' TERM; : >%s; sleep 30 & wait", ready);
  proc_init ();
  ck_assert_int_eq (proc_spawn (&spec, &pid, NULL, NULL), 0);
  while (access (ready, F_OK) == -1)
    proc_sleep_ms (10, false);
  unlink (ready);
  raise (SIGTERM);
  status = proc_wait (&pid, PROC_FORWARD, -1, NULL, 0);
  ck_assert (WIFEXITED (status));
  ck_assert_int_eq (WEXITSTATUS (status), 9);
}
END_TEST

START_TEST (test_stop_daemon_ignoring_term)
{
  char *argv[] = { "/bin/sh", "-c", "trap '' TERM; sleep 30", NULL };
  struct proc_spec spec = { .argv = argv, .own_group = true };
  pid_t pid;

  ck_assert_int_eq (proc_spawn (&spec, &pid, NULL, NULL), 0);
  proc_sleep_ms (100, false);
  proc_stop ("test daemon", &pid);
  ck_assert_int_eq (pid, 0);
}
END_TEST

START_TEST (test_stop_daemon_promptly)
{
  char *argv[] = { "/bin/sh", "-c", "sleep 30", NULL };
  struct proc_spec spec = { .argv = argv, .own_group = true };
  pid_t pid, child;

  ck_assert_int_eq (proc_spawn (&spec, &pid, NULL, NULL), 0);
  child = pid;
  proc_stop ("test daemon", &pid);
  ck_assert_int_eq (pid, 0);
  ck_assert_int_eq (kill (child, 0), -1);
}
END_TEST

static int polls;

static bool
third_time (void *arg)
{
  return ++polls == 3;
}

static bool
never (void *arg)
{
  polls++;
  return false;
}

/* Run script with stdout and stderr relayed; our own stdout and stderr
 * are redirected to files so the test can read what arrived.
 */
static int
relay_status (const char *script, int timeout_ms, bool *timed_out, char *out,
              char *err, size_t len)
{
  char *argv[] = { "/bin/sh", "-c", (char *) script, NULL };
  struct proc_spec spec = {
    .argv = argv, .own_group = true, .out = PROC_PIPE, .err = PROC_PIPE
  };
  FILE *fo = tmpfile (), *fe = tmpfile ();
  int saved_out = dup (1), saved_err = dup (2), out_fd, err_fd, status;
  pid_t pid;

  ck_assert (fo && fe && saved_out >= 0 && saved_err >= 0);
  ck_assert_int_eq (proc_spawn (&spec, &pid, &out_fd, &err_fd), 0);
  dup2 (fileno (fo), 1);
  dup2 (fileno (fe), 2);
  status = proc_wait_relay (&pid, PROC_STOP, out_fd, err_fd, timeout_ms,
                            timed_out);
  dup2 (saved_out, 1);
  dup2 (saved_err, 2);
  rewind (fo);
  rewind (fe);
  out[fread (out, 1, len - 1, fo)] = '\0';
  err[fread (err, 1, len - 1, fe)] = '\0';
  fclose (fo);
  fclose (fe);
  return status;
}

START_TEST (test_relay_streams_both_outputs)
{
  char out[64], err[64];
  bool timed_out = true;
  int status;

  status = relay_status ("echo out1; echo err1 >&2; echo out2; exit 4", 0,
                         &timed_out, out, err, sizeof out);
  ck_assert (WIFEXITED (status));
  ck_assert_int_eq (WEXITSTATUS (status), 4);
  ck_assert (!timed_out);
  ck_assert_str_eq (out, "out1\nout2\n");
  ck_assert_str_eq (err, "err1\n");
}
END_TEST

START_TEST (test_relay_timeout_stops_child)
{
  char out[64], err[64];
  bool timed_out = false;
  int status;

  status = relay_status ("echo before; exec sleep 30", 300, &timed_out, out,
                         err, sizeof out);
  ck_assert (timed_out);
  ck_assert (WIFSIGNALED (status));
  ck_assert_int_eq (WTERMSIG (status), SIGTERM);
  ck_assert_str_eq (out, "before\n");
}
END_TEST

START_TEST (test_poll_until)
{
  polls = 0;
  ck_assert_int_eq (proc_poll_until (third_time, NULL, 5000, 1, true), 1);
  ck_assert_int_eq (polls, 3);
  polls = 0;
  ck_assert_int_eq (proc_poll_until (never, NULL, 30, 5, true), 0);
  ck_assert_int_ge (polls, 2);
  /* Not interruptible: a signal does not cut it short. */
  proc_init ();
  raise (SIGTERM);
  ck_assert_int_eq (proc_poll_until (never, NULL, 50, 5, false), 0);
  ck_assert_int_eq (proc_caught_signal (), SIGTERM);
}
END_TEST

START_TEST (test_poll_until_interrupted)
{
  proc_init ();
  raise (SIGTERM);
  polls = 0;
  ck_assert_int_eq (proc_poll_until (never, NULL, 60000, 10, true), -1);
}
END_TEST

START_TEST (test_in_path)
{
  ck_assert (proc_in_path ("sh"));
  ck_assert (!proc_in_path ("largeblock-no-such-tool"));
}
END_TEST

static Suite *
proc_suite (void)
{
  Suite *s = suite_create ("proc");
  TCase *tc = tcase_create ("core");

  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_exit_status_returned);
  tcase_add_test (tc, test_stdout_captured);
  tcase_add_test (tc, test_capture_keeps_newest_bytes);
  tcase_add_test (tc, test_missing_program_is_127);
  tcase_add_test (tc, test_own_process_group);
  tcase_add_test (tc, test_child_signals_default);
  tcase_add_test (tc, test_signal_held_until_wait);
  tcase_add_test (tc, test_pending_signal_is_caught);
  tcase_add_test (tc, test_group_signal_before_setpgid_discarded);
  tcase_add_test (tc, test_signal_stops_setup_step);
  tcase_add_test (tc, test_signal_stops_whole_group);
  tcase_add_test (tc, test_teardown_step_finishes);
  tcase_add_test (tc, test_command_gets_forwarded_signal);
  tcase_add_test (tc, test_stop_daemon_ignoring_term);
  tcase_add_test (tc, test_stop_daemon_promptly);
  tcase_add_test (tc, test_poll_until);
  tcase_add_test (tc, test_poll_until_interrupted);
  tcase_add_test (tc, test_in_path);
  tcase_add_test (tc, test_relay_streams_both_outputs);
  tcase_add_test (tc, test_relay_timeout_stops_child);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (proc_suite);
