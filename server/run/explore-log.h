/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run --crash-explore: what the crash log of the workload's
 * run says about its epochs, and which of them to explore.
 *
 * explore_log_read walks the log once with lib/disk/crashlog's reader
 * (which checks every record) and keeps, per epoch, what closed it and
 * how many records it holds, and which epoch was open when the workload
 * began: the epoch of the record in which the log's size at that moment
 * falls (so mkfs's and mount's epochs are not explored unless asked
 * for).  The epoch list of --epochs=LIST and the choice among the
 * epochs (--epochs, --sample=N, or every epoch from the workload's
 * first) are pure functions.
 *
 * No state beyond the structs the caller owns; single-threaded.
 */
#ifndef LARGEBLOCK_RUN_EXPLORE_LOG_H
#define LARGEBLOCK_RUN_EXPLORE_LOG_H

#include <stddef.h>
#include <stdint.h>

/* What closes an epoch (lib/disk/crashlog.h: a flush or cut record, or
 * for the last epoch the end of the log).
 */
enum explore_end {
  EXPLORE_END_FLUSH,    /* a client's flush (fsync, a FUA of the log) */
  EXPLORE_END_IMPLICIT, /* the cache's own flush: it was full */
  EXPLORE_END_CUT,      /* a power cut recorded in the log */
  EXPLORE_END_LOG,      /* the end of the log: the last epoch */
};

const char *explore_end_name (enum explore_end end);

struct explore_log {
  uint64_t nr_epochs;      /* E + 1, at least 1 */
  uint64_t workload_epoch; /* the epoch open when the workload began */
  unsigned char *ends;     /* [nr_epochs]: enum explore_end */
  uint64_t *records;       /* [nr_epochs]: records in the epoch */
};

/* Read the log at path.  mark_bytes: its size when the workload began.
 * 0, or -1 with errno and a one-line message naming the log.
 */
int explore_log_read (const char *path, uint64_t mark_bytes,
                      struct explore_log *log, char *err, size_t errlen);
void explore_log_free (struct explore_log *log);

/* --epochs=LIST: epochs and ranges, "3,5,8-12,20-" ("20-": to the last
 * epoch), each ascending.
 */
#define EXPLORE_MAX_RANGES 64
struct explore_epochs {
  int nr;
  struct {
    uint64_t first, last; /* last UINT64_MAX: to the log's last epoch */
  } range[EXPLORE_MAX_RANGES];
};

/* Parse text (the option's value).  0, or -1 with a one-line message
 * naming --epochs, the value and the rule.
 */
int explore_epochs_parse (const char *text, struct explore_epochs *e,
                          char *err, size_t errlen);

/* The epochs to explore, ascending and distinct, in a new array
 * (*nr of them): those of e (NULL: not given; then epochs_text is
 * unused) if every one is in the log, else sample of them (0: all)
 * evenly spread from the workload's first epoch to the last, both
 * included.  NULL with a one-line message (an epoch beyond the log's
 * last, or ENOMEM).
 */
uint64_t *explore_choose (const struct explore_log *log,
                          const struct explore_epochs *e,
                          const char *epochs_text, unsigned sample, size_t *nr,
                          char *err, size_t errlen);

#endif /* LARGEBLOCK_RUN_EXPLORE_LOG_H */
