/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: which plugin their nbdkit serves.
 * Stateless.
 */
#ifndef LARGEBLOCK_COMMON_PLUGIN_CHOICE_H
#define LARGEBLOCK_COMMON_PLUGIN_CHOICE_H

#include <stddef.h>

/* OPT (--plugin) if given, else $LARGEBLOCK_PLUGIN if set and not
 * empty, else the plugin installed with PROG, by its full path; from
 * gets where the choice came from, for --verbose.
 */
const char *plugin_choose (const char *opt, const char *prog, char *from,
                           size_t fromlen);

#endif /* LARGEBLOCK_COMMON_PLUGIN_CHOICE_H */
