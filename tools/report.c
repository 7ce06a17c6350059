/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: the report and its lock.
 *
 * This file owns struct verify_report: the findings (struct report_data)
 * and the mutex that guards all of them.  Locking rule: every function
 * here takes rep->lock on entry and releases it before returning, and no
 * other file can reach the lock or the fields -- so an update from the
 * probes on the main thread and one from an integrity worker follow the
 * same discipline, and report_read sees each update whole.  Functions
 * named *_locked expect the caller to hold the lock.
 */
#include <config.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "report.h"

struct verify_report {
  pthread_mutex_t lock; /* guards data */
  struct report_data data;
};

struct verify_report *
report_new (void)
{
  struct verify_report *rep = calloc (1, sizeof *rep);

  if (!rep)
    return NULL;
  pthread_mutex_init (&rep->lock, NULL);
  rep->data.misaligned_policy = "n/a";
  return rep;
}

void
report_free (struct verify_report *rep)
{
  if (!rep)
    return;
  pthread_mutex_destroy (&rep->lock);
  free (rep);
}

void
report_read (struct verify_report *rep, struct report_data *out)
{
  pthread_mutex_lock (&rep->lock);
  *out = rep->data;
  pthread_mutex_unlock (&rep->lock);
}

void
report_probe (struct verify_report *rep, const char *name,
              enum probe_result result, const char *fmt, ...)
{
  struct report_data *d = &rep->data;
  struct probe *p;
  va_list ap;

  pthread_mutex_lock (&rep->lock);
  if (d->nr_probes < VERIFY_MAX_PROBES) {
    p = &d->probes[d->nr_probes++];
    snprintf (p->name, sizeof p->name, "%s", name);
    p->result = result;
    va_start (ap, fmt);
    vsnprintf (p->detail, sizeof p->detail, fmt, ap);
    va_end (ap);
  }
  pthread_mutex_unlock (&rep->lock);
}

void
report_disconnect (struct verify_report *rep)
{
  pthread_mutex_lock (&rep->lock);
  rep->data.disconnects++;
  pthread_mutex_unlock (&rep->lock);
}

void
report_misaligned_policy (struct verify_report *rep, const char *policy)
{
  pthread_mutex_lock (&rep->lock);
  rep->data.misaligned_policy = policy;
  pthread_mutex_unlock (&rep->lock);
}

void
report_integrity_started (struct verify_report *rep)
{
  pthread_mutex_lock (&rep->lock);
  rep->data.integrity_run = true;
  pthread_mutex_unlock (&rep->lock);
}

void
report_rounds_done (struct verify_report *rep, unsigned rounds)
{
  pthread_mutex_lock (&rep->lock);
  rep->data.rounds_done = rounds;
  pthread_mutex_unlock (&rep->lock);
}

void
report_write_done (struct verify_report *rep, uint64_t count_bytes)
{
  pthread_mutex_lock (&rep->lock);
  rep->data.writes++;
  rep->data.bytes_written += count_bytes;
  pthread_mutex_unlock (&rep->lock);
}

void
report_trim_done (struct verify_report *rep)
{
  pthread_mutex_lock (&rep->lock);
  rep->data.trims++;
  pthread_mutex_unlock (&rep->lock);
}

void
report_zero_done (struct verify_report *rep)
{
  pthread_mutex_lock (&rep->lock);
  rep->data.zeros++;
  pthread_mutex_unlock (&rep->lock);
}

void
report_blocks (struct verify_report *rep,
               const uint64_t counts[LB_PATTERN_NR_CLASSES])
{
  pthread_mutex_lock (&rep->lock);
  for (int c = 0; c < LB_PATTERN_NR_CLASSES; c++)
    rep->data.blocks_by_class[c] += counts[c];
  pthread_mutex_unlock (&rep->lock);
}

/* Keep the line if there is room; count it either way. */
static void
add_error_locked (struct report_data *d, const char *fmt, va_list ap)
{
  if (d->nr_errors < VERIFY_MAX_ERRORS)
    vsnprintf (d->errors[d->nr_errors++], sizeof d->errors[0], fmt, ap);
  d->nr_errors_total++;
}

void
report_data_error (struct verify_report *rep, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  pthread_mutex_lock (&rep->lock);
  add_error_locked (&rep->data, fmt, ap);
  pthread_mutex_unlock (&rep->lock);
  va_end (ap);
}

void
report_io_error (struct verify_report *rep, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  pthread_mutex_lock (&rep->lock);
  rep->data.io_errors++;
  add_error_locked (&rep->data, fmt, ap);
  pthread_mutex_unlock (&rep->lock);
  va_end (ap);
}
