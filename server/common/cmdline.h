/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: the command-line shape they share,
 *
 *   PROG [--OPTION...] [PARAM=VALUE...] [-- COMMAND [ARG...]]
 *
 * after getopt_long ("+...") has taken the options: where the plugin's
 * parameters and the COMMAND are, counts given to options, and which
 * nbdkit to run.  Stateless.
 */
#ifndef LARGEBLOCK_COMMON_CMDLINE_H
#define LARGEBLOCK_COMMON_CMDLINE_H

/* The words after the options: PARAM=VALUE words up to "--", then the
 * COMMAND.  getopt leaves optind after a "--" it met before any other
 * word, so that case has no PARAMs.  Sets *params and *nr_params, and
 * returns the index of COMMAND's first word, argc when there is none.
 */
int cmdline_split (int argc, char **argv, int optind, char ***params,
                   int *nr_params);

/* --OPT=ARG as a count from 1 to max: 0 and *out set, or -1 after
 * "PROG: --OPT=ARG: must be 1 to MAX" on stderr.
 */
int cmdline_count (const char *prog, const char *opt, const char *arg,
                   unsigned max, unsigned *out);

/* $NBDKIT if set and not empty, else "nbdkit" (found on PATH). */
const char *cmdline_nbdkit (void);

#endif /* LARGEBLOCK_COMMON_CMDLINE_H */
