/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock fuzzing: lb_pattern_check and lb_pattern_describe, the
 * classifier largeblock-verify runs on every block it reads back from an
 * export it does not trust.
 *
 * Input: a 35-byte key header, then either the raw block (mode 0) or
 * overlay records painted over a stamped block (mode 1: the expected
 * block; mode 2: the block stamped for another offset and generation), so
 * the fuzzer reaches every class cheaply.  Properties: never crashes;
 * the class is consistent with the bytes (good exactly when the block is
 * the expected one, never-written only for zeros, torn results carry a
 * bitmap that matches their count); an untouched stamped block is
 * classified as what it is; every description is one line that fits.
 */
#include <config.h>

#include <assert.h>
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "largeblock/pattern.h"
#include "enum-counts.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define KEY_HEADER_BYTES 35
#define OVERLAY_RECORD_BYTES 4

enum mode { RAW, EXPECTED, OTHER_BLOCK, NR_MODES };

struct fuzz_case {
  enum mode mode;
  struct lb_pattern_key key;   /* what the block should hold */
  struct lb_pattern_key other; /* mode OTHER_BLOCK: what it starts as */
  size_t describe_bytes;
};

static uint64_t
le64_at (const uint8_t *p)
{
  uint64_t v;

  memcpy (&v, p, sizeof v);
  return le64toh (v);
}

static uint32_t
le32_at (const uint8_t *p)
{
  uint32_t v;

  memcpy (&v, p, sizeof v);
  return le32toh (v);
}

static void
parse_case (const uint8_t *d, struct fuzz_case *c)
{
  uint32_t block_bytes = LB_PATTERN_MIN_BLOCK_BYTES << (d[0] % 8);
  /* Offsets stay block-aligned and far from overflow, like real runs. */
  uint64_t offset_mask = ~(uint64_t) (block_bytes - 1) & ((1ull << 50) - 1);

  c->mode = (enum mode) (d[1] % NR_MODES);
  c->key = (struct lb_pattern_key) {
    .seed = le64_at (d + 2),
    .offset_bytes = le64_at (d + 10) & offset_mask,
    .generation = le32_at (d + 18),
    .block_bytes = block_bytes,
  };
  c->other = c->key;
  c->other.generation = le32_at (d + 22);
  c->other.offset_bytes = le64_at (d + 26) & offset_mask;
  c->describe_bytes = d[34] ? d[34] : 256;
}

/* Paint records (position, length, value) over buf. */
static void
apply_overlay (uint8_t *buf, uint32_t bytes, const uint8_t *d, size_t size)
{
  for (; size >= OVERLAY_RECORD_BYTES;
       d += OVERLAY_RECORD_BYTES, size -= OVERLAY_RECORD_BYTES) {
    uint32_t at = (d[0] | (uint32_t) d[1] << 8) % bytes;
    uint32_t len = d[2] + 1u;

    memset (buf + at, d[3], len < bytes - at ? len : bytes - at);
  }
}

static bool
all_zero (const uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return false;
  return true;
}

static void
check_sector_bitmap (const struct fuzz_case *c,
                     const struct lb_pattern_result *r)
{
  uint32_t nr_sectors = c->key.block_bytes / LB_PATTERN_SECTOR_BYTES;
  uint32_t marked = 0;

  for (uint32_t s = 0; s < LB_PATTERN_MAX_SECTORS; s++)
    if (lb_pattern_sector_bad (r, s)) {
      assert (s < nr_sectors);
      assert (s >= r->first_bad_sector);
      marked++;
    }
  assert (marked == r->nr_bad_sectors);
  if (r->cls != LB_PATTERN_TORN)
    assert (marked == 0 && r->first_bad_sector == 0);
  else if (marked > 0)
    assert (lb_pattern_sector_bad (r, r->first_bad_sector));
}

static void
check_class (const struct fuzz_case *c, const uint8_t *buf,
             const uint8_t *expected, const struct lb_pattern_result *r,
             bool untouched)
{
  bool same = memcmp (buf, expected, c->key.block_bytes) == 0;

  assert ((unsigned) r->cls < LB_PATTERN_NR_CLASSES);
  assert ((r->cls == LB_PATTERN_GOOD) == same);
  if (r->cls == LB_PATTERN_NEVER_WRITTEN)
    assert (c->key.generation != 0 && all_zero (buf, c->key.block_bytes));
  if (r->cls == LB_PATTERN_MISDIRECTED)
    assert (r->found_offset_bytes != c->key.offset_bytes);
  if (r->cls == LB_PATTERN_STALE)
    assert (r->found_generation < c->key.generation || c->key.generation == 0);
  if (!untouched)
    return;
  if (c->mode == EXPECTED)
    assert (r->cls == LB_PATTERN_GOOD);
  if (c->mode == OTHER_BLOCK && c->other.generation != 0 && !same) {
    if (c->other.offset_bytes != c->key.offset_bytes)
      assert (r->cls == LB_PATTERN_MISDIRECTED && r->found_intact);
    else if (c->other.generation < c->key.generation)
      assert (r->cls == LB_PATTERN_STALE);
  }
}

static void
check_description (const struct fuzz_case *c,
                   const struct lb_pattern_result *r)
{
  char *text = malloc (c->describe_bytes);
  const char *name = lb_pattern_class_name (r->cls);

  if (text == NULL)
    return;
  lb_pattern_describe (&c->key, r, text, c->describe_bytes);
  assert (strlen (text) < c->describe_bytes);
  assert (strchr (text, '\n') == NULL);
  if (c->describe_bytes > strlen (name) + 1)
    assert (strncmp (text, name, strlen (name)) == 0);
  free (text);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct fuzz_case c;
  struct lb_pattern_result r;
  uint8_t *buf, *expected;
  const uint8_t *rest = data + KEY_HEADER_BYTES;
  size_t rest_bytes;

  if (size < KEY_HEADER_BYTES)
    return 0;
  parse_case (data, &c);
  rest_bytes = size - KEY_HEADER_BYTES;
  buf = calloc (1, c.key.block_bytes);
  expected = malloc (c.key.block_bytes);
  if (buf == NULL || expected == NULL)
    goto out;
  if (c.mode == RAW)
    memcpy (buf, rest,
            rest_bytes < c.key.block_bytes ? rest_bytes : c.key.block_bytes);
  else {
    lb_pattern_fill (c.mode == EXPECTED ? &c.key : &c.other, buf);
    apply_overlay (buf, c.key.block_bytes, rest, rest_bytes);
  }
  lb_pattern_check (&c.key, buf, expected, &r);
  check_class (&c, buf, expected, &r,
               c.mode != RAW && rest_bytes < OVERLAY_RECORD_BYTES);
  check_sector_bitmap (&c, &r);
  check_description (&c, &r);
out:
  free (buf);
  free (expected);
  return 0;
}
