/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: what nbdkit's command line says that nbdkit does not tell
 * a plugin.
 *
 * nbdkit passes -r (read-only) to a plugin only per connection, in
 * .open, after it has started serving; but a file disk must know at
 * start-up whether it will be written, to take the right lock on its
 * file (exclusive or shared) and to refuse a file it cannot write before
 * any client connects.  So the plugin reads nbdkit's own command line
 * (/proc/self/cmdline) and finds -r there the way nbdkit's getopt_long
 * does: short options, clustered or not, long options and their unique
 * abbreviations, options that take an argument (whose argument is never
 * mistaken for -r), operands anywhere before "--" (GNU argument
 * permutation) unless POSIXLY_CORRECT stops at the first one.
 *
 * A misreading can only be safe: a command line not understood reads as
 * read-write, which takes the stricter (exclusive) lock; a read-only
 * store still refuses read-write connections in .open.
 *
 * Pure functions; no state, no locking.
 */
#ifndef LARGEBLOCK_NBDKITARGS_H
#define LARGEBLOCK_NBDKITARGS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the command line argv[0 .. argc) (argv[0] the program) asks
 * nbdkit for -r, --readonly or --read-only.  stop_at_operand: parse as
 * with POSIXLY_CORRECT set (options end at the first operand).
 */
bool lb_nbdkit_args_read_only (int argc, char *const *argv,
                               bool stop_at_operand);

/* The same for a command line as /proc/PID/cmdline holds it: len bytes of
 * NUL-terminated arguments.  Returns 1 (read-only), 0 (read-write), or -1
 * with errno = ENOMEM.
 */
int lb_nbdkit_cmdline_read_only (const char *buf, size_t len,
                                 bool stop_at_operand);

/* The same for this process (/proc/self/cmdline, POSIXLY_CORRECT from
 * the environment).  Returns 1, 0, or -1 with errno set when the command
 * line cannot be read.
 */
int lb_nbdkit_self_read_only (void);

#endif /* LARGEBLOCK_NBDKITARGS_H */
