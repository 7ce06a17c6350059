/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: nbdkit plugin serving a large-block-size RAM or file disk.
 *
 * Thin glue: configuration builds the disk (lib/disk/disk: a RAM store, or a
 * file store for file=, locked and opened read-only if nbdkit's command
 * line has -r (lib/disk/nbdkitargs), under a volatile write cache for
 * write-cache=volatile), or for replay=LOG the log's crash states; each
 * connection gets its store from lb_disk_connect (bound to the power
 * generation: after a power cut its requests fail with EIO; on a replay
 * disk, the crash state its export name names, its own, freed when it
 * closes); each request callback checks the request
 * against the geometry and the alignment policy (lib/align), counts it
 * (lib/disk/stats), and forwards it to the connection's store, turning lib
 * errors into nbdkit_error() and the errno the client must see.  Power
 * cuts on demand come from lib/disk/cutfifo's watcher thread.
 *
 * Thread model PARALLEL.  The globals below are written only during
 * configuration (load, config, config_complete, after_fork), before any
 * connection, and read-only afterwards; the stores (one shared, or one
 * per replay connection) and the counters are thread-safe, building a
 * replay state takes lib/disk/replay's own mutex (a leaf: nothing else
 * is held then), short_file_logged is an atomic, and statsfile_lock
 * serializes writing the statistics (after each cut and at exit).
 *
 * Lock order: lib/disk/locking.h's table, which includes statsfile_lock.
 * A cut's report (log_cut_locked, wcache's on_cut) takes statsfile_lock
 * while lib/disk/wcache holds its cut_lock and every stripe lock, so
 * statsfile_lock comes after them; under it only wcache's report_lock is
 * taken (the cut counters, lb_wcache_get_stats).  Nothing may enter the
 * cache's reads or writes while holding it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "largeblock/align.h"
#include "caps.h"
#include "cutfifo.h"
#include "disk.h"
#include "error.h"
#include "locking.h"
#include "nbdkitargs.h"
#include "params.h"
#include "stats.h"
#include "wcache.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static struct lb_params params;
static struct lb_disk disk;
static const struct lb_geometry *const geom = &disk.geom;
static struct lb_store *store; /* disk.store, once configured; NULL for
                                  replay= (each connection has its own) */
static struct lb_stats stats;
static char *statsfile_path; /* absolute: nbdkit may chdir("/") */
static atomic_bool short_file_logged;
/* Serializes writing statsfile_path (after each cut and at exit). */
static pthread_mutex_t statsfile_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lb_cutfifo *cutfifo; /* power-cut-fifo= */

static void
largeblock_load (void)
{
  lb_params_init (&params);
  lb_stats_init (&stats);
}

/* Write aside and rename, so a reader never sees half a file. */
static void
write_statsfile_locked (const struct lb_store_usage *usage)
{
  char tmp[4096];
  FILE *fp;

  lb_assert_held (&statsfile_lock);
  snprintf (tmp, sizeof tmp, "%s.tmp", statsfile_path);
  fp = fopen (tmp, "w");
  if (fp == NULL) {
    nbdkit_error ("largeblock: statsfile %s: %m", tmp);
    return;
  }
  if (lb_stats_write_json (fp, store->ops->name, geom,
                           lb_misaligned_policy_name (params.misaligned),
                           usage, &stats, disk.cached ? store : NULL) == -1 ||
      fclose (fp) == EOF) {
    nbdkit_error ("largeblock: statsfile %s: %m", tmp);
    unlink (tmp);
    return;
  }
  if (rename (tmp, statsfile_path) == -1)
    nbdkit_error ("largeblock: statsfile %s: %m", statsfile_path);
}

/* The store's usage first: it may wait for the RAM store's reclaim
 * worker, which takes locks of row 3 of locking.h's order (before
 * statsfile_lock).
 */
