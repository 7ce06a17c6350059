/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the user-facing parameters -- see params.h. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "params.h"
#include "prng.h"

enum param_key {
  KEY_SIZE,
  KEY_BLKSIZE,
  KEY_LOGICAL,
  KEY_MAX_REQUEST,
  KEY_MISALIGNED,
  KEY_MEMORY_LIMIT,
  KEY_STATSFILE,
  KEY_FILE,
  KEY_DIRECT,
  KEY_KEEP_CAPABILITIES,
  KEY_WRITE_CACHE,
  KEY_WRITE_CACHE_SIZE,
  KEY_POWER_CUT_MODE,
  KEY_POWER_CUT_SEED,
  KEY_POWER_CUT_AFTER,
  KEY_POWER_CUT_FIFO,
  KEY_CRASH_LOG,
  KEY_CRASH_LOG_SIZE,
  KEY_REPLAY,
  KEY__COUNT
};

static const char *const key_names[KEY__COUNT] = {
  [KEY_SIZE] = "size",
  [KEY_BLKSIZE] = "blksize",
  [KEY_LOGICAL] = "logical-blksize",
  [KEY_MAX_REQUEST] = "max-request",
  [KEY_MISALIGNED] = "misaligned",
  [KEY_MEMORY_LIMIT] = "memory-limit",
  [KEY_STATSFILE] = "statsfile",
  [KEY_FILE] = "file",
  [KEY_DIRECT] = "direct",
  [KEY_KEEP_CAPABILITIES] = "keep-capabilities",
  [KEY_WRITE_CACHE] = "write-cache",
  [KEY_WRITE_CACHE_SIZE] = "write-cache-size",
  [KEY_POWER_CUT_MODE] = "power-cut-mode",
  [KEY_POWER_CUT_SEED] = "power-cut-seed",
  [KEY_POWER_CUT_AFTER] = "power-cut-after",
  [KEY_POWER_CUT_FIFO] = "power-cut-fifo",
  [KEY_CRASH_LOG] = "crash-log",
  [KEY_CRASH_LOG_SIZE] = "crash-log-size",
  [KEY_REPLAY] = "replay",
};

_Static_assert(KEY__COUNT <=
                 sizeof ((struct lb_params *) 0)->typed / sizeof (char *),
               "lb_params.typed has a slot per key");

/* A seed for runs that do not name one (logged, so they can be replayed):
 * the clock and the process, mixed.
 */
static uint64_t
fresh_seed (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_REALTIME, &ts);
  return lb_prng_derive ((uint64_t) ts.tv_sec * 1000000000u +
                           (uint64_t) ts.tv_nsec,
                         (uint64_t) getpid ());
}

void
lb_params_init (struct lb_params *p)
{
  memset (p, 0, sizeof *p);
  lb_geometry_request_defaults (&p->geom);
  p->misaligned = LB_MISALIGNED_ERROR;
  p->wcache.mode = LB_CUT_LOSE;
  p->wcache.cache_bytes = LB_WRITE_CACHE_DEFAULT_BYTES;
  p->wcache.seed = fresh_seed ();
  p->crash_log_bytes = LB_CRASH_LOG_DEFAULT_BYTES;
}

void
lb_params_free (struct lb_params *p)
{
  for (size_t i = 0; i < KEY__COUNT; i++)
    free (p->typed[i]);
  lb_params_init (p);
}

const char *
lb_misaligned_policy_name (enum lb_misaligned_policy policy)
{
  return policy == LB_MISALIGNED_ALLOW ? "allow" : "error";
}

static int
find_key (const char *key)
{
  for (int i = 0; i < KEY__COUNT; i++)
    if (strcmp (key, key_names[i]) == 0)
      return i;
  return -1;
}

static int
set_misaligned (struct lb_params *p, const char *value, char *err,
                size_t errlen)
{
  if (strcmp (value, "error") == 0)
    p->misaligned = LB_MISALIGNED_ERROR;
  else if (strcmp (value, "allow") == 0)
    p->misaligned = LB_MISALIGNED_ALLOW;
  else
    return lb_fail (EINVAL, err, errlen,
                    "misaligned %s is not one of: error, allow", value);
  return 0;
}

static int
set_write_cache (struct lb_params *p, const char *value, char *err,
                 size_t errlen)
{
  if (strcmp (value, "volatile") == 0)
    p->write_cache_volatile = true;
  else if (strcmp (value, "none") == 0)
    p->write_cache_volatile = false;
  else
    return lb_fail (EINVAL, err, errlen,
                    "write-cache %s is not one of: none, volatile", value);
  return 0;
}

