/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: disk geometry -- size parsing, validation, translation.
 *
 * Pure functions, no state; see geometry.h.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "largeblock/geometry.h"

/* log2 of the multiplier for a size suffix, or -1 if unknown. */
static int
suffix_shift (char c)
{
  switch (c) {
  case 'b':
  case 'B': return 0;
  case 's':
  case 'S': return LB_SECTOR_SHIFT;
  case 'k':
  case 'K': return 10;
  case 'm':
  case 'M': return 20;
  case 'g':
  case 'G': return 30;
  case 't':
  case 'T': return 40;
  case 'p':
  case 'P': return 50;
  case 'e':
  case 'E': return 60;
  default: return -1;
  }
}

int
lb_parse_size (const char *param, const char *str, uint64_t *bytes, char *err,
               size_t errlen)
{
  const char *p = str;
  uint64_t value = 0;
  int shift = 0;

  if (*p == '\0')
    return lb_fail (EINVAL, err, errlen,
                    "%s is empty (expected a size such "
                    "as 512M)",
                    param);
  if (*p == '-')
    return lb_fail (EINVAL, err, errlen, "%s %s is negative", param, str);
  if (*p < '0' || *p > '9')
    return lb_fail (EINVAL, err, errlen,
                    "%s %s is not a size (expected "
                    "digits with an optional suffix, e.g. 512M)",
                    param, str);

  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned digit = (unsigned) (*p - '0');
    if (value > (LB_SIZE_MAX_BYTES - digit) / 10)
      return lb_fail (ERANGE, err, errlen,
                      "%s %s exceeds the maximum %" PRIu64 " (2^63-1)", param,
                      str, LB_SIZE_MAX_BYTES);
    value = value * 10 + digit;
  }

  if (*p != '\0') {
    shift = suffix_shift (*p);
    if (shift < 0 || p[1] != '\0')
      return lb_fail (EINVAL, err, errlen,
                      "%s %s has an unknown suffix '%s' "
                      "(use b, s, k, M, G, T, P or E)",
                      param, str, p);
  }
  if (value > (LB_SIZE_MAX_BYTES >> shift))
    return lb_fail (ERANGE, err, errlen,
                    "%s %s exceeds the maximum %" PRIu64 " (2^63-1)", param,
                    str, LB_SIZE_MAX_BYTES);

  *bytes = value << shift;
  return 0;
}

void
lb_geometry_request_defaults (struct lb_geometry_request *req)
{
  memset (req, 0, sizeof *req);
  req->physical_bytes = LB_DEFAULT_BLKSIZE_BYTES;
  req->logical_bytes = LB_DEFAULT_LOGICAL_BYTES;
  req->max_request_bytes = LB_DEFAULT_MAX_REQUEST_BYTES;
}

/* How a value appears in messages: what the user typed, or the number
 * followed by "(the default)".
 */
static const char *
shown (const char *typed, uint64_t value, char *buf, size_t len)
{
  if (typed)
    return typed;
  snprintf (buf, len, "%" PRIu64 " (the default)", value);
  return buf;
}

/* A block size parameter: power of two within [min, max]. */
static int
check_block_size (const char *param, const char *typed, uint64_t value,
                  uint64_t min, uint64_t max, char *err, size_t errlen)
{
  char v[64];
  const char *s = shown (typed, value, v, sizeof v);

  if (!lb_is_power_of_2 (value))
    return lb_fail (EINVAL, err, errlen, "%s %s is not a power of two", param,
                    s);
  if (value < min)
    return lb_fail (EINVAL, err, errlen, "%s %s is below the minimum %" PRIu64,
                    param, s, min);
  if (value > max)
    return lb_fail (EINVAL, err, errlen, "%s %s is above the maximum %" PRIu64,
                    param, s, max);
  return 0;
}

