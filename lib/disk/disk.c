/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: from parameters to a served disk -- see disk.h. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk.h"
#include "error.h"
#include "ramstore.h"
#include "wcache.h"

/* An existing file's size is the disk's; size= may only confirm it. */
static int
resolve_file_size (struct lb_params *p, const struct lb_file_info *info,
                   char *err, size_t errlen)
{
  bool given = lb_params_size_given (p);

  if (!info->exists && !given)
    return lb_fail (EINVAL, err, errlen,
                    "file %s does not exist and no size= "
                    "was given to create it",
                    p->file);
  if (!info->exists)
    return 0;
  if (given && p->geom.size_bytes != info->size_bytes)
    return lb_fail (EINVAL, err, errlen,
                    "size %" PRIu64 " does not match %s "
                    "%s of %" PRIu64 " bytes (leave size= out to use it; "
                    "largeblock never truncates or grows a file)",
                    p->geom.size_bytes,
                    info->is_blockdev ? "block device" : "file", p->file,
                    info->size_bytes);
  return lb_params_set_size_from_file (p, info->size_bytes, err, errlen);
}

static int
open_file_disk (struct lb_disk *d, struct lb_params *p, char *err,
                size_t errlen)
{
  if (lb_file_probe (p->file, &d->file, err, errlen) == -1 ||
      resolve_file_size (p, &d->file, err, errlen) == -1 ||
      lb_params_finish (p, &d->geom, err, errlen) == -1 ||
      lb_file_check_geometry (p->file, &d->file, &d->geom, err, errlen) == -1)
    return -1;
  d->store = lb_filestore_open (&d->geom, p->file, &d->file, p->direct,
                                p->read_only, err, errlen);
  return d->store ? 0 : -1;
}

static int
open_ram_disk (struct lb_disk *d, struct lb_params *p, char *err,
               size_t errlen)
{
  if (lb_params_finish (p, &d->geom, err, errlen) == -1)
    return -1;
  d->store = lb_ramstore_new (&d->geom, p->memory_limit_bytes);
  if (d->store == NULL)
    return lb_fail (errno, err, errlen, "cannot create the RAM store: %s",
                    strerror (errno));
  return 0;
}

/* crash-log=: created last, once everything else is valid, so a
 * refused configuration leaves no log behind.
 */
static int
create_crash_log (struct lb_disk *d, const struct lb_params *p, char *err,
                  size_t errlen)
{
  const struct lb_crashlog_geometry g = {
    .disk_size = d->geom.size_bytes,
    .blksize = d->geom.physical_bytes,
    .logical_blksize = d->geom.logical_bytes,
  };

  if (p->crash_log == NULL)
    return 0;
  d->log = lb_crashlog_create (p->crash_log, &g, p->crash_log_bytes, err,
                               errlen);
  return d->log ? 0 : -1;
}

/* write-cache=volatile: the cache owns the store from now on. */
static int
add_write_cache (struct lb_disk *d, const struct lb_params *p, char *err,
                 size_t errlen)
{
  struct lb_wcache_config c = p->wcache;
  struct lb_store *cache;

  if (!p->write_cache_volatile)
    return 0;
  if (create_crash_log (d, p, err, errlen) == -1) {
    lb_disk_close (d);
    return -1;
  }
  c.log = d->log;
  cache = lb_wcache_new (d->store, &c);
  if (cache == NULL) {
    int e = errno;

    lb_disk_close (d);
    if (p->crash_log)
      unlink (p->crash_log);
    return lb_fail (e, err, errlen, "cannot create the write cache: %s",
                    strerror (e));
  }
  d->store = cache;
  d->cached = true;
  return 0;
}

/* replay=: the parameters it refuses first, then the log (read and
 * indexed whole), whose header gives the geometry.
 */
static int
open_replay_disk (struct lb_disk *d, struct lb_params *p, char *err,
                  size_t errlen)
{
  struct lb_crashlog_geometry g;
  char why[512];

  if (lb_params_check_replay (p, err, errlen) == -1)
    return -1;
  d->replay = lb_replay_open (p->replay, why, sizeof why);
  if (d->replay == NULL)
    return lb_fail (errno, err, errlen, "replay: %s", why);
  lb_replay_geometry (d->replay, &g);
  if (lb_params_set_geometry_from_log (p, &g, err, errlen) == -1 ||
      lb_params_finish (p, &d->geom, err, errlen) == -1) {
    lb_disk_close (d);
    return -1;
  }
  return 0;
}

int
lb_disk_open (struct lb_disk *d, struct lb_params *p, char *err, size_t errlen)
{
  int r;

  memset (d, 0, sizeof *d);
  if (p->replay)
    return open_replay_disk (d, p, err, errlen);
  if (p->file)
    r = open_file_disk (d, p, err, errlen);
  else
    r = open_ram_disk (d, p, err, errlen);
  if (r == -1)
    return -1;
  return add_write_cache (d, p, err, errlen);
}

/* The store connection c uses. */
static int
connect_store (struct lb_disk *d, const char *export_name,
               struct lb_disk_conn *c, char *err, size_t errlen)
{
  if (d->replay) {
    if (lb_replay_export_open (d->replay, export_name, &c->state, err,
                               errlen) == -1)
      return -1;
    c->store = c->state.store;
    return 0;
  }
  c->store = d->cached ? lb_wcache_connect (d->store) : d->store;
  if (c->store == NULL)
    return lb_fail (ENOMEM, err, errlen, "cannot connect: out of memory");
  return 0;
}

struct lb_disk_conn *
lb_disk_connect (struct lb_disk *d, const char *export_name, char *err,
                 size_t errlen)
{
  struct lb_disk_conn *c = calloc (1, sizeof *c);
  int e;

  if (c == NULL) {
    lb_fail (ENOMEM, err, errlen, "cannot connect: out of memory");
    return NULL;
  }
  if (connect_store (d, export_name, c, err, errlen) == 0)
    return c;
  e = errno;
  free (c);
  errno = e;
  return NULL;
}

void
lb_disk_disconnect (struct lb_disk *d, struct lb_disk_conn *c)
{
  if (c == NULL)
    return;
  if (d->replay)
    lb_replay_export_close (&c->state);
  else if (d->cached)
    c->store->ops->destroy (c->store);
  free (c);
}

void
lb_disk_close (struct lb_disk *d)
{
  if (d->store)
    d->store->ops->destroy (d->store);
  d->store = NULL;
  lb_crashlog_close (d->log, NULL, 0);
  d->log = NULL;
  lb_replay_close (d->replay);
  d->replay = NULL;
}
