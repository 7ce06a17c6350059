/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the exports of a replay disk -- see replayexport.h. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "replayexport.h"

#define SYNTAX "epoch=K[,mode=lose|atomic|torn][,seed=S]"

/* lb_replay_state, waiting up to LB_REPLAY_EXPORT_BUSY_MS while it fails
 * with EBUSY.  A client that hangs up and at once asks for another epoch
 * must not be refused: nbdkit closes the client's socket before the
 * plugin's close destroys that client's state, so the old state may still
 * be open for a moment.  A real conflict (a client still connected at
 * another epoch) is refused once the wait is over.
 */
static struct lb_store *
state_when_free (struct lb_replay *rp, const struct lb_replay_point *p,
                 struct lb_cut_report *r, char *err, size_t errlen)
{
  long waited_ms = 0, nap_ms = 1;

  for (;;) {
    struct lb_store *s = lb_replay_state (rp, p, r, err, errlen);
    struct timespec nap = { 0, nap_ms * 1000000 };

    if (s || errno != EBUSY || waited_ms >= LB_REPLAY_EXPORT_BUSY_MS)
      return s;
    nanosleep (&nap, NULL);
    waited_ms += nap_ms;
    if (nap_ms < 64)
      nap_ms *= 2;
  }
}

/* Every message starts as lb_replay_point_parse's do: with the name. */
int
lb_replay_export_open (struct lb_replay *rp, const char *name,
                       struct lb_replay_export *x, char *err, size_t errlen)
{
  char why[512];

  memset (x, 0, sizeof *x);
  if (*name == '\0')
    return lb_fail (EINVAL, err, errlen,
                    "export name \"\": empty: name a crash state, " SYNTAX
                    ", with K from 0 to %" PRIu64
                    " (nbdinfo --list lists them)",
                    lb_replay_epochs (rp) - 1);
  if (lb_replay_point_parse (name, &x->point, err, errlen) == -1)
    return -1;
  x->store = state_when_free (rp, &x->point, &x->cut, why, sizeof why);
  if (x->store == NULL)
    return lb_fail (errno, err, errlen, "export name \"%s\": %s", name, why);
  /* The state exists, so its epoch is in range. */
  if (lb_replay_epoch_info (rp, x->point.epoch, &x->epoch) == -1)
    abort ();
  return 0;
}

void
lb_replay_export_close (struct lb_replay_export *x)
{
  if (x->store)
    x->store->ops->destroy (x->store);
  x->store = NULL;
}

/* "records 40-51, 3 blocks written", "record 40, 1 block written" or
 * "no records".
 */
static void
describe_records (const struct lb_replay_epoch_info *e, char *buf, size_t len)
{
  uint64_t n = e->end_seq - e->first_seq, b = e->blocks_written;
  const char *blocks = b == 1 ? "block" : "blocks";

  if (n == 0)
    snprintf (buf, len, "no records");
  else if (n == 1)
    snprintf (buf, len, "record %" PRIu64 ", %" PRIu64 " %s written",
              e->first_seq, b, blocks);
  else
    snprintf (buf, len,
              "records %" PRIu64 "-%" PRIu64 ", %" PRIu64 " %s written",
              e->first_seq, e->end_seq - 1, b, blocks);
}

void
lb_replay_export_describe (const struct lb_replay_export *x, char *buf,
                           size_t len)
{
  const struct lb_replay_epoch_info *e = &x->epoch;
  char name[128], records[128], when[64], report[256];

  lb_replay_point_format (&x->point, name, sizeof name);
  describe_records (e, records, sizeof records);
  if (e->end == LB_REPLAY_END_LOG)
    snprintf (when, sizeof when, "after the last record");
  else if (e->end == LB_REPLAY_END_CUT)
    snprintf (when, sizeof when, "as the live cut at seq %" PRIu64,
              e->end_seq);
  else
    snprintf (when, sizeof when, "just before the %s at seq %" PRIu64,
              lb_replay_end_name (e->end), e->end_seq);
  lb_cut_report_format (&x->cut, x->point.mode, report, sizeof report);
  snprintf (buf, len,
            "%s: the power cut that ends epoch %" PRIu64 " (%s), %s: %s", name,
            x->point.epoch, records, when, report);
}

int
lb_replay_export_list (const struct lb_replay *rp, lb_replay_export_fn fn,
                       void *opaque)
{
  uint64_t epochs = lb_replay_epochs (rp);

  for (uint64_t k = 0; k < epochs; k++) {
    struct lb_replay_epoch_info e;
    char name[64], records[128], closed[64], description[256];

    if (lb_replay_epoch_info (rp, k, &e) == -1)
      abort (); /* k < epochs */
    describe_records (&e, records, sizeof records);
    if (e.end == LB_REPLAY_END_LOG)
      snprintf (closed, sizeof closed, "open at the end of the log");
    else
      snprintf (closed, sizeof closed, "closed by the %s at seq %" PRIu64,
                lb_replay_end_name (e.end), e.end_seq);
    snprintf (name, sizeof name, "epoch=%" PRIu64, k);
    snprintf (description, sizeof description, "epoch %" PRIu64 ": %s, %s", k,
              records, closed);
    if (fn (name, description, opaque) == -1)
      return -1;
  }
  return 0;
}
