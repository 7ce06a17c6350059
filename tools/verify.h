/* largeblock-verify: what the probe, integrity and report parts share.
 *
 * The options and the export's description are filled once by main and
 * then only read.  The report is written by the main thread only; the
 * integrity phase's worker threads update its counters under
 * report->lock.
 */
#ifndef LARGEBLOCK_VERIFY_H
#define LARGEBLOCK_VERIFY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <libnbd.h>

#include "pattern.h"

/* Exit codes (documented in largeblock-verify(1)). */
enum {
  VERIFY_EXIT_OK = 0,
  VERIFY_EXIT_NONCONFORMANT = 1,
  VERIFY_EXIT_DATA_ERROR = 2,
  VERIFY_EXIT_USAGE = 3,
  VERIFY_EXIT_FAILURE = 4,      /* could not connect or run */
};

struct verify_opts {
  const char *uri;
  bool write;
  bool verify_only;
  bool json;
  bool progress;                /* stderr is a TTY and not --json */
  uint64_t seed;
  uint64_t offset_bytes;
  uint64_t size_bytes;          /* 0: the default region */
  unsigned connections;
  unsigned depth;
  unsigned rounds;
  double duration_s;
};

struct verify_export {
  uint64_t size_bytes;
  uint32_t min_bytes;           /* as advertised; 0 when not advertised */
  uint32_t preferred_bytes;
  uint32_t max_bytes;
  uint32_t block_bytes;         /* stamped block: max (minimum, 512) */
  uint32_t io_max_bytes;        /* largest integrity request */
  uint64_t region_offset_bytes;
  uint64_t region_bytes;
  bool read_only, can_trim, can_zero, can_flush, multi_conn;
};

enum probe_result { PROBE_PASS, PROBE_FAIL, PROBE_SKIP };

#define VERIFY_MAX_PROBES 32
#define VERIFY_MAX_ERRORS 20

struct probe {
  char name[96];
  enum probe_result result;
  char detail[192];
};

struct verify_report {
  struct probe probes[VERIFY_MAX_PROBES];
  unsigned nr_probes;
  const char *misaligned_policy;  /* "refuse", "serve", "mixed", "n/a" */
  unsigned disconnects;

  pthread_mutex_t lock;         /* guards everything below */
  bool integrity_run;
  unsigned rounds_done;
  uint64_t requests[3];         /* write, trim, zero */
  uint64_t bytes_written;
  uint64_t blocks_by_class[LB_PATTERN__COUNT];
  uint64_t io_errors;
  char errors[VERIFY_MAX_ERRORS][192];
  unsigned nr_errors;           /* stored, at most VERIFY_MAX_ERRORS */
  uint64_t nr_errors_total;
};

/* Open a connection to uri with libnbd's client-side checks off when
 * strict is false.  Returns NULL after printing one line on failure.
 */
struct nbd_handle *verify_connect (const char *uri, bool strict);

/* Run the conformance probes on the first bytes of the region; the write
 * probes only with opts->write.  May replace *h after a disconnect.
 */
void verify_probes (const struct verify_opts *opts,
                    const struct verify_export *ex, struct nbd_handle **h,
                    struct verify_report *rep);

/* The write phase (unless opts->verify_only) and the verify phase.
 * Returns 0, or -1 after printing one line if the run itself failed.
 */
int verify_integrity (const struct verify_opts *opts,
                      const struct verify_export *ex,
                      struct verify_report *rep);

/* Record one probe outcome (printf-style detail). */
void report_probe (struct verify_report *rep, const char *name,
                   enum probe_result result, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));

/* Record one data error line under rep->lock (printf-style). */
void report_data_error (struct verify_report *rep, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

#endif /* LARGEBLOCK_VERIFY_H */
