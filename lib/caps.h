/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: least privilege -- dropping capabilities after start-up.
 *
 * Owns the rule for what a running server keeps: nothing, except
 * CAP_DAC_OVERRIDE when it must still write the statistics file at exit
 * (into a directory root may only write with it).  Everything the disk
 * needs (opening the file or block device) happens before the drop.
 *
 * The effective, permitted and inheritable sets of the calling thread are
 * cleared; threads created afterwards inherit them, so call it before the
 * server starts its worker threads.  The bounding set is left alone, so
 * commands a root server runs (nbdkit --run) get root's usual powers.
 */
#ifndef LARGEBLOCK_CAPS_H
#define LARGEBLOCK_CAPS_H

#include <stdbool.h>
#include <stddef.h>

/* Drop every capability but those the rule above keeps.  Returns 1 after
 * dropping (with what is kept described in `kept`, e.g. "none"), 0 when the
 * process had no capabilities to drop, or -1 with a message in err.
 */
int lb_caps_drop (bool keep_dac_override, char *kept, size_t keptlen,
                  char *err, size_t errlen);

#endif /* LARGEBLOCK_CAPS_H */
