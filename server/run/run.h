/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: what its files share -- the options, the run context
 * with each disk's resources, and the attach back ends' operations.
 *
 * A struct run is the whole state of one largeblock-run process: every
 * resource it may have created is recorded in it (and, for --cleanup, in
 * the journal in its private directory) *before* the step that creates
 * the resource starts, so that teardown knows everything that might
 * exist whenever a signal arrives.  Teardown then asks the kernel what
 * really exists (mount table, loop backing files, nbd pid attributes)
 * and undoes only that.
 *
 * Single-threaded; signals are handled by proc.h's rules.
 */
#ifndef LARGEBLOCK_RUN_RUN_H
#define LARGEBLOCK_RUN_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "largeblock/geometry.h"
#include "serve.h"

#define PROG "largeblock-run"
#define MAX_DISKS 16
#define EXPLORE_MAX_COUNT 1000000 /* --sample, --seeds */

struct options {
  const char *plugin;
  const char *nbdkit;
  const char *attach;
  const char *mkfs;
  const char *mkfs_options;
  const char *mount_dir; /* "" for a private temporary directory */
  unsigned long fs_blksize;
  unsigned disks;
  bool disks_set; /* --disks was given */
  bool fstests;   /* --fstests */
  bool verbose;
  bool cleanup;         /* --cleanup: remove what dead runs left */
  bool crash_test;      /* --crash-test */
  bool crash_explore;   /* --crash-explore */
  const char *check;    /* --check=CMD (a shell command), NULL if none */
  const char *epochs;   /* --epochs=LIST, NULL if not given */
  unsigned sample;      /* --sample=N, 0 if not given */
  unsigned seeds;       /* --seeds=N, 0 if not given (then 1) */
  const char *keep_log; /* --keep-log=PATH, NULL if not given */
  char **params;
  int nr_params;
  char **command;
};

struct disk {
  int idx;
  char sock[PATH_MAX];
  char server_pidfile[PATH_MAX];
  char fuse_dir[PATH_MAX];
  char fuse_pidfile[PATH_MAX];
  char fuse_file[PATH_MAX];
  char dev[64];         /* the attached block device, "" if none */
  char export_name[64]; /* the export to attach, "" for the default */
  char mnt[PATH_MAX];
  char mnt_real[PATH_MAX]; /* mnt as the mount table names it */
  pid_t server_pid;
  pid_t fuse_pid;
  pid_t nbd_client_pid; /* the nbd-client whose connection is ours */
  char nbd_trying[32];  /* device nbd-client may have connected */
  bool fuse_started;    /* nbdfuse ran: fuse_dir may be mounted */
  bool loop_started;    /* losetup ran: fuse_file may be attached */
  bool mount_started;   /* mount ran: mnt may be mounted from dev */
  bool mnt_is_ours;     /* we created the directory */
};

struct run;

/* An attach back end: how an export becomes a block device.  attach
 * records in d what it is about to create before creating it; detach
 * undoes whatever attach may have done, however far it got, and is
 * called during teardown only (signals do not interrupt it).
 */
struct attach_ops {
  const char *name;
  /* NULL if this back end can serve the run's geometry, else why not. */
  const char *(*unavailable_reason) (struct run *run);
  int (*attach) (struct run *run, struct disk *d);
  int (*detach) (struct run *run, struct disk *d);
};

extern const struct attach_ops attach_loop_ops;
extern const struct attach_ops attach_nbd_ops;

struct run {
  struct options opt;
  struct lb_geometry geom;
  const struct attach_ops *attach;
  char workdir[PATH_MAX / 2]; /* leaves room for file names */
  struct disk disks[MAX_DISKS];
  unsigned nr_disks;           /* disks whose set-up began */
  struct serve_write_cache wc; /* the parameters' write cache facts */
  char **params_owned;         /* opt.params when crash.c extended it */
  char *params_added[2];       /* crash.c's or explore.c's additions */
  int nr_params_added;
  bool mount_dir_is_ours;   /* we created --mount's DIR (several disks) */
  bool cut_fifo_ours;       /* crash.c named wc.fifo in workdir */
  bool statsfile_ours;      /* crash.c named wc.statsfile in workdir */
  char crash_log[PATH_MAX]; /* explore.c's crash-log= in workdir, or "" */
};