static void
write_statsfile (void)
{
  struct lb_store_usage usage;

  store->ops->usage (store, &usage);
  lb_mutex_lock (&statsfile_lock);
  write_statsfile_locked (&usage);
  lb_mutex_unlock (&statsfile_lock);
}

static void
largeblock_unload (void)
{
  lb_cutfifo_close (cutfifo);
  if (store && statsfile_path)
    write_statsfile ();
  lb_disk_close (&disk);
  free (statsfile_path);
  lb_params_free (&params);
}

static int
largeblock_config (const char *key, const char *value)
{
  char err[512]; /* the unknown-key message lists every key */

  if (lb_params_set (&params, key, value, err, sizeof err) == -1) {
    nbdkit_error ("largeblock: %s", err);
    return -1;
  }
  return 0;
}

/* Fail at startup, not at exit, if the statistics cannot be written. */
static int
prepare_statsfile (void)
{
  FILE *fp;

  if (params.statsfile == NULL)
    return 0;
  statsfile_path = nbdkit_absolute_path (params.statsfile);
  if (statsfile_path == NULL)
    return -1;
  fp = fopen (statsfile_path, "a");
  if (fp == NULL) {
    nbdkit_error ("largeblock: statsfile %s cannot be written: %m",
                  params.statsfile);
    return -1;
  }
  fclose (fp);
  return 0;
}

/* A power cut is news, not an error, but nbdkit 1.32 has no message
 * level below nbdkit_error that is always shown (nbdkit_debug needs -v).
 * So the line goes where nbdkit's own messages go: its stderr, or
 * syslog at LOG_NOTICE once nbdkit has daemonized without -v (its
 * stderr is then /dev/null, and nbdkit_error would go to syslog).
 */
static void
log_notice (const char *line)
{
  struct stat st;

  if (fstat (STDERR_FILENO, &st) == 0 && S_ISCHR (st.st_mode) &&
      st.st_rdev == makedev (1, 3))
    syslog (LOG_DAEMON | LOG_NOTICE, "largeblock: %s", line);
  else
    fprintf (stderr, "nbdkit: largeblock: %s\n", line);
}

/* wcache's on_cut: runs with every cut lock held (rows 1-2 of
 * locking.h's order).  Every power cut, whoever made it: logged (always, so a
 * crash loop's log says what each cut did and which seed replays it) and, with
 * statsfile=, in the statistics at once.
 */
static void
log_cut_locked (const struct lb_cut_report *r, void *opaque)
{
  char line[256];

  lb_wcache_assert_cut_held (store);
  lb_cut_report_format (r, params.wcache.mode, line, sizeof line);
  log_notice (line);
  if (statsfile_path)
    write_statsfile ();
}

/* "cut" (nth = 0) or "cut N": lib/disk/wcache decides whether cut N is due. */
static void
cut_from_fifo (uint64_t nth, void *opaque)
{
  struct lb_cut_report r;

  switch (lb_wcache_cut_once (store, nth, &r)) {
  case 0:
    nbdkit_debug ("largeblock: power-cut-fifo: cut %" PRIu64 " has "
                  "happened already: nothing to do",
                  nth);
    break;
  case -1:
    nbdkit_error ("largeblock: power cut %" PRIu64 ": the durable store "
                  "failed: %m",
                  r.cut);
    break;
  }
}

static void
complain_from_fifo (const char *line, void *opaque)
{
  nbdkit_error ("largeblock: power-cut-fifo %s: unknown command '%s' "
                "(expected: cut, or cut N with N >= 1)",
                params.power_cut_fifo, line);
}

static int
open_cutfifo (void)
{
  char err[256];

  if (params.power_cut_fifo == NULL)
    return 0;
  cutfifo = lb_cutfifo_open (params.power_cut_fifo, cut_from_fifo,
                             complain_from_fifo, NULL, err, sizeof err);
  if (cutfifo == NULL) {
    nbdkit_error ("largeblock: %s", err);
    return -1;
  }
  return 0;
}

