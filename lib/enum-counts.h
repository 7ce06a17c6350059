/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: how many values the public enums have, for the tables
 * indexed by them (names, statistics, report counts).
 *
 * Private to the tree: the public enums in <largeblock/align.h> and
 * <largeblock/pattern.h> carry no count, so that adding a value does not
 * change a number users could have compiled in.  Owns no state.
 */
#ifndef LARGEBLOCK_ENUM_COUNTS_H
#define LARGEBLOCK_ENUM_COUNTS_H

#include "largeblock/align.h"
#include "largeblock/pattern.h"

/* Each names its enum's last value: a value added to the enum goes after
 * it, and the line here then names the new last one. */
#define LB_REQ_NR_TYPES (LB_REQ_FLUSH + 1)
#define LB_PATTERN_NR_CLASSES (LB_PATTERN_FOREIGN + 1)

#endif /* LARGEBLOCK_ENUM_COUNTS_H */
