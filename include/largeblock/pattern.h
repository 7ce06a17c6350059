/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: stamped verification blocks and their classifier.
 *
 * Owns the on-disk format of the blocks largeblock-verify writes and the
 * rules for naming what a block read back is.  A stamped block is one
 * logical block (512 bytes ... 64 KiB, a power of two) that starts with a
 * header
 *
 *   bytes  0..7   magic "LBVERIFY"
 *          8..15  byte offset of the block on the export (little endian)
 *         16..23  run seed
 *         24..27  generation (1, 2, ...; 0 means "should read as zeros")
 *         28..31  block size in bytes
 *         32..39  checksum of the whole block, computed with these 8 bytes
 *                 zero
 *
 * followed by a payload that is a pure function of (seed, offset,
 * generation), so a checker can rebuild the exact expected block.
 *
 * Everything here is pure: no state, no locking, safe from any thread.
 * No function fails or changes errno; arguments outside the documented
 * ranges are programming errors (asserted).  Part of the installed library
 * (largeblock.h, lb_pattern(3)).
 */
#ifndef LARGEBLOCK_PATTERN_H
#define LARGEBLOCK_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LB_PATTERN_HEADER_BYTES 40u
#define LB_PATTERN_MIN_BLOCK_BYTES 512u
#define LB_PATTERN_MAX_BLOCK_BYTES (64u << 10)
#define LB_PATTERN_SECTOR_BYTES 512u
#define LB_PATTERN_MAX_SECTORS \
  (LB_PATTERN_MAX_BLOCK_BYTES / LB_PATTERN_SECTOR_BYTES)

/* What is expected of one block: generation 0 means zeros (never written,
 * trimmed or zeroed).
 */
struct lb_pattern_key {
  uint64_t seed;
  uint64_t offset_bytes;
  uint32_t generation;
  uint32_t block_bytes;
};

/* New classes are only ever added at the end. */
enum lb_pattern_class {
  LB_PATTERN_GOOD,
  LB_PATTERN_NEVER_WRITTEN, /* all zeros where data was expected */
  LB_PATTERN_STALE,         /* this block, an older generation */
  LB_PATTERN_MISDIRECTED,   /* a block stamped for another offset */
  LB_PATTERN_TORN,          /* partly the expected block */
  LB_PATTERN_FOREIGN        /* anything else */
};

struct lb_pattern_result {
  enum lb_pattern_class cls;
  uint64_t found_offset_bytes; /* MISDIRECTED: offset named by the header */
  uint32_t found_generation;   /* STALE, MISDIRECTED: header generation */
  bool found_intact;           /* the found block's own checksum holds */
  uint32_t nr_bad_sectors;     /* TORN: 512-byte sectors that differ */
  uint32_t first_bad_sector;   /* TORN: index of the first one */
  uint8_t bad_sectors[LB_PATTERN_MAX_SECTORS / 8]; /* TORN: bitmap */
};

/* True when block_bytes is a power of two from 512 to 64 KiB. */
bool lb_pattern_block_size_ok (uint32_t block_bytes);

/* Fill buf (key->block_bytes long) with the stamped block for key, or
 * with zeros when key->generation is 0.  key->block_bytes must satisfy
 * lb_pattern_block_size_ok (asserted).
 */
void lb_pattern_fill (const struct lb_pattern_key *key, void *buf);

/* Fill count bytes (a multiple of key->block_bytes) with consecutive
 * stamped blocks starting at key->offset_bytes.
 */
void lb_pattern_fill_range (const struct lb_pattern_key *key, void *buf,
                            size_t count);

/* Classify the block in buf (key->block_bytes long) against what key says
 * it should hold.  scratch must be key->block_bytes long; it receives the
 * expected block.  Returns the class, also stored in r->cls.
 */
enum lb_pattern_class lb_pattern_check (const struct lb_pattern_key *key,
                                        const void *buf, void *scratch,
                                        struct lb_pattern_result *r);

/* True if sector i (0-based) is marked in a TORN result's bitmap. */
bool lb_pattern_sector_bad (const struct lb_pattern_result *r, uint32_t i);

/* "good", "never-written", "stale", "misdirected", "torn", "foreign". */
const char *lb_pattern_class_name (enum lb_pattern_class cls);

/* One line describing a non-good result for the block at key, e.g.
 * "misdirected: block at 65536 holds the block stamped for 131072
 * (generation 2, intact)" or "torn: sectors 3,5-7 of 8 differ".
 * Returns buf.
 */
char *lb_pattern_describe (const struct lb_pattern_key *key,
                           const struct lb_pattern_result *r, char *buf,
                           size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* LARGEBLOCK_PATTERN_H */