static void
debug_file (const char *path, const struct lb_file_info *f)
{
  if (f->is_blockdev)
    nbdkit_debug ("largeblock: file %s is a block device with %" PRIu32
                  "-byte logical and %" PRIu32 "-byte physical sectors",
                  path, f->dev_logical_bytes, f->dev_physical_bytes);
  nbdkit_debug ("largeblock: file %s is open %s, locked %s", path,
                params.read_only ? "read-only (nbdkit -r)" : "read-write",
                params.read_only ? "shared" : "exclusively");
}

/* nbdkit tells a plugin about -r only per connection; a file disk must
 * know before it opens and locks its file (lib/disk/nbdkitargs.h).
 */
static void
find_read_only (void)
{
  int r;

  if (params.file == NULL)
    return;
  r = lb_nbdkit_self_read_only ();
  if (r == -1)
    nbdkit_debug ("largeblock: cannot read nbdkit's command line (%m): "
                  "serving file %s read-write",
                  params.file);
  params.read_only = r == 1;
}

static void
debug_replay (void)
{
  nbdkit_debug ("largeblock: replay=%s: %" PRIu64 " epochs, size %" PRIu64
                ", blksize %" PRIu32 ", logical-blksize %" PRIu32
                ", max-request %" PRIu32 ", misaligned=%s",
                params.replay, lb_replay_epochs (disk.replay),
                geom->size_bytes, geom->physical_bytes, geom->logical_bytes,
                geom->max_request_bytes,
                lb_misaligned_policy_name (params.misaligned));
}

static int
largeblock_config_complete (void)
{
  char err[1024]; /* messages may name two paths */

  /* Before the statsfile is made: replay= refuses it. */
  if (lb_params_check_replay (&params, err, sizeof err) == -1) {
    nbdkit_error ("largeblock: %s", err);
    return -1;
  }
  if (prepare_statsfile () == -1)
    return -1;
  params.wcache.on_cut = log_cut_locked;
  find_read_only ();
  if (lb_disk_open (&disk, &params, err, sizeof err) == -1) {
    nbdkit_error ("largeblock: %s", err);
    return -1;
  }
  store = disk.store;
  if (disk.replay) {
    debug_replay ();
    return 0;
  }
  if (open_cutfifo () == -1)
    return -1;
  nbdkit_debug ("largeblock: %s disk, size %" PRIu64 ", blksize %" PRIu32
                ", logical-blksize %" PRIu32 ", max-request %" PRIu32
                ", misaligned=%s, memory-limit %" PRIu64,
                store->ops->name, geom->size_bytes, geom->physical_bytes,
                geom->logical_bytes, geom->max_request_bytes,
                lb_misaligned_policy_name (params.misaligned),
                params.memory_limit_bytes);
  if (params.file)
    debug_file (params.file, &disk.file);
  if (disk.cached)
    nbdkit_debug ("largeblock: write-cache=volatile, size %" PRIu64
                  ", power-cut-mode=%s, power-cut-seed=%" PRIu64
                  ", power-cut-after=%" PRIu64,
                  params.wcache.cache_bytes,
                  lb_cut_mode_name (params.wcache.mode), params.wcache.seed,
                  params.wcache.cut_after);
  if (disk.log)
    nbdkit_debug ("largeblock: crash-log=%s, crash-log-size %" PRIu64,
                  params.crash_log, params.crash_log_bytes);
  return 0;
}

/* Least privilege: the disk is open (config_complete); from here on a
 * root server needs no capabilities.  after_fork runs once, after nbdkit
 * has bound its sockets and daemonized, before any worker thread. */
