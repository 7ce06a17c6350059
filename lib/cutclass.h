/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: what a power cut left in a region of stamped blocks.
 *
 * After a power cut on a disk with a volatile write cache, each physical
 * block that held unflushed data holds its old (last durable) content,
 * its new content, or -- if the device only guarantees logical-block
 * atomicity -- a mix at logical-block boundaries.  This module names
 * which, from the stamped blocks of lib/pattern: a region is written with
 * generation old_gen, flushed, written with new_gen without a flush, and
 * after the cut every logical block (one stamped block) must be exactly
 * one of the two.  Each physical block is then:
 *
 *   LB_CUTCLASS_OLD      every logical block is old_gen;
 *   LB_CUTCLASS_NEW      every logical block is new_gen;
 *   LB_CUTCLASS_TORN     some old, some new, each logical block whole;
 *   LB_CUTCLASS_FOREIGN  a logical block that is neither generation whole
 *                        (torn inside itself, zeros, misdirected, another
 *                        generation or seed): wrong after any cut.
 *
 * and lb_cutclass_allowed says which classes each power-cut mode of
 * lib/disk/wcache permits: lose only old; atomic old or new; torn old, new or
 * torn; foreign never.
 *
 * Everything here is pure: no state, no locking, safe from any thread.
 */
#ifndef LARGEBLOCK_CUTCLASS_H
#define LARGEBLOCK_CUTCLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "largeblock/pattern.h"
#include "wcache.h"

/* Logical blocks per physical block: 64k physical over 512-byte logical. */
#define LB_CUTCLASS_MAX_LOGICAL \
  (LB_PATTERN_MAX_BLOCK_BYTES / LB_PATTERN_MIN_BLOCK_BYTES)

enum lb_cutclass {
  LB_CUTCLASS_OLD,
  LB_CUTCLASS_NEW,
  LB_CUTCLASS_TORN,
  LB_CUTCLASS_FOREIGN,
  LB_CUTCLASS__COUNT
};

/* The region: its stamped blocks (logical_bytes each, lib/pattern) are
 * grouped into physical blocks of physical_bytes.
 */
struct lb_cutclass_layout {
  uint64_t seed;
  uint32_t old_gen; /* durable before the cut; 0 = zeros */
  uint32_t new_gen; /* written after the last flush; != old_gen */
  uint32_t logical_bytes;
  uint32_t physical_bytes;
};

/* Per logical block: 'o' old, 'n' new, 'x' neither. */
#define LB_CUTCLASS_LOGICAL_OLD 'o'
#define LB_CUTCLASS_LOGICAL_NEW 'n'
#define LB_CUTCLASS_LOGICAL_FOREIGN 'x'

struct lb_cutclass_result {
  enum lb_cutclass cls;
  uint32_t nr_logical;
  uint32_t nr_old, nr_new, nr_foreign;
  /* One character per logical block, NUL-terminated. */
  char map[LB_CUTCLASS_MAX_LOGICAL + 1];
  /* FOREIGN: the first foreign logical block, checked against new_gen. */
  uint32_t first_foreign;
  struct lb_pattern_key foreign_key;
  struct lb_pattern_result foreign;
};

/* NULL if the layout is usable, else why not (one line naming the value
 * and the rule): logical_bytes a valid stamped block size, physical_bytes
 * a power of two and a multiple of it, at most LB_CUTCLASS_MAX_LOGICAL logical
 * blocks in it, old_gen != new_gen.
 */
const char *lb_cutclass_layout_invalid (const struct lb_cutclass_layout *l);

/* Classify the physical block at offset_bytes (a multiple of
 * physical_bytes) whose content is buf (physical_bytes long).  scratch
 * must be logical_bytes long.  The layout must be valid (asserted).
 * Returns the class, also in r->cls.
 */
enum lb_cutclass lb_cutclass_check (const struct lb_cutclass_layout *l,
                                    uint64_t offset_bytes, const void *buf,
                                    void *scratch,
                                    struct lb_cutclass_result *r);

/* Whether a power cut in mode may leave a physical block of class cls. */
bool lb_cutclass_allowed (enum lb_cut_mode mode, enum lb_cutclass cls);

/* "old", "new", "torn", "foreign". */
const char *lb_cutclass_name (enum lb_cutclass cls);

/* Counts per class of a whole region. */
struct lb_cutclass_summary {
  uint64_t blocks[LB_CUTCLASS__COUNT];
};

/* Whether summary s is what a cut in mode may leave: 0, or -1 with errno
 * = EINVAL and one line in err naming the first class the mode forbids,
 * how many blocks have it and the mode's rule, e.g. "3 physical blocks
 * are torn, but power-cut-mode atomic keeps or loses each physical block
 * whole".
 */
int lb_cutclass_summary_check (const struct lb_cutclass_summary *s,
                               enum lb_cut_mode mode, char *err,
                               size_t errlen);

/* One line about a FOREIGN result, e.g. "physical block at 65536: logical
 * block 2 (at 73728) is neither generation 1 nor 2: torn: block at 73728
 * generation 2, sectors 0-3 of 8 differ".  Returns buf.
 */
char *lb_cutclass_describe (const struct lb_cutclass_layout *l,
                            uint64_t offset_bytes,
                            const struct lb_cutclass_result *r, char *buf,
                            size_t buflen);

#endif /* LARGEBLOCK_CUTCLASS_H */
