/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the user-facing parameters.
 *
 * Owns the parameter names of nbdkit-largeblock-plugin(1)'s PARAMETERS
 * (docs/nbdkit-largeblock-plugin.pod: size, blksize, logical-blksize,
 * max-request, misaligned, memory-limit, statsfile, file, direct,
 * keep-capabilities, the volatile write cache's write-cache,
 * write-cache-size, power-cut-mode, power-cut-seed, power-cut-after,
 * power-cut-fifo, crash-log, crash-log-size, and replay), their parsing
 * and the cross-parameter rules, so that the nbdkit plugin and the
 * programs that start it (largeblock-run) refuse exactly the same inputs
 * with exactly the same messages.
 *
 * replay=LOG serves the crash states of a crash log: the disk's size and
 * block sizes are the log's (lb_params_set_geometry_from_log, once the
 * caller has read it), and every parameter that would describe another
 * disk (size, block sizes, file, memory, statistics, the write cache and
 * its power cuts) is refused beside it.
 *
 * A struct lb_params belongs to one thread (nbdkit's configuration phase);
 * no locking.
 */
#ifndef LARGEBLOCK_PARAMS_H
#define LARGEBLOCK_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crashlog.h"
#include "largeblock/geometry.h"
#include "wcache.h"

enum lb_misaligned_policy {
  LB_MISALIGNED_ERROR, /* EINVAL, like a real LBS device */
  LB_MISALIGNED_ALLOW, /* serve it correctly */
};

/* 64 MiB: the write cache's default bound. */
#define LB_WRITE_CACHE_DEFAULT_BYTES (UINT64_C (64) << 20)
/* 1 GiB: the crash log's default bound (crash-log-size). */
#define LB_CRASH_LOG_DEFAULT_BYTES (UINT64_C (1) << 30)

struct lb_params {
  struct lb_geometry_request geom;
  enum lb_misaligned_policy misaligned;
  uint64_t memory_limit_bytes; /* 0: unlimited */
  const char *statsfile;       /* NULL: none; points into typed[] */
  const char *file;            /* NULL: a RAM disk; points into typed[] */
  bool direct;                 /* file= with O_DIRECT */
  bool read_only;              /* not a key: nbdkit -r, set by the caller */
  bool keep_capabilities;      /* do not drop capabilities after start */
  bool write_cache_volatile;   /* write-cache=volatile */
  /* The cache's mode, seed (a fresh one unless power-cut-seed= was
   * given), size and power-cut-after (0: none).
   */
  struct lb_wcache_config wcache;
  const char *power_cut_fifo; /* NULL: none; points into typed[] */
  const char *crash_log;      /* NULL: none; points into typed[] */
  uint64_t crash_log_bytes;   /* crash-log-size */
  const char *replay;         /* NULL: none; points into typed[] */
  bool geometry_from_log;     /* lb_params_set_geometry_from_log ran */
  /* Copies of what the user typed, for messages. */
  char *typed[20];
  unsigned seen; /* bit per key, to refuse repeats */
};

void lb_params_init (struct lb_params *p);
void lb_params_free (struct lb_params *p);

/* Apply one key=value.  Returns 0, or -1 with errno = EINVAL (bad value,
 * unknown or repeated key) or ENOMEM, and a one-line message in err.
 */
int lb_params_set (struct lb_params *p, const char *key, const char *value,
                   char *err, size_t errlen);

/* Check the parameters together and compute the geometry (with replay=,
 * from the log's, so only after lb_params_set_geometry_from_log).
 * Returns 0, or -1 with errno = EINVAL and a one-line message in err.
 */
int lb_params_finish (struct lb_params *p, struct lb_geometry *g, char *err,
                      size_t errlen);

/* True when the user gave size= (a file disk may take its file's size). */
bool lb_params_size_given (const struct lb_params *p);

/* Take the size from the backing file, so messages say where it came
 * from.  Returns 0, or -1 with errno = ENOMEM.
 */
int lb_params_set_size_from_file (struct lb_params *p, uint64_t size_bytes,
                                  char *err, size_t errlen);

/* replay=: refuse every parameter given beside it that replay does not
 * take, before the log is read.  Returns 0 (also without replay), or -1
 * with errno = EINVAL and a one-line message naming the parameter, its
 * value and the log.  lb_params_finish checks the same.
 */
int lb_params_check_replay (const struct lb_params *p, char *err,
                            size_t errlen);

/* replay=: take the disk's size and block sizes from the log's header g,
 * so messages say where they came from.  Returns 0, or -1 with errno =
 * ENOMEM.
 */
int lb_params_set_geometry_from_log (struct lb_params *p,
                                     const struct lb_crashlog_geometry *g,
                                     char *err, size_t errlen);

const char *lb_misaligned_policy_name (enum lb_misaligned_policy p);

#endif /* LARGEBLOCK_PARAMS_H */
