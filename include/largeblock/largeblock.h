/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the verification library for Linux large block size (LBS)
 * tests -- geometry and unit translation, alignment classification,
 * aligned I/O on file descriptors, stamped blocks.  See largeblock(3).
 *
 *   cc t.c $(pkg-config --cflags --libs largeblock)
 *
 * Every function is thread-safe; each header says how its functions fail.
 * The exported symbols carry the version node that added them
 * (LARGEBLOCK_1.0, LARGEBLOCK_1.1: lb_version).
 */
#ifndef LARGEBLOCK_H
#define LARGEBLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

#include <largeblock/version.h>
#include <largeblock/geometry.h>
#include <largeblock/align.h>
#include <largeblock/pattern.h>
#include <largeblock/aligned-io.h>

#ifdef __cplusplus
}
#endif

#endif /* LARGEBLOCK_H */
