/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: writing JSON strings on stdout, for the --json
 * reports of the integrity run (largeblock-verify.c) and the power-cut
 * run (verify-power-cut.c).
 *
 * Its own module so that neither report calls back into the program's
 * main file.  No state; stdout's own lock is the only one taken.
 */
#ifndef LARGEBLOCK_VERIFY_JSON_H
#define LARGEBLOCK_VERIFY_JSON_H

#include <stddef.h>

/* Print s as a JSON string (quoted, escaped) on stdout. */
void json_string (const char *s);

/* The n strings at lines, stride bytes apart, as the elements of a JSON
 * array (one per line, comma-separated; no brackets).
 */
void json_string_lines (const char *lines, size_t stride, unsigned n);

#endif /* LARGEBLOCK_VERIFY_JSON_H */