static int
largeblock_after_fork (void)
{
  char kept[64], err[256];
  int r;

  if (cutfifo && lb_cutfifo_start (cutfifo, err, sizeof err) == -1) {
    nbdkit_error ("largeblock: %s", err);
    return -1;
  }
  if (params.keep_capabilities) {
    nbdkit_debug ("largeblock: keep-capabilities=yes: keeping every "
                  "capability");
    return 0;
  }
  r = lb_caps_drop (params.statsfile != NULL, kept, sizeof kept, err,
                    sizeof err);
  if (r == -1) {
    nbdkit_error ("largeblock: %s", err);
    return -1;
  }
  if (r == 0)
    nbdkit_debug ("largeblock: no capabilities to drop");
  else
    nbdkit_debug ("largeblock: dropped capabilities, kept: %s", kept);
  return 0;
}

#define largeblock_config_help \
  "[size=]<SIZE>            Virtual size, e.g. 512M, 1T, 7E (required\n" \
  "                         unless file= names an existing file).\n" \
  "blksize=<N>              Physical block (folio) size, default 4096.\n" \
  "logical-blksize=<N>      Logical block size, default 512.\n" \
  "max-request=<N>          Largest read/write, default 32M.\n" \
  "misaligned=error|allow   Misaligned requests: EINVAL (default) or serve.\n" \
  "memory-limit=<SIZE>      Cap on folio memory (default: unlimited).\n" \
  "statsfile=<PATH>         Write JSON statistics here at exit.\n" \
  "file=<PATH>              Serve this file or block device (created\n" \
  "                         with size= if missing) instead of RAM.\n" \
  "direct=on|off            With file=: bypass the page cache (O_DIRECT).\n" \
  "keep-capabilities=yes    Do not drop capabilities after start-up.\n" \
  "write-cache=none|volatile  Volatile: writes stay unstable until flush/FUA.\n" \
  "write-cache-size=<SIZE>  Bound on the volatile cache, default 64M.\n" \
  "power-cut-mode=lose|atomic|torn  What a power cut keeps, default lose.\n" \
  "power-cut-seed=<N>       Seed of the power cut's choices (default: new).\n" \
  "power-cut-after=<N>      Cut the power after the Nth write/trim/zero.\n" \
  "power-cut-fifo=<PATH>    Cut the power when a line \"cut\" arrives here;\n" \
  "                         \"cut N\": only if fewer than N cuts happened.\n" \
  "crash-log=<PATH>         Record every write, trim, zero, flush and cut\n" \
  "                         (a new file; needs write-cache=volatile).\n" \
  "crash-log-size=<SIZE>    Bound on the crash log, default 1G.\n" \
  "replay=<LOG>             Serve the crash states of this crash log, one\n" \
  "                         per export name epoch=K[,mode=M][,seed=S]."

static void
largeblock_dump_plugin (void)
{
  printf ("largeblock_size_max=%" PRIu64 "\n", LB_SIZE_MAX_BYTES);
  printf ("largeblock_blksize_min=%u\n", LB_BLKSIZE_MIN_BYTES);
  printf ("largeblock_blksize_max=%u\n", LB_BLKSIZE_MAX_BYTES);
  printf ("largeblock_logical_blksize_min=%u\n", LB_LOGICAL_MIN_BYTES);
  printf ("largeblock_logical_blksize_max=%u\n", LB_LOGICAL_MAX_BYTES);
  printf ("largeblock_max_request_max=%u\n", LB_MAX_REQUEST_MAX_BYTES);
  printf ("largeblock_misaligned=error,allow\n");
  printf ("largeblock_write_cache=none,volatile\n");
  printf ("largeblock_power_cut_mode=lose,atomic,torn\n");
}

/* nbdkit tells a plugin about -r only here, per connection: a store
 * opened read-only (find_read_only saw -r) never takes a writer.  On a
 * replay disk the export name says which crash state to build.
 */
