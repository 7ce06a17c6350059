/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/geometry unit tests.
 *
 * Size parsing (every suffix, both cases, overflow at every suffix), one
 * case per validation rule of the SPEC with its exact message, the folio
 * and sector conversions over every legal physical shift, and the
 * page <-> block translation over every pair of shifts 9..25 with its
 * round-trip laws.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "largeblock/geometry.h"

/* ---- lb_parse_size ---- */

static const struct {
  const char *str;
  uint64_t bytes;
} good_sizes[] = {
  { "0", 0 },
  { "512", 512 },
  { "512b", 512 },
  { "512B", 512 },
  { "1s", 512 },
  { "8S", 4096 },
  { "16k", 16384 },
  { "16K", 16384 },
  { "512M", 512ull << 20 },
  { "512m", 512ull << 20 },
  { "1G", 1ull << 30 },
  { "1g", 1ull << 30 },
  { "1T", 1ull << 40 },
  { "3t", 3ull << 40 },
  { "1P", 1ull << 50 },
  { "2p", 2ull << 50 },
  { "7E", 7ull << 60 },
  { "7e", 7ull << 60 },
  { "9223372036854775807", INT64_MAX },
  { "9223372036854710272", 9223372036854710272ull },
  { "00016k", 16384 },
};

START_TEST (test_parse_size_good)
{
  uint64_t v = 12345;
  char err[256] = "";

  ck_assert_msg (lb_parse_size ("size", good_sizes[_i].str, &v, err,
                                sizeof err) == 0,
                 "%s: %s", good_sizes[_i].str, err);
  ck_assert_uint_eq (v, good_sizes[_i].bytes);
}
END_TEST

static const struct {
  const char *str;
  int err_no;
  const char *message;
} bad_sizes[] = {
  { "", EINVAL, "size is empty (expected a size such as 512M)" },
  { "-1", EINVAL, "size -1 is negative" },
  { "abc", EINVAL,
    "size abc is not a size (expected digits with an "
    "optional suffix, e.g. 512M)" },
  { " 1", EINVAL, NULL },
  { "1x", EINVAL,
    "size 1x has an unknown suffix 'x' (use b, s, k, M, G, "
    "T, P or E)" },
  { "1KB", EINVAL, NULL },
  { "1k ", EINVAL, NULL },
  { "1.5G", EINVAL, NULL },
  { "8E", ERANGE,
    "size 8E exceeds the maximum 9223372036854775807 "
    "(2^63-1)" },
  { "9223372036854775808", ERANGE, NULL },
  { "18446744073709551616", ERANGE, NULL },
  { "99999999999999999999999", ERANGE, NULL },
  { "8192P", ERANGE, NULL },
  { "8388608T", ERANGE, NULL },
  { "8589934592G", ERANGE, NULL },
  { "8796093022208M", ERANGE, NULL },
  { "9007199254740992k", ERANGE, NULL },
  { "18014398509481984s", ERANGE, NULL },
};

START_TEST (test_parse_size_bad)
{
  uint64_t v = 4242;
  char err[256] = "";

  errno = 0;
  ck_assert_int_eq (lb_parse_size ("size", bad_sizes[_i].str, &v, err,
                                   sizeof err),
                    -1);
  ck_assert_int_eq (errno, bad_sizes[_i].err_no);
  ck_assert_uint_eq (v, 4242); /* untouched on failure */
  ck_assert (strchr (err, '\n') == NULL);
  ck_assert_msg (strncmp (err, "size ", 5) == 0, "%s", err);
  if (bad_sizes[_i].message)
    ck_assert_str_eq (err, bad_sizes[_i].message);
}
END_TEST

/* The largest value for each suffix parses; one more overflows. */
START_TEST (test_parse_size_limit_per_suffix)
{
  static const struct {
    char suffix;
    unsigned shift;
  } s[] = {
    { 'b', 0 },  { 's', 9 },  { 'k', 10 }, { 'M', 20 },
    { 'G', 30 }, { 'T', 40 }, { 'P', 50 }, { 'E', 60 },
  };
  char str[64], err[256];
  uint64_t max = (uint64_t) INT64_MAX >> s[_i].shift, v;

  snprintf (str, sizeof str, "%" PRIu64 "%c", max, s[_i].suffix);
  ck_assert_int_eq (lb_parse_size ("size", str, &v, err, sizeof err), 0);
  ck_assert_uint_eq (v, max << s[_i].shift);
  snprintf (str, sizeof str, "%" PRIu64 "%c", max + 1, s[_i].suffix);
  errno = 0;
  ck_assert_int_eq (lb_parse_size ("size", str, &v, err, sizeof err), -1);
  ck_assert_int_eq (errno, ERANGE);
}
END_TEST

