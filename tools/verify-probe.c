/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: block-size conformance probes.
 *
 * Aligned requests at the advertised minimum, preferred and maximum sizes
 * must succeed; requests above the maximum must be refused; misaligned
 * requests must be either refused with EINVAL, touching nothing, or served
 * correctly.  The probes use the first bytes of the region and a target
 * that lets the other side decide: an NBD handle with libnbd's own checks
 * switched off, or a descriptor opened O_DIRECT whose requests go to the
 * kernel unchecked (it refuses misaligned ones with EINVAL).  A
 * descriptor's maximum is not a limit (the kernel splits larger
 * requests), so the above-maximum probes are skipped there.  The
 * three buffers are as long as the largest request the probes will make
 * on this export and region (probe_buffer_bytes), not libnbd's limit.
 * Single-threaded: runs on the main thread before the integrity phase.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "largeblock/aligned-io.h"
#include "verify.h"

#define LIBNBD_MAX_REQUEST_BYTES (64u << 20)
/* what the aligned probes use when the export advertises no size */
#define MINIMUM_FALLBACK_BYTES LB_PATTERN_MIN_BLOCK_BYTES
#define PREFERRED_FALLBACK_BYTES 4096u
#define MAXIMUM_FALLBACK_BYTES (32u << 20)

enum misaligned_verdict { MIS_REFUSED, MIS_SERVED, MIS_BROKEN, MIS_SKIPPED };

struct probe_ctx {
  const struct verify_opts *opts;
  const struct verify_export *ex;
  struct target **t;
  struct verify_report *rep;
  uint8_t *expect, *got, *data; /* each buffer_bytes long */
  uint64_t buffer_bytes;
  unsigned refused, served;
};

static void
fill_bytes (uint8_t *buf, uint64_t count, uint64_t tag)
{
  uint64_t x = tag * 0x9e3779b97f4a7c15ull + 1;

  for (uint64_t i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    buf[i] = (uint8_t) x;
  }
}

/* One synchronous request; 0, or -1 with the server's or the kernel's
 * errno in *err_no.
 */
static int
do_io (struct target *t, bool write, void *buf, uint64_t count,
       uint64_t offset, int *err_no)
{
  int r = write ? t->ops->pwrite (t, buf, count, offset)
                : t->ops->pread (t, buf, count, offset);

  *err_no = 0;
  if (r == -1)
    *err_no = errno ? errno : EIO;
  return r;
}

/* A set-up or check request of any length, split so that no piece
 * exceeds the advertised maximum (a multiple of the minimum, so the
 * pieces stay aligned): the tool must not break the rule it checks.
 */
static int
do_io_within_max (struct target *t, const struct verify_export *ex, bool write,
                  void *buf, uint64_t count, uint64_t offset, int *err_no)
{
  uint64_t piece = ex->max_bytes ? ex->max_bytes : count;

  for (uint64_t done = 0; done < count; done += piece) {
    uint64_t n = count - done < piece ? count - done : piece;

    if (do_io (t, write, (char *) buf + done, n, offset + done, err_no) == -1)
      return -1;
  }
  return 0;
}

/* After a disconnect, count it and open a fresh connection. */
static bool
reconnect_if_dead (struct probe_ctx *c)
{
  struct target *fresh;

  if (!(*c->t)->ops->is_dead (*c->t))
    return false;
  report_disconnect (c->rep);
  fresh = target_open (c->opts->uri, c->opts->path_fd, false, c->opts->write);
  if (fresh) {
    (*c->t)->ops->close (*c->t);
    *c->t = fresh;
  }
  return true;
}

static const char *
io_name (bool write)
{
  return write ? "write" : "read";
}

/* The size to probe for one advertised block size: the NBD default
 * (fallback) when not advertised, capped by the region and libnbd's
 * request limit.
 */
static uint64_t
aligned_probe_bytes (const struct verify_export *ex, uint32_t advertised,
                     uint32_t fallback)
{
  uint64_t cap = ex->region_bytes < LIBNBD_MAX_REQUEST_BYTES
    ? ex->region_bytes
    : LIBNBD_MAX_REQUEST_BYTES;
  uint64_t count = advertised ? advertised : fallback;

  cap -= cap % ex->block_bytes;
  return count > cap ? cap : count;
}

static void
probe_aligned (struct probe_ctx *c, uint32_t advertised, uint32_t fallback,
               const char *what)
{
  uint64_t base = c->ex->region_offset_bytes;
  char label[64], name[96];
  uint64_t count = aligned_probe_bytes (c->ex, advertised, fallback);
  bool capped = count < (advertised ? advertised : fallback);
  int err_no;

  assert (count <= c->buffer_bytes);
  snprintf (label, sizeof label, "%s%s%s", what,
            advertised ? "" : ", not advertised", capped ? ", capped" : "");
  for (int w = c->opts->write; w >= 0; w--) {
    snprintf (name, sizeof name, "%s %" PRIu64 " (%s)", io_name (w), count,
              label);
    fill_bytes (c->data, count, count);
    if (do_io (*c->t, w, c->data, count, base, &err_no) == -1) {
      report_probe (c->rep, name, PROBE_FAIL, "failed: %s%s",
                    strerror (err_no),
                    reconnect_if_dead (c) ? " (server disconnected)" : "");
      continue;
    }
    if (w &&
        (do_io (*c->t, false, c->got, count, base, &err_no) == -1 ||
         memcmp (c->got, c->data, count) != 0)) {
      report_probe (c->rep, name, PROBE_FAIL, "read back differs");
      continue;
    }
    report_probe (c->rep, name, PROBE_PASS, "ok");
  }
}

