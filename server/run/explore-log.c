/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run --crash-explore: a crash log's epochs, and the choice
 * among them (see explore-log.h).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashlog.h"
#include "error.h"
#include "explore-log.h"

const char *
explore_end_name (enum explore_end end)
{
  switch (end) {
  case EXPLORE_END_FLUSH: return "flush";
  case EXPLORE_END_IMPLICIT: return "implicit-flush";
  case EXPLORE_END_CUT: return "cut";
  case EXPLORE_END_LOG: return "end-of-log";
  }
  return "?";
}

void
explore_log_free (struct explore_log *log)
{
  free (log->ends);
  free (log->records);
  log->ends = NULL;
  log->records = NULL;
}

/* Room for epoch number epoch in the per-epoch arrays. */
static int
make_room (struct explore_log *log, uint64_t epoch, uint64_t *cap)
{
  uint64_t want = *cap ? *cap : 64;
  unsigned char *ends;
  uint64_t *records;

  if (epoch < *cap)
    return 0;
  while (want <= epoch)
    want *= 2;
  ends = realloc (log->ends, want);
  if (ends == NULL)
    return -1;
  log->ends = ends;
  records = realloc (log->records, want * sizeof *records);
  if (records == NULL)
    return -1;
  log->records = records;
  memset (ends + *cap, EXPLORE_END_LOG, want - *cap);
  memset (records + *cap, 0, (want - *cap) * sizeof *records);
  *cap = want;
  return 0;
}

static enum explore_end
end_of (const struct lb_crashlog_record *rec)
{
  if (rec->type == LB_CRASHLOG_CUT)
    return EXPLORE_END_CUT;
  return rec->flags & LB_CRASHLOG_IMPLICIT ? EXPLORE_END_IMPLICIT
                                           : EXPLORE_END_FLUSH;
}

/* Count rec in its epoch; a flush or cut closes it.  The reader has
 * checked that epochs rise by one after a flush or cut only.
 */
static int
count_record (struct explore_log *log, const struct lb_crashlog_record *rec,
              uint64_t *cap)
{
  if (make_room (log, rec->epoch, cap) == -1)
    return -1;
  log->records[rec->epoch]++;
  log->nr_epochs = rec->epoch + 1;
  if (rec->type == LB_CRASHLOG_FLUSH || rec->type == LB_CRASHLOG_CUT) {
    log->ends[rec->epoch] = end_of (rec);
    /* The epoch it opens exists, if empty: the log ended there. */
    if (make_room (log, rec->epoch + 1, cap) == -1)
      return -1;
    log->nr_epochs = rec->epoch + 2;
  }
  return 0;
}

int
explore_log_read (const char *path, uint64_t mark_bytes,
                  struct explore_log *log, char *err, size_t errlen)
{
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  struct lb_crashlog_geometry g;
  uint64_t limit, pos = LB_CRASHLOG_HEADER_SIZE, cap = 0;
  bool marked = false;
  int got;

  *log = (struct explore_log) { .nr_epochs = 1 };
  r = lb_crashlog_reader_open (path, &g, &limit, err, errlen);
  if (r == NULL)
    return -1;
  if (make_room (log, 0, &cap) == -1)
    goto nomem;
  while ((got = lb_crashlog_reader_next (r, &rec, err, errlen)) == 1) {
    pos += lb_crashlog_record_bytes (rec.type, rec.length);
    /* The first record that ends beyond the mark began before it or is
     * the workload's first: its epoch was open when the workload began.
     */
    if (!marked && pos > mark_bytes) {
      log->workload_epoch = rec.epoch;
      marked = true;
    }
    if (count_record (log, &rec, &cap) == -1)
      goto nomem;
  }
  lb_crashlog_reader_close (r);
  if (got == -1) {
    explore_log_free (log);
    return -1;
  }
  if (!marked) /* the workload left no record: its epoch is the last */
    log->workload_epoch = log->nr_epochs - 1;
  return 0;

nomem:
  lb_crashlog_reader_close (r);
  explore_log_free (log);
  return lb_fail (ENOMEM, err, errlen, "%s: %m", path);
}

/* ---- --epochs=LIST ---- */