/* ---- lb_geometry_init: one case per rule ---- */

struct geom_case {
  const char *size, *blksize, *logical, *max_request;
  const char *message; /* NULL: valid */
};

static const struct geom_case geom_cases[] = {
  { "512M", "16k", "16k", NULL, NULL },
  { "512M", NULL, NULL, NULL, NULL },
  { "7E", "32M", "64k", "64M", NULL },
  { "9223372036854710272", "64k", "64k", NULL, NULL },
  { "1M", "16k", "4k", "16k", NULL },
  { "1M", "512", "512", "512", NULL },
  /* the physical block is bigger than the disk: one partial folio */
  { "512", "2M", "512", NULL, NULL },
  { NULL, "16k", "16k", NULL, "size is required (e.g. size=512M)" },
  { "0", "16k", "16k", NULL, "size 0 must be greater than zero" },
  { "1000", NULL, NULL, NULL,
    "size 1000 is not a multiple of logical-blksize 512 (the default)" },
  { "9223372036854775807", "64k", "64k", NULL,
    "size 9223372036854775807 is not a multiple of logical-blksize 64k" },
  { "1M", "3000", "512", NULL, "blksize 3000 is not a power of two" },
  { "1M", "256", "256", NULL, "blksize 256 is below the minimum 512" },
  { "1M", "64M", "512", "64M", "blksize 64M is above the maximum 33554432" },
  { "1M", "16k", "3000", NULL, "logical-blksize 3000 is not a power of two" },
  { "1M", "16k", "256", NULL, "logical-blksize 256 is below the minimum 512" },
  { "1M", "1M", "128k", NULL,
    "logical-blksize 128k is above the maximum 65536" },
  { "1M", "4k", "16k", NULL, "logical-blksize 16k is larger than blksize 4k" },
  { "1M", NULL, "16k", NULL,
    "logical-blksize 16k is larger than blksize 4096 (the default)" },
  { "1M", "0", "512", NULL, "blksize 0 is not a power of two" },
  { "1M", "16k", "4k", "8k", "max-request 8k is smaller than blksize 16k" },
  { "1M", "16k", "4k", "18k",
    "max-request 18k is not a multiple of logical-blksize 4k" },
  { "1M", "16k", "4k", "128M",
    "max-request 128M is above the maximum 67108864 (the largest request "
    "nbdkit accepts)" },
  { "1M", "64k", "4k", NULL, NULL },
  { "1M", "32M", "4k", NULL, NULL },
};

static int
parse_or_default (const char *name, const char *str, uint64_t *v)
{
  char err[256];

  if (str == NULL)
    return 0;
  return lb_parse_size (name, str, v, err, sizeof err);
}

static int
init_case (const struct geom_case *c, struct lb_geometry *g, char *err,
           size_t errlen)
{
  struct lb_geometry_request r;

  lb_geometry_request_defaults (&r);
  ck_assert_int_eq (parse_or_default ("size", c->size, &r.size_bytes), 0);
  ck_assert_int_eq (parse_or_default ("blksize", c->blksize,
                                      &r.physical_bytes),
                    0);
  ck_assert_int_eq (parse_or_default ("logical-blksize", c->logical,
                                      &r.logical_bytes),
                    0);
  ck_assert_int_eq (parse_or_default ("max-request", c->max_request,
                                      &r.max_request_bytes),
                    0);
  r.size_str = c->size;
  r.physical_str = c->blksize;
  r.logical_str = c->logical;
  r.max_request_str = c->max_request;
  return lb_geometry_init (g, &r, err, errlen);
}

START_TEST (test_geometry_rules)
{
  const struct geom_case *c = &geom_cases[_i];
  struct lb_geometry g;
  char err[256] = "";
  int r;

  errno = 0;
  r = init_case (c, &g, err, sizeof err);
  if (c->message == NULL) {
    ck_assert_msg (r == 0, "case %d unexpectedly failed: %s", _i, err);
    ck_assert (lb_is_power_of_2 (g.physical_bytes));
    ck_assert_uint_eq (1ull << g.physical_shift, g.physical_bytes);
    ck_assert_uint_eq (1ull << g.logical_shift, g.logical_bytes);
    ck_assert_uint_eq (g.nr_folios,
                       (g.size_bytes + g.physical_bytes - 1) /
                         g.physical_bytes);
  }
  else {
    ck_assert_int_eq (r, -1);
    ck_assert_int_eq (errno, EINVAL);
    ck_assert_str_eq (err, c->message);
  }
}
END_TEST

