/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: what both do to serve a disk --
 * check the PARAM=VALUE list the way the plugin will, and start a
 * daemon (nbdkit, nbdfuse) and wait until it is ready.
 *
 * No state of its own; children are started and waited for through
 * proc.h, so its signal rules apply.
 */
#ifndef LARGEBLOCK_COMMON_SERVE_H
#define LARGEBLOCK_COMMON_SERVE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "largeblock/geometry.h"
#include "wcache.h"

#define START_TIMEOUT_MS 30000

/* What a crash test needs to know of the parameters. */
struct serve_write_cache {
  bool is_volatile;         /* write-cache=volatile */
  enum lb_cut_mode mode;    /* power-cut-mode= (default lose) */
  uint64_t seed;            /* power-cut-seed=, or the fresh one */
  uint64_t cut_after;       /* power-cut-after=, 0 if none */
  bool crash_log;           /* crash-log= was given */
  char fifo[PATH_MAX];      /* power-cut-fifo=, "" if none */
  char statsfile[PATH_MAX]; /* statsfile=, "" if none */
};

/* Check params[0..n) with the plugin's own rules and messages, filling
 * *geom and, unless NULL, *wc.  0, or -1 after printing one line.
 */
int serve_check_params (char *const *params, int n, struct lb_geometry *geom,
                        struct serve_write_cache *wc);

/* argv for "nbdkit -f -U SOCK -P PIDFILE PLUGIN PARAMS...", in argv
 * (room for max entries including the NULL); -1 if it does not fit.
 */
int serve_nbdkit_argv (char **argv, int max, const char *nbdkit,
                       const char *sock, const char *pidfile,
                       const char *plugin, char *const *params, int n);

/* Start a daemon in its own process group and wait until it wrote its
 * pid file.  *pid is recorded at once and stays the running child, or 0
 * if it never started or already exited.  Its stdout is shown only when
 * verbose.  0 when ready; -1 if it failed (said why) or a signal was
 * caught.
 */
int start_daemon (bool verbose, const char *what, char *const argv[],
                  const char *pidfile, bool drop_caps, pid_t *pid);

/* start_daemon in two halves, for a caller that records the child
 * between them: daemon_spawn starts it (0, or -1 after saying why);
 * daemon_wait_ready waits for its pid file as above.
 */
int daemon_spawn (bool verbose, char *const argv[], bool drop_caps,
                  pid_t *pid);
int daemon_wait_ready (const char *what, const char *pidfile, pid_t *pid);

#endif /* LARGEBLOCK_COMMON_SERVE_H */
