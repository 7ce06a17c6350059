/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: least privilege -- see caps.h. */
#include <config.h>

#include <errno.h>
#include <stdio.h>

#include <cap-ng.h>

#include "caps.h"
#include "error.h"

int
lb_caps_drop (bool keep_dac_override, char *kept, size_t keptlen, char *err,
              size_t errlen)
{
  if (capng_get_caps_process () != 0)
    return lb_fail (EPERM, err, errlen,
                    "cannot read the process capabilities");
  if (capng_have_capabilities (CAPNG_SELECT_CAPS) == CAPNG_NONE)
    return 0;

  capng_clear (CAPNG_SELECT_CAPS);
  if (keep_dac_override &&
      capng_update (CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED,
                    CAP_DAC_OVERRIDE) != 0)
    return lb_fail (EPERM, err, errlen, "cannot keep cap_dac_override");
  if (capng_apply (CAPNG_SELECT_CAPS) != 0)
    return lb_fail (EPERM, err, errlen, "cannot drop capabilities");
  snprintf (kept, keptlen, "%s",
            keep_dac_override ? "cap_dac_override (for statsfile=)" : "none");
  return 1;
}
