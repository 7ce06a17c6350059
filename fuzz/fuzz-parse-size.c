/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock fuzzing: lb_parse_size (every size= style value).
 *
 * Input: the value as typed.  Properties: never crashes; fails with a
 * one-line message and EINVAL/ERANGE, or succeeds with a value of at most
 * 2^63-1 that parses back to itself when printed in plain decimal.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "largeblock/geometry.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *str = malloc (size + 1);
  char err[256], again[32];
  uint64_t bytes = 0, back = 0;

  if (str == NULL)
    return 0;
  memcpy (str, data, size);
  str[size] = '\0';
  err[0] = '\0';
  if (lb_parse_size ("size", str, &bytes, err, sizeof err) == 0) {
    assert (bytes <= INT64_MAX);
    snprintf (again, sizeof again, "%" PRIu64, bytes);
    assert (lb_parse_size ("size", again, &back, err, sizeof err) == 0);
    assert (back == bytes);
  }
  else {
    assert (errno == EINVAL || errno == ERANGE);
    assert (err[0] != '\0' && strlen (err) < sizeof err);
    assert (strchr (err, '\n') == NULL);
  }
  free (str);
  return 0;
}