/* ---- conversions for every legal geometry ---- */

START_TEST (test_folio_and_sector_conversions)
{
  unsigned shift = (unsigned) _i; /* physical shift 9..25 */
  struct lb_geometry_request r;
  struct lb_geometry g;
  char err[256];
  static const uint64_t offsets[] = {
    0,
    1,
    511,
    512,
    4095,
    4096,
    16383,
    16384,
    65536 + 7,
    (1ull << 40) + 12345,
    (uint64_t) INT64_MAX - 1,
  };

  lb_geometry_request_defaults (&r);
  r.physical_bytes = 1ull << shift;
  r.logical_bytes = 512;
  r.max_request_bytes = r.physical_bytes < (32u << 20) ? 32u << 20
                                                       : r.physical_bytes;
  r.size_bytes = (uint64_t) INT64_MAX & ~511ull;
  r.size_str = "max";
  ck_assert_int_eq (lb_geometry_init (&g, &r, err, sizeof err), 0);
  ck_assert_uint_eq (g.physical_shift, shift);

  for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
    uint64_t off = offsets[i];
    uint64_t idx = lb_folio_idx (&g, off);
    uint32_t in = lb_folio_offset (&g, off);
    uint64_t sector = off >> 9;

    ck_assert_uint_eq (idx, off / g.physical_bytes);
    ck_assert_uint_eq (in, off % g.physical_bytes);
    ck_assert_uint_eq (lb_folio_to_bytes (&g, idx) + in, off);
    ck_assert_uint_eq (lb_sector_to_folio_idx (&g, sector), idx);
    ck_assert_uint_le (lb_folio_idx_to_sector (&g, idx), sector);
    ck_assert_uint_eq (lb_folio_idx_to_sector (&g, idx) << 9,
                       lb_folio_to_bytes (&g, idx));
    ck_assert_uint_eq (lb_logical_to_bytes (&g, lb_bytes_to_logical (&g, off)),
                       off & ~511ull);
  }
}
END_TEST

/* ---- page index <-> block number for every pair of shifts ---- */

static const uint64_t sample_indexes[] = {
  0,
  1,
  2,
  3,
  7,
  8,
  511,
  512,
  513,
  4095,
  65537,
  1ull << 31,
  (1ull << 32) + 5,
  0x123456789ull,
  1ull << 38,
  (1ull << 47) - 1,
};
#define NR_SAMPLES (sizeof sample_indexes / sizeof sample_indexes[0])
#define NR_SHIFTS (LB_SHIFT_MAX - LB_SHIFT_MIN + 1)

START_TEST (test_page_block_translation_all_shift_pairs)
{
  unsigned page_shift = LB_SHIFT_MIN + (unsigned) _i / NR_SHIFTS;
  unsigned block_shift = LB_SHIFT_MIN + (unsigned) _i % NR_SHIFTS;

  for (size_t i = 0; i < NR_SAMPLES; i++) {
    uint64_t page = sample_indexes[i], block, back, blk2, page_start;

    /* page -> block: the block holding the page's first byte */
    ck_assert_int_eq (lb_page_to_block (page, page_shift, block_shift, &block),
                      0);
    ck_assert_uint_eq (block,
                       (uint64_t) (((unsigned __int128) page << page_shift) >>
                                   block_shift));

    /* block -> page: the page holding the block's first byte */
    ck_assert_int_eq (lb_block_to_page (block, block_shift, page_shift, &back),
                      0);
    ck_assert_uint_eq (
      back,
      (uint64_t) (((unsigned __int128) block << block_shift) >> page_shift));

    if (block_shift <= page_shift) {
      /* Law 1: blocks no larger than pages: page -> block -> page is the
       * identity, and the page's last block maps back to it too. */
      uint64_t last = block + (1ull << (page_shift - block_shift)) - 1;
      ck_assert_uint_eq (back, page);
      ck_assert_int_eq (lb_block_to_page (last, block_shift, page_shift,
                                          &blk2),
                        0);
      ck_assert_uint_eq (blk2, page);
    }
    else {
      /* Law 2: blocks larger than pages: back is the block's first page,
       * not after page, and within one block of it. */
      ck_assert_uint_le (back, page);
      ck_assert_uint_lt (page - back, 1ull << (block_shift - page_shift));
      ck_assert_uint_eq (back & ((1ull << (block_shift - page_shift)) - 1), 0);
    }

    /* Law 3: block -> page -> block is the identity whenever the block
     * starts on a page boundary (always when block >= page). */
    ck_assert_int_eq (lb_block_to_page (page, block_shift, page_shift,
                                        &page_start),
                      0);
    ck_assert_int_eq (lb_page_to_block (page_start, page_shift, block_shift,
                                        &blk2),
                      0);
    if (block_shift >= page_shift)
      ck_assert_uint_eq (blk2, page);
    else
      ck_assert_uint_eq (blk2,
                         page & ~((1ull << (page_shift - block_shift)) - 1));
  }
}
END_TEST

