/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: stamped verification blocks and their classifier.
 *
 * Pure functions, no state; see pattern.h.
 */
#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "largeblock/pattern.h"
#include "enum-counts.h"

static const uint8_t magic[8] = { 'L', 'B', 'V', 'E', 'R', 'I', 'F', 'Y' };

enum {
  HDR_MAGIC = 0,
  HDR_OFFSET = 8,
  HDR_SEED = 16,
  HDR_GENERATION = 24,
  HDR_BLOCK_BYTES = 28,
  HDR_CHECKSUM = 32,
};

static void
put_le (uint8_t *p, uint64_t v, unsigned nr_bytes)
{
  for (unsigned i = 0; i < nr_bytes; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t
get_le (const uint8_t *p, unsigned nr_bytes)
{
  uint64_t v = 0;

  for (unsigned i = 0; i < nr_bytes; i++)
    v |= (uint64_t) p[i] << (8 * i);
  return v;
}

/* splitmix64's finaliser: a good 64-bit bijective mixer. */
static uint64_t
mix64 (uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* Checksum of a block: every 8-byte word mixed into a running state, with
 * the checksum field read as zero.
 */
static uint64_t
block_checksum (const uint8_t *block, uint32_t block_bytes)
{
  uint64_t h = mix64 (block_bytes);

  for (uint32_t i = 0; i < block_bytes; i += 8) {
    uint64_t w = i == HDR_CHECKSUM ? 0 : get_le (block + i, 8);
    h = mix64 (h ^ w) + i;
  }
  return h;
}

/* The payload depends on every field of the key, block size included, so
 * no sector of one block equals a sector of another.
 */
static uint64_t
payload_key (const struct lb_pattern_key *key)
{
  return mix64 (mix64 (key->seed ^ 0x6c62766572696679ull) ^
                key->offset_bytes) ^
    mix64 (((uint64_t) key->block_bytes << 32) | key->generation);
}

bool
lb_pattern_block_size_ok (uint32_t block_bytes)
{
  return block_bytes >= LB_PATTERN_MIN_BLOCK_BYTES &&
    block_bytes <= LB_PATTERN_MAX_BLOCK_BYTES &&
    (block_bytes & (block_bytes - 1)) == 0;
}

void
lb_pattern_fill (const struct lb_pattern_key *key, void *buf)
{
  uint8_t *p = buf;
  uint64_t k = payload_key (key);

  assert (lb_pattern_block_size_ok (key->block_bytes));
  if (key->generation == 0) {
    memset (buf, 0, key->block_bytes);
    return;
  }
  for (uint32_t i = LB_PATTERN_HEADER_BYTES; i < key->block_bytes; i += 8)
    put_le (p + i, mix64 (k + i), 8);
  memcpy (p + HDR_MAGIC, magic, sizeof magic);
  put_le (p + HDR_OFFSET, key->offset_bytes, 8);
  put_le (p + HDR_SEED, key->seed, 8);
  put_le (p + HDR_GENERATION, key->generation, 4);
  put_le (p + HDR_BLOCK_BYTES, key->block_bytes, 4);
  put_le (p + HDR_CHECKSUM, 0, 8);
  put_le (p + HDR_CHECKSUM, block_checksum (p, key->block_bytes), 8);
}

void
lb_pattern_fill_range (const struct lb_pattern_key *key, void *buf,
                       size_t count)
{
  struct lb_pattern_key k = *key;
  uint8_t *p = buf;

  assert (count % key->block_bytes == 0);
  for (size_t done = 0; done < count; done += k.block_bytes) {
    k.offset_bytes = key->offset_bytes + done;
    lb_pattern_fill (&k, p + done);
  }
}

static bool
is_zero (const uint8_t *p, size_t n)
{
  return n == 0 || (p[0] == 0 && memcmp (p, p + 1, n - 1) == 0);
}

/* Mark the sectors that differ from the expected block; returns how many
 * sectors match.
 */
static uint32_t
compare_sectors (const uint8_t *got, const uint8_t *want, uint32_t block_bytes,
                 struct lb_pattern_result *r)
{
  uint32_t nr_sectors = block_bytes / LB_PATTERN_SECTOR_BYTES, matching = 0;

  for (uint32_t s = 0; s < nr_sectors; s++) {
    size_t at = (size_t) s * LB_PATTERN_SECTOR_BYTES;
    if (memcmp (got + at, want + at, LB_PATTERN_SECTOR_BYTES) == 0) {
      matching++;
      continue;
    }
    if (r->nr_bad_sectors++ == 0)
      r->first_bad_sector = s;
    r->bad_sectors[s / 8] |= (uint8_t) (1u << (s % 8));
  }
  return matching;
}

/* A stamped header of this run and block size: fill in what it names. */
static bool
read_header (const struct lb_pattern_key *key, const uint8_t *got,
             struct lb_pattern_result *r)
{
  if (memcmp (got + HDR_MAGIC, magic, sizeof magic) != 0 ||
      get_le (got + HDR_SEED, 8) != key->seed ||
      get_le (got + HDR_BLOCK_BYTES, 4) != key->block_bytes)
    return false;
  r->found_offset_bytes = get_le (got + HDR_OFFSET, 8);
  r->found_generation = (uint32_t) get_le (got + HDR_GENERATION, 4);
  r->found_intact = get_le (got + HDR_CHECKSUM, 8) ==
    block_checksum (got, key->block_bytes);
  return true;
}

static enum lb_pattern_class
classify (const struct lb_pattern_key *key, const uint8_t *got,
          const uint8_t *want, struct lb_pattern_result *r)
{
  uint32_t nr_sectors = key->block_bytes / LB_PATTERN_SECTOR_BYTES;
  uint32_t matching;

  if (memcmp (got, want, key->block_bytes) == 0)
    return LB_PATTERN_GOOD;
  matching = compare_sectors (got, want, key->block_bytes, r);
  if (key->generation != 0 && matching > 0 && matching < nr_sectors)
    return LB_PATTERN_TORN;
  if (is_zero (got, key->block_bytes))
    return LB_PATTERN_NEVER_WRITTEN;
  if (!read_header (key, got, r))
    return LB_PATTERN_FOREIGN;
  if (r->found_offset_bytes != key->offset_bytes)
    return LB_PATTERN_MISDIRECTED;
  if (key->generation == 0 || r->found_generation < key->generation)
    return LB_PATTERN_STALE;
  if (r->found_generation == key->generation && !r->found_intact)
    return LB_PATTERN_TORN;
  return LB_PATTERN_FOREIGN;
}

enum lb_pattern_class
lb_pattern_check (const struct lb_pattern_key *key, const void *buf,
                  void *scratch, struct lb_pattern_result *r)
{
  memset (r, 0, sizeof *r);
  lb_pattern_fill (key, scratch);
  r->cls = classify (key, buf, scratch, r);
  if (r->cls != LB_PATTERN_TORN) {
    r->nr_bad_sectors = r->first_bad_sector = 0;
    memset (r->bad_sectors, 0, sizeof r->bad_sectors);
  }
  return r->cls;
}

bool
lb_pattern_sector_bad (const struct lb_pattern_result *r, uint32_t i)
{
  return i < LB_PATTERN_MAX_SECTORS && (r->bad_sectors[i / 8] >> (i % 8)) & 1;
}

const char *
lb_pattern_class_name (enum lb_pattern_class cls)
{
  static const char *const names[LB_PATTERN_NR_CLASSES] = {
    "good", "never-written", "stale", "misdirected", "torn", "foreign",
  };

  return (unsigned) cls < LB_PATTERN_NR_CLASSES ? names[cls] : "unknown";
}

/* Append "a,b-c" style ranges of the bad sectors to buf at *len. */
static void
describe_sectors (const struct lb_pattern_result *r, uint32_t nr_sectors,
                  char *buf, size_t buflen, size_t *len)
{
  const char *sep = "";

  for (uint32_t s = 0; s < nr_sectors && *len < buflen; s++) {
    uint32_t end = s;
    if (!lb_pattern_sector_bad (r, s))
      continue;
    while (end + 1 < nr_sectors && lb_pattern_sector_bad (r, end + 1))
      end++;
    *len += (size_t) (end == s
                        ? snprintf (buf + *len, buflen - *len, "%s%" PRIu32,
                                    sep, s)
                        : snprintf (buf + *len, buflen - *len,
                                    "%s%" PRIu32 "-%" PRIu32, sep, s, end));
    sep = ",";
    s = end;
  }
}

char *
lb_pattern_describe (const struct lb_pattern_key *key,
                     const struct lb_pattern_result *r, char *buf,
                     size_t buflen)
{
  uint32_t nr_sectors = key->block_bytes / LB_PATTERN_SECTOR_BYTES;
  size_t len = 0;

  switch (r->cls) {
  case LB_PATTERN_MISDIRECTED:
    snprintf (buf, buflen,
              "misdirected: block at %" PRIu64 " holds the "
              "block stamped for %" PRIu64 " (generation %" PRIu32 ", %s)",
              key->offset_bytes, r->found_offset_bytes, r->found_generation,
              r->found_intact ? "intact" : "damaged");
    break;
  case LB_PATTERN_STALE:
    snprintf (buf, buflen,
              "stale: block at %" PRIu64 " holds generation %" PRIu32
              ", expected %" PRIu32 "%s",
              key->offset_bytes, r->found_generation, key->generation,
              key->generation ? "" : " (zeros)");
    break;
  case LB_PATTERN_TORN:
    len = (size_t) snprintf (buf, buflen,
                             "torn: block at %" PRIu64 " generation %" PRIu32
                             ", sectors ",
                             key->offset_bytes, key->generation);
    describe_sectors (r, nr_sectors, buf, buflen, &len);
    if (len < buflen)
      snprintf (buf + len, buflen - len, " of %" PRIu32 " differ", nr_sectors);
    break;
  default:
    snprintf (buf, buflen,
              "%s: block at %" PRIu64 " (expected generation %" PRIu32 ")",
              lb_pattern_class_name (r->cls), key->offset_bytes,
              key->generation);
  }
  return buf;
}
