/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: serving a disk (see serve.h). */
#include <config.h>

#define _GNU_SOURCE 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "params.h"
#include "proc.h"
#include "serve.h"

static int
set_one_param (struct lb_params *p, const char *param)
{
  const char *eq = strchr (param, '=');
  char err[512] = "out of memory"; /* lists every key */
  char *key;
  int r;

  if (eq == NULL) {
    fprintf (stderr, "%s: %s: expected PARAM=VALUE\n",
             program_invocation_short_name, param);
    return -1;
  }
  key = strndup (param, eq - param);
  r = key ? lb_params_set (p, key, eq + 1, err, sizeof err) : -1;
  free (key);
  if (r == -1)
    fprintf (stderr, "largeblock: %s\n", err);
  return r;
}

int
serve_check_params (char *const *params, int n, struct lb_geometry *geom,
                    struct serve_write_cache *wc)
{
  struct lb_params p;
  char err[256] = "out of memory";
  int r = -1;

  lb_params_init (&p);
  for (int i = 0; i < n; i++)
    if (set_one_param (&p, params[i]) == -1)
      goto out;
  if (lb_params_finish (&p, geom, err, sizeof err) == -1) {
    fprintf (stderr, "largeblock: %s\n", err);
    goto out;
  }
  if (wc) {
    wc->is_volatile = p.write_cache_volatile;
    wc->mode = p.wcache.mode;
    wc->seed = p.wcache.seed;
    wc->cut_after = p.wcache.cut_after;
    wc->crash_log = p.crash_log != NULL;
    snprintf (wc->fifo, sizeof wc->fifo, "%s",
              p.power_cut_fifo ? p.power_cut_fifo : "");
    snprintf (wc->statsfile, sizeof wc->statsfile, "%s",
              p.statsfile ? p.statsfile : "");
  }
  r = 0;
out:
  lb_params_free (&p);
  return r;
}

int
serve_nbdkit_argv (char **argv, int max, const char *nbdkit, const char *sock,
                   const char *pidfile, const char *plugin,
                   char *const *params, int n)
{
  int k = 0;

  if (n + 8 > max)
    return -1;
  argv[k++] = (char *) nbdkit;
  argv[k++] = "-f";
  argv[k++] = "-U";
  argv[k++] = (char *) sock;
  argv[k++] = "-P";
  argv[k++] = (char *) pidfile;
  argv[k++] = (char *) plugin;
  for (int i = 0; i < n; i++)
    argv[k++] = params[i];
  argv[k] = NULL;
  return 0;
}

struct daemon_start {
  const char *pidfile;
  pid_t *pid;
  bool died;
};

static bool
ready_or_dead (void *arg)
{
  struct daemon_start *s = arg;
  struct stat st;

  if (stat (s->pidfile, &st) == 0 && st.st_size > 0)
    return true;
  s->died = proc_reaped (s->pid);
  return s->died;
}

int
daemon_spawn (bool verbose, char *const argv[], bool drop_caps, pid_t *pid)
{
  struct proc_spec spec = {
    .argv = argv,
    .own_group = true,
    .drop_caps = drop_caps,
    .out = verbose ? PROC_INHERIT : PROC_DEVNULL,
  };

  return proc_spawn (&spec, pid, NULL, NULL);
}

int
daemon_wait_ready (const char *what, const char *pidfile, pid_t *pid)
{
  struct daemon_start s = { .pidfile = pidfile, .pid = pid };
  int r;

  r = proc_poll_until (ready_or_dead, &s, START_TIMEOUT_MS, 10, true);
  if (r == 1 && s.died)
    fprintf (stderr, "%s: %s exited before it was ready\n",
             program_invocation_short_name, what);
  else if (r == 0)
    fprintf (stderr, "%s: %s not ready after %d s\n",
             program_invocation_short_name, what, START_TIMEOUT_MS / 1000);
  return r == 1 && !s.died ? 0 : -1;
}

int
start_daemon (bool verbose, const char *what, char *const argv[],
              const char *pidfile, bool drop_caps, pid_t *pid)
{
  if (daemon_spawn (verbose, argv, drop_caps, pid) == -1)
    return -1;
  return daemon_wait_ready (what, pidfile, pid);
}