static void *
largeblock_open (int readonly)
{
  const char *name = nbdkit_export_name ();
  struct lb_disk_conn *c;
  char err[512];

  if (!readonly && store && store->read_only) {
    nbdkit_error ("largeblock: file %s is read-only: serve it with nbdkit -r",
                  params.file);
    nbdkit_set_error (EACCES);
    return NULL;
  }
  if (name == NULL)
    return NULL; /* nbdkit has said why */
  c = lb_disk_connect (&disk, name, err, sizeof err);
  if (c == NULL) {
    int e = errno;

    nbdkit_error ("largeblock: %s", err);
    nbdkit_set_error (e);
  }
  return c;
}

static void
largeblock_close (void *handle)
{
  lb_disk_disconnect (&disk, handle);
}

/* The store a request goes to. */
static inline struct lb_store *
store_of (void *handle)
{
  return ((struct lb_disk_conn *) handle)->store;
}

static int64_t
largeblock_get_size (void *handle)
{
  return (int64_t) geom->size_bytes;
}

static int
largeblock_block_size (void *handle, uint32_t *minimum, uint32_t *preferred,
                       uint32_t *maximum)
{
  *minimum = geom->logical_bytes;
  *preferred = geom->physical_bytes;
  *maximum = geom->max_request_bytes;
  return 0;
}

static const char *
largeblock_export_description (void *handle)
{
  struct lb_disk_conn *c = handle;
  char state[1024];

  if (disk.replay) {
    lb_replay_export_describe (&c->state, state, sizeof state);
    return nbdkit_printf_intern ("largeblock crash state of replay=%s: %s",
                                 params.replay, state);
  }
  return nbdkit_printf_intern ("largeblock %s disk: %" PRIu64 " bytes, "
                               "logical block %" PRIu32 " bytes, physical "
                               "block %" PRIu32 " bytes",
                               params.file ? "file" : "RAM", geom->size_bytes,
                               geom->logical_bytes, geom->physical_bytes);
}

static int
add_export (const char *name, const char *description, void *opaque)
{
  return nbdkit_add_export (opaque, name, description);
}

/* A replay disk: one export per epoch.  Any other disk serves the same
 * data under every name, so it lists only the default.
 */
static int
largeblock_list_exports (int readonly, int is_tls,
                         struct nbdkit_exports *exports)
{
  if (disk.replay == NULL)
    return nbdkit_use_default_export (exports);
  return lb_replay_export_list (disk.replay, add_export, exports);
}

/* Connections to one name of a replay disk each have a state of their
 * own: a flush on one says nothing about another's writes.
 */
static int
largeblock_can_multi_conn (void *handle)
{
  return disk.replay == NULL;
}

static int
largeblock_true (void *handle)
{
  return 1;
}

static int
largeblock_false (void *handle)
{
  return 0;
}

static int
largeblock_can_fua (void *handle)
{
  return NBDKIT_FUA_NATIVE;
}

static int
largeblock_can_cache (void *handle)
{
  return NBDKIT_CACHE_NATIVE;
}

/* Count a request and apply the geometry and alignment policy.  Returns 0
 * to serve it, or -1 having set the client's errno (EINVAL).
 */
static int
admit (enum lb_req_type type, uint32_t count, uint64_t offset)
{
  enum lb_align_class c = lb_align_classify (geom, type, offset, count);
  char why[256];

  if (c == LB_ALIGN_OK)
    return 0;
  if (lb_align_is_misaligned (c)) {
    lb_stats_count_misaligned (&stats, type);
    if (params.misaligned == LB_MISALIGNED_ALLOW)
      return 0;
  }
  lb_stats_count (&stats, type, 0);
  lb_stats_count_error (&stats, type);
  nbdkit_error ("largeblock: %s",
                lb_align_describe (geom, type, offset, count, c, why,
                                   sizeof why));
  nbdkit_set_error (EINVAL);
  return -1;
}

/* A read past the end of a backing file that shrank while served: said
 * once, not once per request.
 */
