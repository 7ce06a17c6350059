/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: disk geometry.
 *
 * Owns the description of a large-block disk (virtual size, physical block
 * = folio size, logical block, largest request), the parsing of sizes in
 * nbdkit's syntax, and every unit conversion between bytes, 512-byte
 * sectors, folio indexes and page/block indexes.  Conversions are small
 * inline helpers driven by validated shifts, so no caller ever shifts by a
 * bare constant.
 *
 * Everything here is pure and immutable after lb_geometry_init(): safe to
 * share between threads without locking.
 *
 * Part of the installed library (largeblock.h, lb_geometry(3)): the
 * functions declared here are exported; the static inline helpers are for
 * indexes already known to be in range (they do not check for overflow --
 * lb_convert does).  Every function is thread-safe.
 */
#ifndef LARGEBLOCK_GEOMETRY_H
#define LARGEBLOCK_GEOMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LB_SECTOR_SHIFT 9                        /* Linux's 512-byte sector */
#define LB_SIZE_MAX_BYTES ((uint64_t) INT64_MAX) /* 2^63 - 1: off_t */
#define LB_BLKSIZE_MIN_BYTES 512u
#define LB_BLKSIZE_MAX_BYTES (32u << 20) /* NBD preferred limit */
#define LB_LOGICAL_MIN_BYTES 512u
#define LB_LOGICAL_MAX_BYTES (64u << 10)     /* NBD minimum limit */
#define LB_MAX_REQUEST_MAX_BYTES (64u << 20) /* nbdkit's request cap */
#define LB_DEFAULT_BLKSIZE_BYTES 4096u
#define LB_DEFAULT_LOGICAL_BYTES 512u
#define LB_DEFAULT_MAX_REQUEST_BYTES (32u << 20)

/* Shifts supported by the page/block translation (512 B ... 32 MiB). */
#define LB_SHIFT_MIN 9
#define LB_SHIFT_MAX 25

struct lb_geometry {
  uint64_t size_bytes;
  uint64_t nr_folios;      /* size_bytes / physical, rounded up */
  uint32_t physical_bytes; /* folio (allocation unit) size */
  uint32_t logical_bytes;
  uint32_t max_request_bytes;
  unsigned physical_shift;
  unsigned logical_shift;
};

/* Parse a size in nbdkit's syntax: decimal digits with an optional suffix
 * b/B (bytes), s/S (512-byte sectors), k/K, m/M, g/G, t/T, p/P, e/E
 * (powers of 1024).  On success stores the value and returns 0.  On error
 * returns -1 with errno = EINVAL (syntax) or ERANGE (above 2^63-1) and
 * writes "<param> <str> <reason>" into err.
 */
int lb_parse_size (const char *param, const char *str, uint64_t *bytes,
                   char *err, size_t errlen);

/* Fill *g from raw values, checking every geometry rule of lb_geometry(3)
 * and nbdkit-largeblock-plugin(1) (docs/lb_geometry.pod).  The *_str
 * arguments are what the user typed (NULL when the default was used) and
 * only appear in messages.  Returns 0, or -1 with errno = EINVAL and a
 * one-line "<param> <value> <rule>" message in err.
 */
struct lb_geometry_request {
  uint64_t size_bytes;     /* 0 with size_str NULL: not given */
  uint64_t physical_bytes; /* 64-bit so "blksize=8G" can be */
  uint64_t logical_bytes;  /* reported, not truncated */
  uint64_t max_request_bytes;
  const char *size_str;
  const char *physical_str;
  const char *logical_str;
  const char *max_request_str;
};
void lb_geometry_request_defaults (struct lb_geometry_request *req);
int lb_geometry_init (struct lb_geometry *g,
                      const struct lb_geometry_request *req, char *err,
                      size_t errlen);

static inline bool
lb_is_power_of_2 (uint64_t v)
{
  return v != 0 && (v & (v - 1)) == 0;
}

/* log2 of a power of two. */
static inline unsigned
lb_log2 (uint64_t pow2)
{
  return (unsigned) __builtin_ctzll (pow2);
}

