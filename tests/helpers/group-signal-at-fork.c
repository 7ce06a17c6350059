/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock tests: an LD_PRELOAD shim that signals the process group
 * from inside a child the moment fork returns in it, while the child is
 * still in its parent's process group.  That is where a terminal's
 * Ctrl-C can reach a helper that largeblock-run means to keep out of
 * its group, a window too short for any test to hit by timing.
 *
 * Preloaded into largeblock-run only: the constructor takes LD_PRELOAD
 * out of the environment, so the programs it starts do not load this.
 * At the first fork after the file $LB_GROUP_SIGNAL_FLAG appears, the
 * parent removes the file; the child sends signal $LB_GROUP_SIGNAL (a
 * number; default SIGINT) to its process group, the parent's, and
 * only then does fork return in the parent: the parent cannot have
 * moved the child to a group of its own before the signal was sent.
 * Test-only: never installed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char flag_path[PATH_MAX];
static int group_signal = SIGINT;
static int sent_pipe[2] = { -1, -1 }; /* closed by the child once sent */

/* Before fork, in the parent: is this the fork to signal in? */
static void
arm_if_flagged (void)
{
  if (unlink (flag_path) == 0 && pipe2 (sent_pipe, O_CLOEXEC) == -1)
    sent_pipe[0] = sent_pipe[1] = -1;
}

static void
in_child_signal_group (void)
{
  if (sent_pipe[1] < 0)
    return;
  kill (0, group_signal);
  close (sent_pipe[0]);
  close (sent_pipe[1]); /* the parent's read ends at EOF */
}

static void
in_parent_wait_until_sent (void)
{
  char byte;

  if (sent_pipe[0] < 0)
    return;
  close (sent_pipe[1]);
  while (read (sent_pipe[0], &byte, 1) == -1 && errno == EINTR)
    ;
  close (sent_pipe[0]);
  sent_pipe[0] = sent_pipe[1] = -1;
}

static void arm (void) __attribute__ ((constructor));

static void
arm (void)
{
  const char *flag = getenv ("LB_GROUP_SIGNAL_FLAG");
  const char *sig = getenv ("LB_GROUP_SIGNAL");

  unsetenv ("LD_PRELOAD");
  if (flag == NULL || *flag == '\0')
    return;
  snprintf (flag_path, sizeof flag_path, "%s", flag);
  if (sig && *sig)
    group_signal = atoi (sig);
  pthread_atfork (arm_if_flagged, in_parent_wait_until_sent,
                  in_child_signal_group);
}