/* One block above the advertised maximum. */
static uint64_t
oversized_probe_bytes (const struct verify_export *ex)
{
  return (uint64_t) ex->max_bytes + ex->block_bytes;
}

/* Whether there is a maximum that must be enforced, and a request above
 * it fits the region and libnbd.
 */
static bool
oversized_probe_runs (const struct verify_export *ex)
{
  uint64_t count = oversized_probe_bytes (ex);

  return ex->max_bytes != 0 && ex->max_enforced && count <= ex->region_bytes &&
    count <= LIBNBD_MAX_REQUEST_BYTES;
}

static void
probe_oversized (struct probe_ctx *c)
{
  uint64_t count = oversized_probe_bytes (c->ex);
  int err_no;

  for (int w = c->opts->write; w >= 0; w--) {
    char name[96];
    snprintf (name, sizeof name, "%s %" PRIu64 " (above maximum)", io_name (w),
              count);
    if (!oversized_probe_runs (c->ex)) {
      report_probe (c->rep, name, PROBE_SKIP,
                    c->ex->max_bytes == 0 ? "no maximum advertised"
                      : !c->ex->max_enforced
                      ? "not a limit here: the kernel splits larger requests"
                      : "above the region or libnbd's 64M limit");
      continue;
    }
    assert (count <= c->buffer_bytes);
    fill_bytes (c->data, count, count);
    if (do_io (*c->t, w, c->data, count, c->ex->region_offset_bytes,
               &err_no) == 0)
      report_probe (c->rep, name, PROBE_FAIL, "accepted, maximum is %" PRIu32,
                    c->ex->max_bytes);
    else if (reconnect_if_dead (c))
      report_probe (c->rep, name, PROBE_PASS, "refused by disconnecting");
    else if (err_no == EINVAL || err_no == EOVERFLOW || err_no == ENOMEM)
      report_probe (c->rep, name, PROBE_PASS, "refused: %s",
                    strerror (err_no));
    else
      report_probe (c->rep, name, PROBE_FAIL,
                    "refused with a wrong errno: "
                    "%s",
                    strerror (err_no));
  }
}

/* The misaligned probes work in an area of three minimum blocks at the
 * start of the region; their requests stay inside it.
 */
static uint64_t
misaligned_area_bytes (const struct verify_export *ex)
{
  return 3 * (uint64_t) ex->min_bytes;
}

/* Whether anything can be misaligned, and the area fits the region. */
static bool
misaligned_probes_run (const struct verify_export *ex)
{
  return ex->min_bytes > 1 && misaligned_area_bytes (ex) <= ex->region_bytes;
}

/* Put the area's known content in c->expect (writing it with --write). */
static int
prepare_area (struct probe_ctx *c, uint64_t area_bytes, const char *name)
{
  uint64_t base = c->ex->region_offset_bytes;
  int err_no;

  fill_bytes (c->expect, area_bytes, area_bytes + 7);
  if ((c->opts->write &&
       do_io_within_max (*c->t, c->ex, true, c->expect, area_bytes, base,
                         &err_no) == -1) ||
      do_io_within_max (*c->t, c->ex, false, c->expect, area_bytes, base,
                        &err_no) == -1) {
    report_probe (c->rep, name, PROBE_FAIL,
                  "aligned set-up of %" PRIu64 " bytes failed: %s", area_bytes,
                  strerror (err_no));
    reconnect_if_dead (c);
    return -1;
  }
  return 0;
}

/* The misaligned request itself failed: judge errno and the data. */
static enum misaligned_verdict
judge_refusal (struct probe_ctx *c, const char *name, bool write, int err_no,
               bool changed)
{
  if (changed) {
    report_probe (c->rep, name, PROBE_FAIL, "refused (%s) but data changed",
                  strerror (err_no));
    return MIS_BROKEN;
  }
  if (err_no != EINVAL) {
    report_probe (c->rep, name, PROBE_FAIL,
                  "refused with a wrong errno: "
                  "%s (expected EINVAL)",
                  strerror (err_no));
    return MIS_BROKEN;
  }
  report_probe (c->rep, name, PROBE_PASS, "refused: EINVAL%s",
                write ? ", data untouched" : "");
  return MIS_REFUSED;
}

/* The misaligned request succeeded: it must have done exactly its job. */
static enum misaligned_verdict
judge_service (struct probe_ctx *c, const char *name, bool ok)
{
  report_probe (c->rep, name, ok ? PROBE_PASS : PROBE_FAIL,
                ok ? "served correctly" : "succeeded with wrong data");
  return ok ? MIS_SERVED : MIS_BROKEN;
}