/* A decimal epoch number at *p, advancing *p.  -1 if there is none. */
static int
parse_number (const char **p, uint64_t *n)
{
  char *end;

  if (**p < '0' || **p > '9')
    return -1;
  errno = 0;
  *n = strtoull (*p, &end, 10);
  if (errno)
    return -1;
  *p = end;
  return 0;
}

/* One item: "N", "N-M" or "N-". */
static int
parse_range (const char **p, uint64_t *first, uint64_t *last)
{
  if (parse_number (p, first) == -1)
    return -1;
  *last = *first;
  if (**p != '-')
    return 0;
  (*p)++;
  if (**p == ',' || **p == '\0') {
    *last = UINT64_MAX;
    return 0;
  }
  if (parse_number (p, last) == -1 || *last < *first)
    return -1;
  return 0;
}

int
explore_epochs_parse (const char *text, struct explore_epochs *e, char *err,
                      size_t errlen)
{
  const char *p = text;

  e->nr = 0;
  for (;;) {
    if (e->nr == EXPLORE_MAX_RANGES)
      return lb_fail (EINVAL, err, errlen, "--epochs=%s: more than %d items",
                      text, EXPLORE_MAX_RANGES);
    if (parse_range (&p, &e->range[e->nr].first, &e->range[e->nr].last) == -1)
      break;
    e->nr++;
    if (*p == '\0')
      return 0;
    if (*p++ != ',')
      break;
  }
  return lb_fail (EINVAL, err, errlen,
                  "--epochs=%s: must be epoch numbers and ascending ranges "
                  "joined by commas, e.g. 3,5,8-12,20- (20-: to the last)",
                  text);
}

static int
compare_epochs (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return x < y ? -1 : x > y;
}

/* Sort and drop repeats; returns the new count. */
static size_t
sort_unique (uint64_t *v, size_t n)
{
  size_t k = 0;

  qsort (v, n, sizeof *v, compare_epochs);
  for (size_t i = 0; i < n; i++)
    if (k == 0 || v[k - 1] != v[i])
      v[k++] = v[i];
  return k;
}

/* The epochs of e, all within the log. */
static uint64_t *
listed_epochs (const struct explore_log *log, const struct explore_epochs *e,
               const char *text, size_t *nr, char *err, size_t errlen)
{
  uint64_t last_epoch = log->nr_epochs - 1, total = 0, *v;
  size_t k = 0;

  for (int i = 0; i < e->nr; i++) {
    uint64_t first = e->range[i].first, last = e->range[i].last;

    if (last == UINT64_MAX)
      last = last_epoch;
    if (first > last_epoch || last > last_epoch) {
      lb_fail (EINVAL, err, errlen,
               "--epochs=%s: epoch %" PRIu64 " is beyond the log's last "
               "epoch, %" PRIu64,
               text, first > last_epoch ? first : last, last_epoch);
      return NULL;
    }
    total += last >= first ? last - first + 1 : 0;
  }
  v = malloc ((total ? total : 1) * sizeof *v);
  if (v == NULL) {
    lb_fail (ENOMEM, err, errlen, "--epochs: %m");
    return NULL;
  }
  for (int i = 0; i < e->nr; i++) {
    uint64_t last = e->range[i].last;

    if (last == UINT64_MAX)
      last = last_epoch;
    for (uint64_t x = e->range[i].first; x <= last; x++)
      v[k++] = x;
  }
  *nr = sort_unique (v, k);
  return v;
}

uint64_t *
explore_choose (const struct explore_log *log, const struct explore_epochs *e,
                const char *epochs_text, unsigned sample, size_t *nr,
                char *err, size_t errlen)
{
  uint64_t first = log->workload_epoch, count, *v;

  if (e)
    return listed_epochs (log, e, epochs_text, nr, err, errlen);
  count = log->nr_epochs - first;
  if (sample == 0 || sample > count)
    sample = count;
  v = malloc (sample * sizeof *v);
  if (v == NULL) {
    lb_fail (ENOMEM, err, errlen, "--crash-explore: %m");
    return NULL;
  }
  /* Evenly spread, the first and the last included; with one, the
   * last (the whole workload). */
  for (unsigned i = 0; i < sample; i++)
    v[i] = sample == 1 ? log->nr_epochs - 1
                       : first + (uint64_t) i * (count - 1) / (sample - 1);
  *nr = sort_unique (v, sample);
  return v;
}