static int
check_block_sizes (const struct lb_geometry_request *r, char *err,
                   size_t errlen)
{
  char v1[64], v2[64];

  if (check_block_size ("blksize", r->physical_str, r->physical_bytes,
                        LB_BLKSIZE_MIN_BYTES, LB_BLKSIZE_MAX_BYTES, err,
                        errlen) == -1)
    return -1;
  if (check_block_size ("logical-blksize", r->logical_str, r->logical_bytes,
                        LB_LOGICAL_MIN_BYTES, LB_LOGICAL_MAX_BYTES, err,
                        errlen) == -1)
    return -1;
  if (r->logical_bytes > r->physical_bytes)
    return lb_fail (EINVAL, err, errlen,
                    "logical-blksize %s is larger than "
                    "blksize %s",
                    shown (r->logical_str, r->logical_bytes, v1, sizeof v1),
                    shown (r->physical_str, r->physical_bytes, v2, sizeof v2));
  return 0;
}

static int
check_max_request (const struct lb_geometry_request *r, char *err,
                   size_t errlen)
{
  char v1[64], v2[64];
  const char *s = shown (r->max_request_str, r->max_request_bytes, v1,
                         sizeof v1);

  if (r->max_request_bytes % r->logical_bytes != 0)
    return lb_fail (EINVAL, err, errlen,
                    "max-request %s is not a multiple of "
                    "logical-blksize %s",
                    s,
                    shown (r->logical_str, r->logical_bytes, v2, sizeof v2));
  if (r->max_request_bytes < r->physical_bytes)
    return lb_fail (EINVAL, err, errlen,
                    "max-request %s is smaller than "
                    "blksize %s",
                    s,
                    shown (r->physical_str, r->physical_bytes, v2, sizeof v2));
  if (r->max_request_bytes > LB_MAX_REQUEST_MAX_BYTES)
    return lb_fail (EINVAL, err, errlen,
                    "max-request %s is above the maximum "
                    "%u (the largest request nbdkit accepts)",
                    s, LB_MAX_REQUEST_MAX_BYTES);
  return 0;
}

static int
check_size (const struct lb_geometry_request *r, char *err, size_t errlen)
{
  char v[64];

  if (r->size_str == NULL)
    return lb_fail (EINVAL, err, errlen, "size is required (e.g. size=512M)");
  if (r->size_bytes == 0)
    return lb_fail (EINVAL, err, errlen, "size %s must be greater than zero",
                    r->size_str);
  if (r->size_bytes > LB_SIZE_MAX_BYTES)
    return lb_fail (EINVAL, err, errlen,
                    "size %s exceeds the maximum %" PRIu64 " (2^63-1)",
                    r->size_str, LB_SIZE_MAX_BYTES);
  if (r->size_bytes % r->logical_bytes != 0)
    return lb_fail (EINVAL, err, errlen,
                    "size %s is not a multiple of "
                    "logical-blksize %s",
                    r->size_str,
                    shown (r->logical_str, r->logical_bytes, v, sizeof v));
  return 0;
}

int
lb_geometry_init (struct lb_geometry *g, const struct lb_geometry_request *req,
                  char *err, size_t errlen)
{
  if (check_block_sizes (req, err, errlen) == -1 ||
      check_max_request (req, err, errlen) == -1 ||
      check_size (req, err, errlen) == -1)
    return -1;

  memset (g, 0, sizeof *g);
  g->size_bytes = req->size_bytes;
  g->physical_bytes = req->physical_bytes;
  g->logical_bytes = req->logical_bytes;
  g->max_request_bytes = req->max_request_bytes;
  g->physical_shift = lb_log2 (req->physical_bytes);
  g->logical_shift = lb_log2 (req->logical_bytes);
  /* size <= 2^63-1, so adding physical-1 cannot wrap. */
  g->nr_folios = (g->size_bytes + g->physical_bytes - 1) >> g->physical_shift;
  return 0;
}