static enum misaligned_verdict
probe_misaligned (struct probe_ctx *c, bool write, uint64_t delta_bytes,
                  uint64_t count, const char *what)
{
  uint64_t base = c->ex->region_offset_bytes;
  uint64_t area_bytes = misaligned_area_bytes (c->ex);
  char name[96];
  int err_no, read_errno, r;

  assert (area_bytes <= c->buffer_bytes && delta_bytes + count <= area_bytes);

  snprintf (name, sizeof name, "%s %" PRIu64 " at +%" PRIu64 " (%s)",
            io_name (write), count, delta_bytes, what);
  if (prepare_area (c, area_bytes, name) == -1)
    return MIS_BROKEN;
  fill_bytes (c->data, count, delta_bytes + count);
  r = do_io (*c->t, write, write ? c->data : c->got, count, base + delta_bytes,
             &err_no);
  if (r == -1 && reconnect_if_dead (c)) {
    report_probe (c->rep, name, PROBE_FAIL, "server disconnected");
    return MIS_BROKEN;
  }
  if (!write)
    return r == 0
      ? judge_service (c, name,
                       memcmp (c->got, c->expect + delta_bytes, count) == 0)
      : judge_refusal (c, name, false, err_no, false);
  if (do_io_within_max (*c->t, c->ex, false, c->got, area_bytes, base,
                        &read_errno) == -1) {
    report_probe (c->rep, name, PROBE_FAIL,
                  "reading the area back failed: "
                  "%s",
                  strerror (read_errno));
    reconnect_if_dead (c);
    return MIS_BROKEN;
  }
  if (r == -1)
    return judge_refusal (c, name, true, err_no,
                          memcmp (c->got, c->expect, area_bytes) != 0);
  memcpy (c->expect + delta_bytes, c->data, count);
  return judge_service (c, name, memcmp (c->got, c->expect, area_bytes) == 0);
}

static void
probe_all_misaligned (struct probe_ctx *c)
{
  uint32_t m = c->ex->min_bytes;
  unsigned broken = 0;

  if (!misaligned_probes_run (c->ex)) {
    report_probe (c->rep, "misaligned requests", PROBE_SKIP,
                  m <= 1
                    ? "no minimum block size above 1: nothing is misaligned"
                    : "region smaller than 3 minimum blocks");
    report_misaligned_policy (c->rep, "n/a");
    return;
  }
  for (int w = 0; w <= (int) c->opts->write; w++) {
    enum misaligned_verdict v[2] = {
      probe_misaligned (c, w, m / 2, m, "misaligned offset"),
      probe_misaligned (c, w, 0, m + m / 2, "misaligned length"),
    };
    for (int i = 0; i < 2; i++) {
      c->refused += v[i] == MIS_REFUSED;
      c->served += v[i] == MIS_SERVED;
      broken += v[i] == MIS_BROKEN;
    }
  }
  report_misaligned_policy (c->rep,
                            broken              ? "broken"
                              : c->served == 0  ? "refuse"
                              : c->refused == 0 ? "serve"
                                                : "mixed");
}

/* The largest request any probe will make on this export and region. */
static uint64_t
probe_buffer_bytes (const struct verify_export *ex)
{
  const uint64_t sizes[] = {
    aligned_probe_bytes (ex, ex->min_bytes, MINIMUM_FALLBACK_BYTES),
    aligned_probe_bytes (ex, ex->preferred_bytes, PREFERRED_FALLBACK_BYTES),
    aligned_probe_bytes (ex, ex->max_bytes, MAXIMUM_FALLBACK_BYTES),
    oversized_probe_runs (ex) ? oversized_probe_bytes (ex) : 0,
    misaligned_probes_run (ex) ? misaligned_area_bytes (ex) : 0,
  };
  uint64_t bytes = 0;

  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i] > bytes)
      bytes = sizes[i];
  return bytes;
}

void
verify_probes (const struct verify_opts *opts, const struct verify_export *ex,
               struct target **t, struct verify_report *rep)
{
  uint64_t bytes = probe_buffer_bytes (ex);
  struct probe_ctx c = {
    .opts = opts,
    .ex = ex,
    .t = t,
    .rep = rep,
    .expect = lb_aligned_alloc (VERIFY_BUFFER_ALIGN_BYTES, bytes),
    .got = lb_aligned_alloc (VERIFY_BUFFER_ALIGN_BYTES, bytes),
    .data = lb_aligned_alloc (VERIFY_BUFFER_ALIGN_BYTES, bytes),
    .buffer_bytes = bytes,
  };

  if (!c.expect || !c.got || !c.data) {
    report_probe (rep, "probe buffers", PROBE_FAIL, "out of memory");
    goto out;
  }
  probe_aligned (&c, ex->min_bytes, MINIMUM_FALLBACK_BYTES, "minimum");
  probe_aligned (&c, ex->preferred_bytes, PREFERRED_FALLBACK_BYTES,
                 "preferred");
  probe_aligned (&c, ex->max_bytes, MAXIMUM_FALLBACK_BYTES, "maximum");
  probe_oversized (&c);
  probe_all_misaligned (&c);
out:
  free (c.expect);
  free (c.got);
  free (c.data);
}