/* ---- byte offset <-> (folio index, offset in folio) ---- */

static inline uint64_t
lb_folio_idx (const struct lb_geometry *g, uint64_t off_bytes)
{
  return off_bytes >> g->physical_shift;
}

static inline uint32_t
lb_folio_offset (const struct lb_geometry *g, uint64_t off_bytes)
{
  return (uint32_t) (off_bytes & (g->physical_bytes - 1));
}

static inline uint64_t
lb_folio_to_bytes (const struct lb_geometry *g, uint64_t folio_idx)
{
  return folio_idx << g->physical_shift;
}

/* ---- 512-byte sector <-> folio index ---- */

static inline uint64_t
lb_sector_to_folio_idx (const struct lb_geometry *g, uint64_t sector)
{
  return sector >> (g->physical_shift - LB_SECTOR_SHIFT);
}

static inline uint64_t
lb_folio_idx_to_sector (const struct lb_geometry *g, uint64_t folio_idx)
{
  return folio_idx << (g->physical_shift - LB_SECTOR_SHIFT);
}

/* ---- logical block number <-> byte offset ---- */

static inline uint64_t
lb_logical_to_bytes (const struct lb_geometry *g, uint64_t lba)
{
  return lba << g->logical_shift;
}

static inline uint64_t
lb_bytes_to_logical (const struct lb_geometry *g, uint64_t off_bytes)
{
  return off_bytes >> g->logical_shift;
}

/* ---- page index <-> block number, for any page and block shift ----
 *
 * The generalisation of block_index_to_sector()/block_sector_to_index()
 * from the Linux large-block patches.  A page index names the page whose
 * first byte is at page_idx << page_shift; a block number likewise with
 * block_shift.  When the block is larger than the page, several pages map
 * to one block and the page->block direction rounds down to the block
 * containing the page; block->page gives the block's first page.  When the
 * block is smaller, page->block gives the page's first block.
 *
 * Both directions return 0 and store the result, or -1 leaving the
 * result untouched: errno = EINVAL when a shift is outside LB_SHIFT_MIN
 * ... LB_SHIFT_MAX (9 ... 25), EOVERFLOW when the result does not fit in
 * 64 bits (only possible when shifting left).
 */
int lb_page_to_block (uint64_t page_idx, unsigned page_shift,
                      unsigned block_shift, uint64_t *block_nr);
int lb_block_to_page (uint64_t block_nr, unsigned block_shift,
                      unsigned page_shift, uint64_t *page_idx);

/* ---- checked conversions between the units of a geometry ---- */

/* Fill *g for a disk of size_bytes with the given logical and physical
 * (folio) block sizes, and the largest request max(32 MiB, physical).
 * The same rules and messages as the plugin's size=, logical-blksize= and
 * blksize= (e.g. "logical-blksize 3000 is not a power of two").  Returns
 * 0, or -1 with errno = EINVAL and the message in err.
 */
int lb_geometry_make (struct lb_geometry *g, uint64_t size_bytes,
                      uint32_t logical_bytes, uint32_t physical_bytes,
                      char *err, size_t errlen);

enum lb_unit {
  LB_UNIT_BYTE,     /* byte offset */
  LB_UNIT_SECTOR,   /* Linux 512-byte sector */
  LB_UNIT_LOGICAL,  /* logical block (LBA) */
  LB_UNIT_PHYSICAL, /* physical block = folio index */
};

/* Convert value from one unit of g to another.  Towards a larger unit the
 * result rounds down (the unit containing value); towards a smaller one it
 * is the first smaller unit of value.  Returns 0 and stores *out, or -1
 * with errno = EOVERFLOW when the result does not fit in 64 bits (it is
 * never wrapped; *out is left untouched), or EINVAL for an unknown unit.
 * The result is not checked against g->size_bytes.
 */
int lb_convert (const struct lb_geometry *g, uint64_t value, enum lb_unit from,
                enum lb_unit to, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* LARGEBLOCK_GEOMETRY_H */