/* Shift v left by n, or fail with EOVERFLOW if bits would be lost. */
static int
shift_left_checked (uint64_t v, unsigned n, uint64_t *out)
{
  if (n > 0 && (n >= 64 || (v >> (64 - n)) != 0)) {
    errno = EOVERFLOW;
    return -1;
  }
  *out = v << n;
  return 0;
}

static uint64_t
shift_right (uint64_t v, unsigned n)
{
  return n >= 64 ? 0 : v >> n;
}

/* A page or block unit of any size: index <-> index, rounding down
 * towards a larger unit.  lb_convert passes shifts 0 ... 25 (bytes and
 * sectors are units too); the public functions check theirs first.
 */
static int
convert_index (uint64_t idx, unsigned from_shift, unsigned to_shift,
               uint64_t *out)
{
  if (to_shift >= from_shift) {
    *out = shift_right (idx, to_shift - from_shift);
    return 0;
  }
  return shift_left_checked (idx, from_shift - to_shift, out);
}

static bool
shift_in_range (unsigned shift)
{
  return shift >= LB_SHIFT_MIN && shift <= LB_SHIFT_MAX;
}

int
lb_page_to_block (uint64_t page_idx, unsigned page_shift, unsigned block_shift,
                  uint64_t *block_nr)
{
  if (!shift_in_range (page_shift) || !shift_in_range (block_shift)) {
    errno = EINVAL;
    return -1;
  }
  return convert_index (page_idx, page_shift, block_shift, block_nr);
}

int
lb_block_to_page (uint64_t block_nr, unsigned block_shift, unsigned page_shift,
                  uint64_t *page_idx)
{
  if (!shift_in_range (page_shift) || !shift_in_range (block_shift)) {
    errno = EINVAL;
    return -1;
  }
  return convert_index (block_nr, block_shift, page_shift, page_idx);
}

int
lb_geometry_make (struct lb_geometry *g, uint64_t size_bytes,
                  uint32_t logical_bytes, uint32_t physical_bytes, char *err,
                  size_t errlen)
{
  struct lb_geometry_request req;
  char size_str[32], logical_str[32], physical_str[32];

  /* Every value was given: messages show it as given, never as a
   * default. */
  lb_geometry_request_defaults (&req);
  snprintf (size_str, sizeof size_str, "%" PRIu64, size_bytes);
  snprintf (logical_str, sizeof logical_str, "%" PRIu32, logical_bytes);
  snprintf (physical_str, sizeof physical_str, "%" PRIu32, physical_bytes);
  req.size_bytes = size_bytes;
  req.size_str = size_str;
  req.logical_bytes = logical_bytes;
  req.logical_str = logical_str;
  req.physical_bytes = physical_bytes;
  req.physical_str = physical_str;
  /* The largest request: the default, unless a larger physical block
   * (up to 32 MiB) or a size below it asks for another.
   */
  if (physical_bytes > req.max_request_bytes)
    req.max_request_bytes = physical_bytes;
  return lb_geometry_init (g, &req, err, errlen);
}

/* log2 of one unit in bytes, or -1 for an unknown unit. */
static int
unit_shift (const struct lb_geometry *g, enum lb_unit unit)
{
  switch (unit) {
  case LB_UNIT_BYTE: return 0;
  case LB_UNIT_SECTOR: return LB_SECTOR_SHIFT;
  case LB_UNIT_LOGICAL: return (int) g->logical_shift;
  case LB_UNIT_PHYSICAL: return (int) g->physical_shift;
  }
  return -1;
}

int
lb_convert (const struct lb_geometry *g, uint64_t value, enum lb_unit from,
            enum lb_unit to, uint64_t *out)
{
  int from_shift = unit_shift (g, from);
  int to_shift = unit_shift (g, to);

  if (from_shift < 0 || to_shift < 0) {
    errno = EINVAL;
    return -1;
  }
  /* Units are powers of two: a block of one unit is a page of another. */
  return convert_index (value, (unsigned) from_shift, (unsigned) to_shift,
                        out);
}