/* Law 4: a left shift that would lose bits is refused, never wrapped. */
START_TEST (test_translation_overflow)
{
  unsigned small = LB_SHIFT_MIN + (unsigned) _i / NR_SHIFTS;
  unsigned big = LB_SHIFT_MIN + (unsigned) _i % NR_SHIFTS;
  unsigned d = big - small;
  uint64_t out = 77, limit;

  if (big <= small)
    return;
  limit = UINT64_MAX >> d; /* largest index that still fits */
  ck_assert_int_eq (lb_page_to_block (limit, big, small, &out), 0);
  ck_assert_uint_eq (out, limit << d);
  ck_assert_int_eq (lb_block_to_page (limit, big, small, &out), 0);
  ck_assert_uint_eq (out, limit << d);

  out = 77;
  errno = 0;
  ck_assert_int_eq (lb_page_to_block (limit + 1, big, small, &out), -1);
  ck_assert_int_eq (errno, EOVERFLOW);
  ck_assert_uint_eq (out, 77);
  errno = 0;
  ck_assert_int_eq (lb_block_to_page (UINT64_MAX, big, small, &out), -1);
  ck_assert_int_eq (errno, EOVERFLOW);
}
END_TEST

/* Shifts outside 9 ... 25 are refused with EINVAL in either position
 * and either direction, and nothing is stored; the bounds themselves
 * work.
 */
static const unsigned bad_shifts[] = { 0, 8, 26, 64, 200 };
#define NR_BAD_SHIFTS (sizeof bad_shifts / sizeof bad_shifts[0])

typedef int (*translate_fn) (uint64_t, unsigned, unsigned, uint64_t *);