static void
log_short_file (void)
{
  struct stat st;

  if (atomic_exchange (&short_file_logged, true))
    return;
  if (stat (params.file, &st) == 0)
    nbdkit_error ("largeblock: file %s is now %" PRIu64 " bytes, shorter "
                  "than the disk (%" PRIu64 " bytes): reads past its end "
                  "fail with EIO (logged once)",
                  params.file, (uint64_t) st.st_size, geom->size_bytes);
  else
    nbdkit_error ("largeblock: file %s is shorter than the disk (%" PRIu64
                  " bytes): reads past its end fail with EIO (logged once)",
                  params.file, geom->size_bytes);
}

/* A request the crash log could not take (crash-log=): full, or broken
 * by a failed write to it.
 */
static void
log_crash_log_error (enum lb_req_type type, int err, uint32_t count,
                     uint64_t offset)
{
  struct lb_crashlog_status st = { 0 };

  if (disk.log)
    lb_crashlog_status (disk.log, &st);

  if (err == ENOSPC)
    nbdkit_error ("largeblock: %s of %" PRIu32 " bytes at offset %" PRIu64
                  ": crash-log=%s is full (crash-log-size=%" PRIu64
                  " bytes): the request was not done",
                  lb_req_type_name (type), count, offset, params.crash_log,
                  params.crash_log_bytes);
  else
    nbdkit_error ("largeblock: %s of %" PRIu32 " bytes at offset %" PRIu64
                  ": crash-log=%s cannot be written (%s): the request was "
                  "not done, and the disk takes no more changes",
                  lb_req_type_name (type), count, offset, params.crash_log,
                  strerror (st.broken ? st.broken : err));
}

/* Finish a served request: count it, and report the store's error. */
static int
finish (enum lb_req_type type, int r, uint32_t count, uint64_t offset)
{
  int err = errno;
  enum lb_fault fault;

  if (r == 0) {
    lb_stats_count (&stats, type, count);
    return 0;
  }
  lb_stats_count (&stats, type, 0);
  lb_stats_count_error (&stats, type);
  fault = lb_take_fault ();
  if (fault == LB_FAULT_PAST_EOF)
    log_short_file ();
  else if (fault == LB_FAULT_CRASH_LOG)
    log_crash_log_error (type, err, count, offset);
  /* A power cut is logged once, not each request of a dead connection. */
  else if (fault != LB_FAULT_POWER_CUT && err != ENOTSUP)
    nbdkit_error ("largeblock: %s of %" PRIu32 " bytes at offset %" PRIu64
                  ": %s",
                  lb_req_type_name (type), count, offset, strerror (err));
  nbdkit_set_error (err);
  return -1;
}

/* Trim and zero have no FUA of their own in the store interface: a flush
 * after them makes them (and what came before) durable before the reply.
 */
static int
flush_if_fua (struct lb_store *s, uint32_t flags, int r)
{
  if (r == 0 && (flags & NBDKIT_FLAG_FUA))
    return s->ops->flush (s);
  return r;
}

static int
largeblock_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
                  uint32_t flags)
{
  if (admit (LB_REQ_READ, count, offset) == -1)
    return -1;
  struct lb_store *s = store_of (handle);

  return finish (LB_REQ_READ, s->ops->pread (s, buf, count, offset), count,
                 offset);
}

static int
largeblock_pwrite (void *handle, const void *buf, uint32_t count,
                   uint64_t offset, uint32_t flags)
{
  struct lb_store *s = store_of (handle);
  bool fua = flags & NBDKIT_FLAG_FUA;

  if (admit (LB_REQ_WRITE, count, offset) == -1)
    return -1;
  return finish (LB_REQ_WRITE, s->ops->pwrite (s, buf, count, offset, fua),
                 count, offset);
}

static int
largeblock_trim (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  struct lb_store *s = store_of (handle);

  if (admit (LB_REQ_TRIM, count, offset) == -1)
    return -1;
  return finish (LB_REQ_TRIM,
                 flush_if_fua (s, flags, s->ops->trim (s, count, offset)),
                 count, offset);
}

