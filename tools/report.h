/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: the report -- what the probes and the integrity
 * phase found.
 *
 * report.c owns the report and the one mutex that guards it; no other
 * file sees either.  Every report_* function takes the lock for the
 * whole of its update, whichever thread calls it: the probes (main
 * thread) and the integrity workers (one thread per connection) record
 * through the same functions.  The output code reads a consistent copy
 * taken with report_read.
 */
#ifndef LARGEBLOCK_VERIFY_REPORT_H
#define LARGEBLOCK_VERIFY_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "largeblock/pattern.h"
#include "enum-counts.h"

enum probe_result { PROBE_PASS, PROBE_FAIL, PROBE_SKIP };

#define VERIFY_MAX_PROBES 32
#define VERIFY_MAX_ERRORS 20

struct probe {
  char name[96];
  enum probe_result result;
  char detail[192];
};

/* What the report holds; report_read fills a copy of it. */
struct report_data {
  struct probe probes[VERIFY_MAX_PROBES];
  unsigned nr_probes;
  const char *misaligned_policy; /* "refuse", "serve", "mixed", "n/a" */
  unsigned disconnects;

  bool integrity_run;
  unsigned rounds_done;
  uint64_t writes, trims, zeros; /* requests that succeeded */
  uint64_t bytes_written;
  uint64_t blocks_by_class[LB_PATTERN_NR_CLASSES];
  uint64_t io_errors;
  char errors[VERIFY_MAX_ERRORS][192];
  unsigned nr_errors; /* stored, at most VERIFY_MAX_ERRORS */
  uint64_t nr_errors_total;
};

/* The report and its lock (opaque). */
struct verify_report;

/* An empty report with misaligned_policy "n/a"; NULL when out of memory. */
struct verify_report *report_new (void);
void report_free (struct verify_report *rep);

/* Copy the whole report into *out under the lock. */
void report_read (struct verify_report *rep, struct report_data *out);

/* Record one probe outcome (printf-style detail); probes beyond
 * VERIFY_MAX_PROBES are dropped.
 */
void report_probe (struct verify_report *rep, const char *name,
                   enum probe_result result, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));

/* The server dropped a probe's connection. */
void report_disconnect (struct verify_report *rep);

/* The probes' verdict on misaligned requests (a string constant). */
void report_misaligned_policy (struct verify_report *rep, const char *policy);

/* The integrity phase has started, and how many rounds it covers. */
void report_integrity_started (struct verify_report *rep);
void report_rounds_done (struct verify_report *rep, unsigned rounds);

/* One write, trim or zero request of the plan succeeded. */
void report_write_done (struct verify_report *rep, uint64_t count_bytes);
void report_trim_done (struct verify_report *rep);
void report_zero_done (struct verify_report *rep);

/* Add the classes of the blocks of one read (counts[class]). */
void report_blocks (struct verify_report *rep,
                    const uint64_t counts[LB_PATTERN_NR_CLASSES]);

/* Record one data error line (printf-style); only the first
 * VERIFY_MAX_ERRORS are kept, all are counted.
 */
void report_data_error (struct verify_report *rep, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

/* A request failed: count it and record its error line, as one update. */
void report_io_error (struct verify_report *rep, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

#endif /* LARGEBLOCK_VERIFY_REPORT_H */