static void
assert_einval (translate_fn fn, unsigned from_shift, unsigned to_shift)
{
  uint64_t out = 77;

  errno = 0;
  ck_assert_int_eq (fn (1, from_shift, to_shift, &out), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_uint_eq (out, 77);
}

START_TEST (test_translation_bad_shift_einval)
{
  unsigned bad = bad_shifts[_i];

  for (unsigned good = LB_SHIFT_MIN; good <= LB_SHIFT_MAX; good++) {
    assert_einval (lb_page_to_block, bad, good);
    assert_einval (lb_page_to_block, good, bad);
    assert_einval (lb_block_to_page, bad, good);
    assert_einval (lb_block_to_page, good, bad);
  }
  assert_einval (lb_page_to_block, bad, bad);
  assert_einval (lb_block_to_page, bad, bad);
}
END_TEST

START_TEST (test_translation_shift_bounds)
{
  uint64_t v;

  ck_assert_int_eq (lb_page_to_block (1, LB_SHIFT_MAX, LB_SHIFT_MIN, &v), 0);
  ck_assert_uint_eq (v, 1ull << (LB_SHIFT_MAX - LB_SHIFT_MIN));
  ck_assert_int_eq (lb_page_to_block (v, LB_SHIFT_MIN, LB_SHIFT_MAX, &v), 0);
  ck_assert_uint_eq (v, 1);
  ck_assert_int_eq (lb_block_to_page (1, LB_SHIFT_MAX, LB_SHIFT_MIN, &v), 0);
  ck_assert_uint_eq (v, 1ull << (LB_SHIFT_MAX - LB_SHIFT_MIN));
  ck_assert_int_eq (lb_block_to_page (v, LB_SHIFT_MIN, LB_SHIFT_MAX, &v), 0);
  ck_assert_uint_eq (v, 1);
}
END_TEST

/* The Linux brd case the patches fixed: a 4k-page kernel, 16k blocks,
 * 512-byte sectors.  Sector 40 is in block 1 and page 5. */
START_TEST (test_brd_worked_example)
{
  uint64_t v;

  ck_assert_int_eq (lb_page_to_block (40, 9, 14, &v), 0);
  ck_assert_uint_eq (v, 1);
  ck_assert_int_eq (lb_page_to_block (40, 9, 12, &v), 0);
  ck_assert_uint_eq (v, 5);
  ck_assert_int_eq (lb_block_to_page (1, 14, 9, &v), 0);
  ck_assert_uint_eq (v, 32);
  ck_assert_int_eq (lb_block_to_page (5, 12, 14, &v), 0);
  ck_assert_uint_eq (v, 1);
}
END_TEST

/* lb_geometry_make: the plugin's rules and messages, values as given. */
static const struct {
  uint64_t size;
  uint32_t logical, physical;
  const char *msg; /* NULL: valid */
} make_cases[] = {
  { 1 << 20, 512, 4096, NULL },
  { 1 << 20, 16384, 16384, NULL },
  { 32u << 20, 4096, 32u << 20, NULL },
  { LB_SIZE_MAX_BYTES - 511, 512, 512, NULL },
  { 1 << 20, 3000, 4096, "logical-blksize 3000 is not a power of two" },
  { 1 << 20, 16384, 4096,
    "logical-blksize 16384 is larger than blksize 4096" },
  { 1 << 20, 512, 64u << 20,
    "blksize 67108864 is above the maximum 33554432" },
  { 1 << 20, 256, 4096, "logical-blksize 256 is below the minimum 512" },
  { 0, 512, 4096, "size 0 must be greater than zero" },
  { 1000, 512, 4096, "size 1000 is not a multiple of logical-blksize 512" },
  { LB_SIZE_MAX_BYTES + 1, 512, 4096,
    "size 9223372036854775808 exceeds the maximum 9223372036854775807 "
    "(2^63-1)" },
};

START_TEST (test_geometry_make)
{
  struct lb_geometry g;
  char err[256] = "";
  int r;

  errno = 0;
  r = lb_geometry_make (&g, make_cases[_i].size, make_cases[_i].logical,
                        make_cases[_i].physical, err, sizeof err);
  if (make_cases[_i].msg == NULL) {
    ck_assert_msg (r == 0, "%s", err);
    ck_assert_uint_eq (g.size_bytes, make_cases[_i].size);
    ck_assert_uint_eq (g.logical_bytes, make_cases[_i].logical);
    ck_assert_uint_eq (g.physical_bytes, make_cases[_i].physical);
    ck_assert_uint_ge (g.max_request_bytes, g.physical_bytes);
  }
  else {
    ck_assert_int_eq (r, -1);
    ck_assert_int_eq (errno, EINVAL);
    ck_assert_str_eq (err, make_cases[_i].msg);
  }
}
END_TEST

/* lb_convert, every unit pair, in every geometry with logical shift
 * 9...16 and physical shift logical...25: towards a larger unit it rounds
 * down to the containing unit; towards a smaller one it gives the first
 * smaller unit, or EOVERFLOW (result untouched) when that does not fit in
 * 64 bits -- never a wrapped value.
 */
#define NR_UNITS 4
START_TEST (test_convert_every_unit_pair)
{
  unsigned lshift = LB_SHIFT_MIN + (unsigned) _i / NR_SHIFTS;
  unsigned pshift = LB_SHIFT_MIN + (unsigned) _i % NR_SHIFTS;
  const uint64_t samples[] = { 0,
                               1,
                               511,
                               512,
                               4097,
                               1ull << 40,
                               (1ull << 40) + 12345,
                               UINT64_MAX >> 30,
                               UINT64_MAX >> 9,
                               UINT64_MAX };
  struct lb_geometry g;
  char err[256];
  unsigned from, to, k;

  if (lshift > 16 || pshift < lshift)
    return;
  ck_assert_msg (lb_geometry_make (&g, 1ull << 30, 1u << lshift, 1u << pshift,
                                   err, sizeof err) == 0,
                 "%s", err);
  for (from = 0; from < NR_UNITS; from++)
    for (to = 0; to < NR_UNITS; to++)
      for (k = 0; k < sizeof samples / sizeof samples[0]; k++) {
        const unsigned shifts[NR_UNITS] = { 0, LB_SECTOR_SHIFT, lshift,
                                            pshift };
        unsigned fs = shifts[from], ts = shifts[to];
        uint64_t v = samples[k], out = 77;
        int r;

        errno = 0;
        r = lb_convert (&g, v, (enum lb_unit) from, (enum lb_unit) to, &out);
        if (fs <= ts) {
          ck_assert_int_eq (r, 0);
          ck_assert_uint_eq (out, v >> (ts - fs));
        }
        else if (v > (UINT64_MAX >> (fs - ts))) {
          ck_assert_int_eq (r, -1);
          ck_assert_int_eq (errno, EOVERFLOW);
          ck_assert_uint_eq (out, 77);
        }
        else {
          ck_assert_int_eq (r, 0);
          ck_assert_uint_eq (out, v << (fs - ts));
        }
      }
}
END_TEST

/* The worked example of lb_geometry(3): 16k logical, 64k physical. */
START_TEST (test_convert_worked_example)
{
  struct lb_geometry g;
  char err[256];
  uint64_t v = 0;

  ck_assert_int_eq (lb_geometry_make (&g, 1ull << 30, 16384, 65536, err,
                                      sizeof err),
                    0);
  ck_assert_int_eq (lb_convert (&g, 1000000, LB_UNIT_BYTE, LB_UNIT_LOGICAL,
                                &v),
                    0);
  ck_assert_uint_eq (v, 61);
  ck_assert_int_eq (lb_convert (&g, 61, LB_UNIT_LOGICAL, LB_UNIT_SECTOR, &v),
                    0);
  ck_assert_uint_eq (v, 1952);
  ck_assert_int_eq (lb_convert (&g, 1952, LB_UNIT_SECTOR, LB_UNIT_PHYSICAL,
                                &v),
                    0);
  ck_assert_uint_eq (v, 15);
  errno = 0;
  ck_assert_int_eq (lb_convert (&g, 1ull << 60, LB_UNIT_PHYSICAL, LB_UNIT_BYTE,
                                &v),
                    -1);
  ck_assert_int_eq (errno, EOVERFLOW);
  errno = 0;
  ck_assert_int_eq (lb_convert (&g, 1, (enum lb_unit) 9, LB_UNIT_BYTE, &v),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
}
END_TEST

static Suite *
geometry_suite (void)
{
  Suite *s = suite_create ("geometry");
  TCase *parse = tcase_create ("parse_size");
  TCase *rules = tcase_create ("rules");
  TCase *conv = tcase_create ("conversions");

  tcase_add_loop_test (parse, test_parse_size_good, 0,
                       sizeof good_sizes / sizeof good_sizes[0]);
  tcase_add_loop_test (parse, test_parse_size_bad, 0,
                       sizeof bad_sizes / sizeof bad_sizes[0]);
  tcase_add_loop_test (parse, test_parse_size_limit_per_suffix, 0, 8);
  tcase_add_loop_test (rules, test_geometry_rules, 0,
                       sizeof geom_cases / sizeof geom_cases[0]);
  tcase_add_loop_test (conv, test_folio_and_sector_conversions, LB_SHIFT_MIN,
                       LB_SHIFT_MAX + 1);
  tcase_add_loop_test (conv, test_page_block_translation_all_shift_pairs, 0,
                       NR_SHIFTS * NR_SHIFTS);
  tcase_add_loop_test (conv, test_translation_overflow, 0,
                       NR_SHIFTS * NR_SHIFTS);
  tcase_add_test (conv, test_brd_worked_example);
  tcase_add_loop_test (conv, test_translation_bad_shift_einval, 0,
                       NR_BAD_SHIFTS);
  tcase_add_test (conv, test_translation_shift_bounds);
  tcase_add_loop_test (rules, test_geometry_make, 0,
                       sizeof make_cases / sizeof make_cases[0]);
  tcase_add_loop_test (conv, test_convert_every_unit_pair, 0,
                       NR_SHIFTS * NR_SHIFTS);
  tcase_add_test (conv, test_convert_worked_example);
  suite_add_tcase (s, parse);
  suite_add_tcase (s, rules);
  suite_add_tcase (s, conv);
  return s;
}

LB_UNIT_SUITE (geometry_suite);