static int
set_power_cut_mode (struct lb_params *p, const char *value, char *err,
                    size_t errlen)
{
  if (lb_cut_mode_from_name (value, &p->wcache.mode) == 0)
    return 0;
  return lb_fail (EINVAL, err, errlen,
                  "power-cut-mode %s is not one of: lose, atomic, torn",
                  value);
}

/* A decimal integer in [min, UINT64_MAX], digits only. */
static int
set_count (const char *name, const char *value, uint64_t min, uint64_t *out,
           char *err, size_t errlen)
{
  char *end;
  unsigned long long v;

  if (*value < '0' || *value > '9')
    return lb_fail (EINVAL, err, errlen, "%s %s is not a decimal integer",
                    name, value);
  errno = 0;
  v = strtoull (value, &end, 10);
  if (*end != '\0')
    return lb_fail (EINVAL, err, errlen, "%s %s is not a decimal integer",
                    name, value);
  if (errno == ERANGE)
    return lb_fail (EINVAL, err, errlen, "%s %s is larger than %" PRIu64, name,
                    value, UINT64_MAX);
  if (v < min)
    return lb_fail (EINVAL, err, errlen, "%s %s is less than %" PRIu64, name,
                    value, min);
  *out = v;
  return 0;
}

/* The words nbdkit_parse_bool takes, so users type what they know;
 * `words` names the pair the message suggests. */