/* Messages shown with --verbose. */
void verbose (const struct run *run, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

/* Run a set-up helper to completion, its stdout hidden unless --verbose;
 * a signal stops it.  0 if it exited 0, else prints why and -1.
 */
int run_step (struct run *run, char *const argv[]);

/* The same for a teardown helper: signals do not interrupt it. */
int run_teardown_step (struct run *run, char *const argv[]);

/* Run a set-up helper, capturing the end of its stdout in out; a signal
 * stops it.  Returns its wait status (see proc_wait), printing nothing.
 */
int run_step_capture (struct run *run, char *const argv[], char *out,
                      size_t outlen);

/* Run the user's COMMAND (or --check's shell) in our process group,
 * forwarding a caught signal to it.  Returns the exit status
 * largeblock-run should have for it: its own, 128+N for a signal.
 */
int run_user_command (struct run *run, char *const argv[]);

/* Check the kernel's logical block size for dev against the geometry. */
int check_logical_blksize (const struct run *run, const char *dev);

/* disk-steps.c: start_daemon (serve.h), recording the daemon in the journal
 * the moment it has started, and again once it is ready.
 */
int start_noted_daemon (struct run *run, const char *what, char *const argv[],
                        const char *pidfile, bool drop_caps, pid_t *pid);

/* disk-steps.c: set up disk d (server, attach, mkfs, mount); -1 on failure
 * or a caught signal.  teardown_disk undoes whatever set-up may have
 * done, however far it got; signals do not interrupt it.
 */
int set_up_disk (struct run *run, struct disk *d);
/* disk-steps.c: start d's server with these parameters (set_up_disk's
 * first step; explore.c's replay server).
 */
int disk_start_server (struct run *run, struct disk *d, char *const *params,
                       int nr_params);
int teardown_disk (struct run *run, struct disk *d);
bool disk_is_mounted (const struct disk *d);

/* disk-steps.c, for a crash test: unmount d's filesystem (-1 if it stays
 * mounted); detach d's device but keep its server (-1 if anything of
 * the attachment is left); attach the same server's export again over
 * a new connection and mount it.  Set-up steps stop at a caught signal.
 */
int disk_unmount (struct run *run, struct disk *d);
int disk_detach_keep_server (struct run *run, struct disk *d);
int disk_reattach (struct run *run, struct disk *d);
int disk_mount (struct run *run, struct disk *d);

/* disk-steps.c: export LARGEBLOCK_DEV, _MNT ... for the disks as they are now
 * (mounted or not), and the geometry's block sizes, for COMMAND, the
 * crash test's --check and the workload after a re-attach.
 */
void disks_export_env (const struct run *run);

/* crash.c: --crash-test.  crash_check_options refuses what makes no
 * sense (one line, -1); crash_add_params adds the FIFO and statsfile
 * the run needs to the parameters once the private directory exists;
 * crash_test runs everything after set-up and returns the exit status.
 */
int crash_check_options (struct run *run);
int crash_add_params (struct run *run);
int crash_test (struct run *run);
/* Remove the FIFO and statsfile crash_add_params named (and the crash
 * log explore_add_params named), once the server is stopped, and free
 * the parameters they made.
 */
void crash_remove_files (struct run *run);
/* crash.c, shared with explore.c: own a copy of the parameters with
 * room for two more (-1 after saying why); add "KEY=WORKDIR/NAME" to
 * them, the path in path[len].
 */
int crash_own_params (struct run *run);
int crash_add_param (struct run *run, const char *key, const char *name,
                     char *path, size_t len);
/* crash.c: the read-only checker of --mkfs's filesystem on d's device;
 * its output is shown only if it fails, or with --verbose.  0 or -1.
 */
int crash_fsck_readonly (struct run *run, struct disk *d);

/* explore.c: --crash-explore.  explore_check_options refuses what makes
 * no sense (one line, -1); explore_add_params names the crash log in
 * the private directory; crash_explore runs everything after set-up
 * (the workload, then every chosen crash state) and returns the exit
 * status.
 */
int explore_check_options (struct run *run);
int explore_add_params (struct run *run);
int crash_explore (struct run *run);

/* journal.c: append one line to the run's journal (for --cleanup). */
void journal_note (const struct run *run, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

/* journal.c: record a daemon just started (pid, start time and
 * executable), so that --cleanup can stop it and nothing else.  Call it
 * again if its executable may have changed (a wrapper that execs).
 */
void journal_note_proc (const struct run *run, pid_t pid);

/* journal.c: record a mount point just created, with its identity. */
void journal_note_mkdir (const struct run *run, const char *dir);

/* journal.c: start the journal in a new private directory: the first
 * thing a run does once the directory exists.  It stays locked until
 * the process exits, which is how --cleanup tells a live run.  0, or -1
 * after saying why.
 */
int journal_start (const struct run *run);

/* journal.c: --cleanup.  Returns the exit status. */
int cleanup_dead_runs (const struct run *run);

#endif /* LARGEBLOCK_RUN_RUN_H */
