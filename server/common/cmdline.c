/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: the shared command-line shape -- see
 * cmdline.h.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"

int
cmdline_split (int argc, char **argv, int optind, char ***params,
               int *nr_params)
{
  int i = optind;

  *params = &argv[optind];
  *nr_params = 0;
  if (optind > 1 && strcmp (argv[optind - 1], "--") == 0)
    return optind; /* getopt consumed a "--" before any PARAM */
  while (i < argc && strcmp (argv[i], "--") != 0)
    i++;
  *nr_params = i - optind;
  return i < argc ? i + 1 : argc;
}

int
cmdline_count (const char *prog, const char *opt, const char *arg,
               unsigned max, unsigned *out)
{
  char *end;
  unsigned long v;

  errno = 0;
  v = strtoul (arg, &end, 10);
  if (errno || *end || end == arg || arg[0] == '-' || v < 1 || v > max) {
    fprintf (stderr, "%s: --%s=%s: must be 1 to %u\n", prog, opt, arg, max);
    return -1;
  }
  *out = v;
  return 0;
}

const char *
cmdline_nbdkit (void)
{
  const char *nbdkit = getenv ("NBDKIT");

  return nbdkit && *nbdkit ? nbdkit : "nbdkit";
}