static int
set_bool (const char *name, const char *value, const char *words, bool *out,
          char *err, size_t errlen)
{
  static const char *const on[] = { "on", "yes", "true", "1" };
  static const char *const off[] = { "off", "no", "false", "0" };

  for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
    if (strcasecmp (value, on[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcasecmp (value, off[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  return lb_fail (EINVAL, err, errlen, "%s %s is not a boolean (%s)", name,
                  value, words);
}

/* lb_parse_size fails with ERANGE for a value too large, but params.h
 * promises EINVAL for every rejected value: keep its message (already in
 * err), fail with EINVAL.
 */
static int
set_size (const char *name, const char *value, uint64_t *bytes, char *err,
          size_t errlen)
{
  if (lb_parse_size (name, value, bytes, err, errlen) == -1)
    return lb_fail (EINVAL, NULL, 0, "%s: message already in err", name);
  return 0;
}

static int
set_value (struct lb_params *p, int key, const char *value, char *err,
           size_t errlen)
{
  const char *name = key_names[key];

  switch (key) {
  case KEY_MISALIGNED: return set_misaligned (p, value, err, errlen);
  case KEY_WRITE_CACHE: return set_write_cache (p, value, err, errlen);
  case KEY_POWER_CUT_MODE: return set_power_cut_mode (p, value, err, errlen);
  case KEY_POWER_CUT_SEED:
    return set_count (name, value, 0, &p->wcache.seed, err, errlen);
  case KEY_POWER_CUT_AFTER:
    return set_count (name, value, 1, &p->wcache.cut_after, err, errlen);
  case KEY_WRITE_CACHE_SIZE:
    return set_size (name, value, &p->wcache.cache_bytes, err, errlen);
  case KEY_CRASH_LOG_SIZE:
    return set_size (name, value, &p->crash_log_bytes, err, errlen);
  case KEY_STATSFILE:
  case KEY_FILE:
  case KEY_POWER_CUT_FIFO:
  case KEY_CRASH_LOG:
  case KEY_REPLAY:
    if (*value == '\0')
      return lb_fail (EINVAL, err, errlen, "%s is empty (expected a path)",
                      name);
    return 0;
  case KEY_DIRECT:
    return set_bool (name, value, "on or off", &p->direct, err, errlen);
  case KEY_KEEP_CAPABILITIES:
    return set_bool (name, value, "yes or no", &p->keep_capabilities, err,
                     errlen);
  case KEY_SIZE:
    return set_size (name, value, &p->geom.size_bytes, err, errlen);
  case KEY_BLKSIZE:
    return set_size (name, value, &p->geom.physical_bytes, err, errlen);
  case KEY_LOGICAL:
    return set_size (name, value, &p->geom.logical_bytes, err, errlen);
  case KEY_MAX_REQUEST:
    return set_size (name, value, &p->geom.max_request_bytes, err, errlen);
  case KEY_MEMORY_LIMIT:
    return set_size (name, value, &p->memory_limit_bytes, err, errlen);
  }
  abort ();
}

int
lb_params_set (struct lb_params *p, const char *key, const char *value,
               char *err, size_t errlen)
{
  int k = find_key (key);
  char *copy;

  if (k < 0)
    return lb_fail (EINVAL, err, errlen,
                    "unknown parameter '%s' (expected size, "
                    "blksize, logical-blksize, max-request, misaligned, "
                    "memory-limit, statsfile, file, direct, "
                    "keep-capabilities, write-cache, write-cache-size, "
                    "power-cut-mode, power-cut-seed, power-cut-after, "
                    "power-cut-fifo, crash-log, crash-log-size or replay)",
                    key);
  if (p->seen & (1u << k))
    return lb_fail (EINVAL, err, errlen, "%s given twice (%s=%s and %s=%s)",
                    key, key, p->typed[k], key, value);
  if (set_value (p, k, value, err, errlen) == -1)
    return -1;

  copy = strdup (value);
  if (copy == NULL)
    return lb_fail (ENOMEM, err, errlen, "%s: out of memory", key);
  p->typed[k] = copy;
  p->seen |= 1u << k;
  if (k == KEY_STATSFILE)
    p->statsfile = copy;
  if (k == KEY_FILE)
    p->file = copy;
  if (k == KEY_POWER_CUT_FIFO)
    p->power_cut_fifo = copy;
  if (k == KEY_CRASH_LOG)
    p->crash_log = copy;
  if (k == KEY_REPLAY)
    p->replay = copy;
  return 0;
}

static int
check_memory_limit (const struct lb_params *p, char *err, size_t errlen)
{
  const char *typed = p->typed[KEY_MEMORY_LIMIT];

  if (typed == NULL)
    return 0;
  if (p->memory_limit_bytes < p->geom.physical_bytes)
    return lb_fail (EINVAL, err, errlen,
                    "memory-limit %s is smaller than blksize %llu "
                    "(no folio would fit)",
                    typed, (unsigned long long) p->geom.physical_bytes);
  if (p->memory_limit_bytes % p->geom.physical_bytes != 0)
    return lb_fail (EINVAL, err, errlen,
                    "memory-limit %s is not a multiple of "
                    "blksize %llu",
                    typed, (unsigned long long) p->geom.physical_bytes);
  return 0;
}

/* Parameters that only make sense for one kind of disk. */
static int
check_backend (const struct lb_params *p, char *err, size_t errlen)
{
  if (p->file && p->typed[KEY_MEMORY_LIMIT])
    return lb_fail (EINVAL, err, errlen,
                    "memory-limit %s applies to RAM disks only, "
                    "not to file=%s",
                    p->typed[KEY_MEMORY_LIMIT], p->file);
  if (!p->file && p->direct)
    return lb_fail (EINVAL, err, errlen,
                    "direct=%s needs file= (a RAM disk has no "
                    "page cache to bypass)",
                    p->typed[KEY_DIRECT]);
  return 0;
}

/* The crash log records what the volatile cache does (crashlog.h). */
static int
check_crash_log (const struct lb_params *p, char *err, size_t errlen)
{
  const char *size = p->typed[KEY_CRASH_LOG_SIZE];

  if (size && p->crash_log == NULL)
    return lb_fail (EINVAL, err, errlen,
                    "crash-log-size=%s needs crash-log=PATH (it bounds "
                    "that log)",
                    size);
  if (size && p->crash_log_bytes < LB_CRASHLOG_MIN_LIMIT)
    return lb_fail (EINVAL, err, errlen,
                    "crash-log-size %s is smaller than the smallest log "
                    "(%d bytes: its header, one record and the room kept "
                    "for flushes)",
                    size, LB_CRASHLOG_MIN_LIMIT);
  return 0;
}

/* The power-cut parameters describe the volatile cache: without it every
 * write is durable at once and there is nothing for a power cut to take.
 */
static int
check_write_cache (const struct lb_params *p, const struct lb_geometry *g,
                   char *err, size_t errlen)
{
  static const int needs_cache[] = { KEY_WRITE_CACHE_SIZE, KEY_POWER_CUT_MODE,
                                     KEY_POWER_CUT_SEED, KEY_POWER_CUT_AFTER,
                                     KEY_POWER_CUT_FIFO, KEY_CRASH_LOG,
                                     KEY_CRASH_LOG_SIZE };
  const char *size = p->typed[KEY_WRITE_CACHE_SIZE];
  uint64_t min;

  if (!p->write_cache_volatile) {
    for (size_t i = 0; i < sizeof needs_cache / sizeof needs_cache[0]; i++) {
      int k = needs_cache[i];

      if (p->typed[k])
        return lb_fail (EINVAL, err, errlen,
                        "%s=%s needs write-cache=volatile (without a "
                        "volatile cache every write is durable at once)",
                        key_names[k], p->typed[k]);
    }
    return 0;
  }
  min = lb_wcache_min_bytes (g);
  if (size && p->wcache.cache_bytes < min)
    return lb_fail (EINVAL, err, errlen,
                    "write-cache-size %s is smaller than one cached block "
                    "(%" PRIu64 " bytes with blksize %" PRIu32 ")",
                    size, min, g->physical_bytes);
  return check_crash_log (p, err, errlen);
}

/* What replay=LOG does not take, and why: it serves the log's disk, in
 * memory, and each export name chooses the power cut.
 */
static const char replay_geometry[] =
  "the log's header gives the disk's size and block sizes";
static const char replay_memory[] =
  "crash states are served from memory, over the image the log rebuilds";
static const char replay_cut[] =
  "the log is replayed, not recorded: each export name, "
  "epoch=K,mode=M,seed=S, chooses the power cut";

static const struct {
  int key;
  const char *why;
} replay_refuses[] = {
  { KEY_SIZE, replay_geometry },
  { KEY_BLKSIZE, replay_geometry },
  { KEY_LOGICAL, replay_geometry },
  { KEY_FILE, replay_memory },
  { KEY_DIRECT, replay_memory },
  { KEY_MEMORY_LIMIT, "crash states have no memory limit" },
  { KEY_STATSFILE, "crash states keep no statistics" },
  { KEY_WRITE_CACHE, replay_cut },
  { KEY_WRITE_CACHE_SIZE, replay_cut },
  { KEY_POWER_CUT_MODE, replay_cut },
  { KEY_POWER_CUT_SEED, replay_cut },
  { KEY_POWER_CUT_AFTER, replay_cut },
  { KEY_POWER_CUT_FIFO, replay_cut },
  { KEY_CRASH_LOG, replay_cut },
  { KEY_CRASH_LOG_SIZE, replay_cut },
};

int
lb_params_check_replay (const struct lb_params *p, char *err, size_t errlen)
{
  if (p->replay == NULL)
    return 0;
  for (size_t i = 0; i < sizeof replay_refuses / sizeof replay_refuses[0];
       i++) {
    int k = replay_refuses[i].key;

    if (p->seen & (1u << k))
      return lb_fail (EINVAL, err, errlen,
                      "%s=%s cannot be given with replay=%s (%s)",
                      key_names[k], p->typed[k], p->replay,
                      replay_refuses[i].why);
  }
  return 0;
}

/* One of the log's sizes as the user would have typed it, with where it
 * came from, for the geometry's messages.
 */
static int
set_from_log (struct lb_params *p, int key, uint64_t bytes, char *err,
              size_t errlen)
{
  char *typed;

  if (asprintf (&typed, "%" PRIu64 " (from replay=%s)", bytes, p->replay) ==
      -1)
    return lb_fail (ENOMEM, err, errlen, "%s: out of memory", key_names[key]);
  free (p->typed[key]);
  p->typed[key] = typed;
  return 0;
}

int
lb_params_set_geometry_from_log (struct lb_params *p,
                                 const struct lb_crashlog_geometry *g,
                                 char *err, size_t errlen)
{
  if (set_from_log (p, KEY_SIZE, g->disk_size, err, errlen) == -1 ||
      set_from_log (p, KEY_BLKSIZE, g->blksize, err, errlen) == -1 ||
      set_from_log (p, KEY_LOGICAL, g->logical_blksize, err, errlen) == -1)
    return -1;
  p->geom.size_bytes = g->disk_size;
  p->geom.physical_bytes = g->blksize;
  p->geom.logical_bytes = g->logical_blksize;
  p->geometry_from_log = true;
  return 0;
}

int
lb_params_set_size_from_file (struct lb_params *p, uint64_t size_bytes,
                              char *err, size_t errlen)
{
  char *typed;

  if (asprintf (&typed, "%" PRIu64 " (the size of %s)", size_bytes, p->file) ==
      -1)
    return lb_fail (ENOMEM, err, errlen, "size: out of memory");
  free (p->typed[KEY_SIZE]);
  p->typed[KEY_SIZE] = typed;
  p->geom.size_bytes = size_bytes;
  return 0;
}

bool
lb_params_size_given (const struct lb_params *p)
{
  return p->seen & (1u << KEY_SIZE);
}

int
lb_params_finish (struct lb_params *p, struct lb_geometry *g, char *err,
                  size_t errlen)
{
  p->geom.size_str = p->typed[KEY_SIZE];
  p->geom.physical_str = p->typed[KEY_BLKSIZE];
  p->geom.logical_str = p->typed[KEY_LOGICAL];
  p->geom.max_request_str = p->typed[KEY_MAX_REQUEST];

  if (lb_params_check_replay (p, err, errlen) == -1)
    return -1;
  if (p->replay && !p->geometry_from_log)
    return lb_fail (EINVAL, err, errlen,
                    "replay=%s: the disk's size and block sizes come from "
                    "the log, which was not read (only nbdkit largeblock "
                    "serves replay=)",
                    p->replay);
  if (check_backend (p, err, errlen) == -1 ||
      lb_geometry_init (g, &p->geom, err, errlen) == -1 ||
      check_write_cache (p, g, err, errlen) == -1)
    return -1;
  return check_memory_limit (p, err, errlen);
}
