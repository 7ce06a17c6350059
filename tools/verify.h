/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: what the probe, integrity and output parts share.
 *
 * The options and the export's description are filled once by main and
 * then only read.  The report (report.h) is updated only through its
 * report_* functions, which lock it themselves.
 */
#ifndef LARGEBLOCK_VERIFY_H
#define LARGEBLOCK_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "largeblock/pattern.h"
#include "wcache.h"
#include "report.h"
#include "target.h"

/* Exit codes (documented in largeblock-verify(1)). */
enum {
  VERIFY_EXIT_OK = 0,
  VERIFY_EXIT_NONCONFORMANT = 1,
  VERIFY_EXIT_DATA_ERROR = 2,
  VERIFY_EXIT_USAGE = 3,
  VERIFY_EXIT_FAILURE = 4, /* could not connect or run */
  VERIFY_EXIT_REFUSED = 5, /* --write on a path in use or with a signature */
};

/* Buffers are aligned for O_DIRECT: every kernel's memory alignment
 * rule is at most a page.
 */
#define VERIFY_BUFFER_ALIGN_BYTES 4096u

struct verify_opts {
  const char *uri; /* an NBD URI, or the path of a device or file */
  int path_fd;     /* a path: its claim (target_claim_path); else -1 */
  bool write;
  bool force; /* --write over a filesystem or partition table */
  bool verify_only;
  bool json;
  bool progress; /* stderr is a TTY and not --json */
  uint64_t seed;
  uint64_t offset_bytes;
  uint64_t size_bytes; /* 0: the default region */
  unsigned connections;
  unsigned depth;
  unsigned rounds;
  double duration_s;
  /* --power-cut: NULL, or "fifo:PATH", "run:COMMAND" or "wait" */
  const char *power_cut;
  bool expect_mode_given;
  enum lb_cut_mode expect_mode;
  double cut_timeout_s;
  uint64_t physical_bytes; /* --physical-block; 0: the preferred size */
};

struct verify_export {
  uint64_t size_bytes;
  uint32_t min_bytes; /* as advertised; 0 when not advertised */
  uint32_t preferred_bytes;
  uint32_t max_bytes;
  bool max_enforced;       /* NBD: above max_bytes must be refused */
  uint32_t block_bytes;    /* stamped block: max (minimum, 512) */
  uint32_t physical_bytes; /* --power-cut: a multiple of block_bytes */
  uint32_t io_max_bytes;   /* largest integrity request */
  uint64_t region_offset_bytes;
  uint64_t region_bytes;
  bool read_only, can_trim, can_zero, can_flush, multi_conn;
  uint32_t dio_offset_align_bytes, dio_mem_align_bytes; /* 0: NBD */
  const char *dio_source;
};

/* Run the conformance probes on the first bytes of the region; the write
 * probes only with opts->write.  May replace *t after a disconnect.
 */
void verify_probes (const struct verify_opts *opts,
                    const struct verify_export *ex, struct target **t,
                    struct verify_report *rep);

/* The write phase (unless opts->verify_only) and the verify phase.
 * Returns 0, or -1 after printing one line if the run itself failed.
 */
int verify_integrity (const struct verify_opts *opts,
                      const struct verify_export *ex,
                      struct verify_report *rep);

/* --power-cut: write generation 1 over the region, flush, write
 * generation 2, make the power fail, reconnect, classify every physical
 * block (lib/cutclass) and print the report.  Takes t, the connection
 * open since the start, and closes it.  Returns the exit code.
 */
int verify_power_cut (const struct verify_opts *opts,
                      const struct verify_export *ex, struct target *t);

#endif /* LARGEBLOCK_VERIFY_H */
