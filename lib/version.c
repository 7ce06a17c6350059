/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the running library's version -- see version.h.  No state. */
#include <config.h>

#include "largeblock/version.h"

const char *
lb_version (void)
{
  return LARGEBLOCK_VERSION_STRING;
}