static int
largeblock_zero (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  struct lb_store *s = store_of (handle);
  unsigned zflags = 0;

  if (flags & NBDKIT_FLAG_MAY_TRIM)
    zflags |= LB_ZERO_MAY_TRIM;
  if (flags & NBDKIT_FLAG_FAST_ZERO)
    zflags |= LB_ZERO_FAST;
  if (admit (LB_REQ_ZERO, count, offset) == -1)
    return -1;
  return finish (LB_REQ_ZERO,
                 flush_if_fua (s, flags,
                               s->ops->zero (s, count, offset, zflags)),
                 count, offset);
}

static int
largeblock_flush (void *handle, uint32_t flags)
{
  struct lb_store *s = store_of (handle);

  return finish (LB_REQ_FLUSH, s->ops->flush (s), 0, 0);
}

/* RAM is as close as data gets, and a file's page cache is the kernel's
 * business: cache only checks the request, and that the disk it was sent
 * to has not lost power since the connection began.
 */
static int
largeblock_cache (void *handle, uint32_t count, uint64_t offset,
                  uint32_t flags)
{
  struct lb_store *s = store_of (handle);

  if (admit (LB_REQ_CACHE, count, offset) == -1)
    return -1;
  return finish (LB_REQ_CACHE, disk.cached ? lb_wcache_check_power (s) : 0,
                 count, offset);
}

static int
add_extent (uint64_t offset, uint64_t length, bool hole, void *opaque)
{
  uint32_t type = hole ? NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO : 0;

  return nbdkit_add_extent (opaque, offset, length, type);
}

static int
largeblock_extents (void *handle, uint32_t count, uint64_t offset,
                    uint32_t flags, struct nbdkit_extents *extents)
{
  struct lb_store *s = store_of (handle);
  bool req_one = flags & NBDKIT_FLAG_REQ_ONE;

  if (admit (LB_REQ_EXTENTS, count, offset) == -1)
    return -1;
  return finish (LB_REQ_EXTENTS,
                 s->ops->extents (s, count, offset, req_one, add_extent,
                                  extents),
                 count, offset);
}

/* clang-format off: the table is aligned by hand */
static struct nbdkit_plugin plugin = {
  .name = "largeblock",
  .longname = "largeblock large-block-size RAM and file disks",
  .version = PACKAGE_VERSION,
  .description = "RAM or file disk with large logical and physical "
                 "blocks for testing Linux LBS",
  .load = largeblock_load,
  .unload = largeblock_unload,
  .config = largeblock_config,
  .config_complete = largeblock_config_complete,
  .after_fork = largeblock_after_fork,
  .config_help = largeblock_config_help,
  .magic_config_key = "size",
  .dump_plugin = largeblock_dump_plugin,
  .open = largeblock_open,
  .close = largeblock_close,
  .get_size = largeblock_get_size,
  .block_size = largeblock_block_size,
  .list_exports = largeblock_list_exports,
  .export_description = largeblock_export_description,
  .can_write = largeblock_true,
  .can_flush = largeblock_true,
  .is_rotational = largeblock_false,
  .can_trim = largeblock_true,
  .can_zero = largeblock_true,
  .can_fast_zero = largeblock_true,
  .can_fua = largeblock_can_fua,
  .can_multi_conn = largeblock_can_multi_conn,
  .can_extents = largeblock_true,
  .can_cache = largeblock_can_cache,
  .pread = largeblock_pread,
  .pwrite = largeblock_pwrite,
  .trim = largeblock_trim,
  .zero = largeblock_zero,
  .flush = largeblock_flush,
  .cache = largeblock_cache,
  .extents = largeblock_extents,
  .errno_is_preserved = 1,
};
/* clang-format on */

NBDKIT_REGISTER_PLUGIN (plugin)
