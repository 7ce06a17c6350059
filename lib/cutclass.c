/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: what a power cut left in a region of stamped blocks.
 *
 * Pure functions, no state; see cutclass.h.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cutclass.h"
#include "error.h"

const char *
lb_cutclass_layout_invalid (const struct lb_cutclass_layout *l)
{
  if (!lb_pattern_block_size_ok (l->logical_bytes))
    return "the logical block is not a power of two from 512 to 64k";
  if (l->physical_bytes == 0 ||
      (l->physical_bytes & (l->physical_bytes - 1)) != 0)
    return "the physical block is not a power of two";
  if (l->physical_bytes < l->logical_bytes ||
      l->physical_bytes % l->logical_bytes != 0)
    return "the physical block is not a multiple of the logical block";
  if (l->physical_bytes / l->logical_bytes > LB_CUTCLASS_MAX_LOGICAL)
    return "the physical block holds more than 128 logical blocks";
  if (l->old_gen == l->new_gen)
    return "the old and the new generation are the same";
  return NULL;
}

/* Which generation the logical block at offset_bytes holds: 'o', 'n' or
 * 'x'; for 'x', *res is its check against new_gen.
 */
static char
logical_class (const struct lb_cutclass_layout *l, uint64_t offset_bytes,
               const uint8_t *got, void *scratch,
               struct lb_pattern_result *res)
{
  struct lb_pattern_key old_key = {
    .seed = l->seed,
    .offset_bytes = offset_bytes,
    .generation = l->old_gen,
    .block_bytes = l->logical_bytes,
  };
  struct lb_pattern_key new_key = old_key;

  new_key.generation = l->new_gen;
  if (lb_pattern_check (&old_key, got, scratch, res) == LB_PATTERN_GOOD)
    return LB_CUTCLASS_LOGICAL_OLD;
  if (lb_pattern_check (&new_key, got, scratch, res) == LB_PATTERN_GOOD)
    return LB_CUTCLASS_LOGICAL_NEW;
  return LB_CUTCLASS_LOGICAL_FOREIGN;
}

enum lb_cutclass
lb_cutclass_check (const struct lb_cutclass_layout *l, uint64_t offset_bytes,
                   const void *buf, void *scratch,
                   struct lb_cutclass_result *r)
{
  const uint8_t *p = buf;
  struct lb_pattern_result res;

  assert (lb_cutclass_layout_invalid (l) == NULL);
  assert (offset_bytes % l->physical_bytes == 0);
  memset (r, 0, sizeof *r);
  r->nr_logical = l->physical_bytes / l->logical_bytes;
  for (uint32_t i = 0; i < r->nr_logical; i++) {
    uint64_t at = offset_bytes + (uint64_t) i * l->logical_bytes;
    char c = logical_class (l, at, p + (size_t) i * l->logical_bytes, scratch,
                            &res);

    r->map[i] = c;
    if (c == LB_CUTCLASS_LOGICAL_OLD)
      r->nr_old++;
    else if (c == LB_CUTCLASS_LOGICAL_NEW)
      r->nr_new++;
    else if (r->nr_foreign++ == 0) {
      r->first_foreign = i;
      r->foreign = res;
      r->foreign_key = (struct lb_pattern_key) {
        .seed = l->seed,
        .offset_bytes = at,
        .generation = l->new_gen,
        .block_bytes = l->logical_bytes,
      };
    }
  }
  r->map[r->nr_logical] = '\0';
  r->cls = r->nr_foreign         ? LB_CUTCLASS_FOREIGN
    : r->nr_old == r->nr_logical ? LB_CUTCLASS_OLD
    : r->nr_new == r->nr_logical ? LB_CUTCLASS_NEW
                                 : LB_CUTCLASS_TORN;
  return r->cls;
}

bool
lb_cutclass_allowed (enum lb_cut_mode mode, enum lb_cutclass cls)
{
  switch (cls) {
  case LB_CUTCLASS_OLD: return true;
  case LB_CUTCLASS_NEW: return mode != LB_CUT_LOSE;
  case LB_CUTCLASS_TORN: return mode == LB_CUT_TORN;
  default: return false;
  }
}

const char *
lb_cutclass_name (enum lb_cutclass cls)
{
  static const char *const names[LB_CUTCLASS__COUNT] = {
    "old",
    "new",
    "torn",
    "foreign",
  };

  return (unsigned) cls < LB_CUTCLASS__COUNT ? names[cls] : "unknown";
}

/* What mode promises, as the end of a sentence. */
static const char *
mode_rule (enum lb_cut_mode mode)
{
  switch (mode) {
  case LB_CUT_LOSE: return "loses every unflushed write";
  case LB_CUT_ATOMIC:
    return "keeps or loses each physical block whole, never a mix";
  case LB_CUT_TORN: return "keeps or loses each logical block whole";
  }
  return "?";
}

int
lb_cutclass_summary_check (const struct lb_cutclass_summary *s,
                           enum lb_cut_mode mode, char *err, size_t errlen)
{
  /* foreign first: it is wrong in every mode */
  static const enum lb_cutclass order[] = {
    LB_CUTCLASS_FOREIGN,
    LB_CUTCLASS_TORN,
    LB_CUTCLASS_NEW,
    LB_CUTCLASS_OLD,
  };

  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    enum lb_cutclass c = order[i];
    uint64_t n = s->blocks[c];
    if (n == 0 || lb_cutclass_allowed (mode, c))
      continue;
    return lb_fail (EINVAL, err, errlen,
                    "%" PRIu64 " physical block%s %s %s, but power-cut-mode "
                    "%s %s",
                    n, n == 1 ? "" : "s", n == 1 ? "is" : "are",
                    lb_cutclass_name (c), lb_cut_mode_name (mode),
                    mode_rule (mode));
  }
  return 0;
}

char *
lb_cutclass_describe (const struct lb_cutclass_layout *l,
                      uint64_t offset_bytes,
                      const struct lb_cutclass_result *r, char *buf,
                      size_t buflen)
{
  char what[192];

  if (r->cls != LB_CUTCLASS_FOREIGN) {
    snprintf (buf, buflen, "physical block at %" PRIu64 ": %s (%s)",
              offset_bytes, lb_cutclass_name (r->cls), r->map);
    return buf;
  }
  lb_pattern_describe (&r->foreign_key, &r->foreign, what, sizeof what);
  snprintf (buf, buflen,
            "physical block at %" PRIu64 ": logical block %" PRIu32
            " (at %" PRIu64 ") is neither generation %" PRIu32 " nor %" PRIu32
            ": %s",
            offset_bytes, r->first_foreign, r->foreign_key.offset_bytes,
            l->old_gen, l->new_gen, what);
  return buf;
}
