/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: which plugin their nbdkit serves.
 *
 * Never the bare name by default: nbdkit would resolve that in its own
 * plugin directory, which may hold someone else's older copy; the
 * programs serve the plugin installed with them (LARGEBLOCK_PLUGINDIR,
 * set at build time).  Stateless.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "plugin-choice.h"

const char *
plugin_choose (const char *opt, const char *prog, char *from, size_t fromlen)
{
  const char *env = getenv ("LARGEBLOCK_PLUGIN");

  if (opt && *opt) {
    snprintf (from, fromlen, "--plugin");
    return opt;
  }
  if (env && *env) {
    snprintf (from, fromlen, "LARGEBLOCK_PLUGIN");
    return env;
  }
  snprintf (from, fromlen, "installed with %s", prog);
  return LARGEBLOCK_PLUGINDIR "/nbdkit-largeblock-plugin.so";
}
