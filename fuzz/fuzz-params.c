/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock fuzzing: lb_params_set and lb_params_finish (the whole
 * plugin command line, geometry rules included).
 *
 * Input: "key=value" lines.  Properties: never crashes or leaks; every
 * refusal is a non-empty one-line message; an accepted geometry obeys
 * every rule of nbdkit-largeblock-plugin(1), and folio/sector
 * translations stay in range.
 */
#include <config.h>

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "largeblock/geometry.h"
#include "params.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
check_message (const char *err, size_t errlen)
{
  assert (err[0] != '\0' && strlen (err) < errlen);
  assert (strchr (err, '\n') == NULL);
}

static void
check_geometry (const struct lb_geometry *g)
{
  assert (lb_is_power_of_2 (g->physical_bytes));
  assert (lb_is_power_of_2 (g->logical_bytes));
  assert (g->logical_bytes >= 512 && g->logical_bytes <= 65536);
  assert (g->physical_bytes >= 512 && g->physical_bytes <= (32u << 20));
  assert (g->logical_bytes <= g->physical_bytes);
  assert (g->size_bytes > 0 && g->size_bytes <= INT64_MAX);
  assert (g->size_bytes % g->logical_bytes == 0);
  assert (g->max_request_bytes % g->logical_bytes == 0);
  assert (g->max_request_bytes >= g->physical_bytes);
  assert ((1ull << g->physical_shift) == g->physical_bytes);
  assert ((1ull << g->logical_shift) == g->logical_bytes);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = malloc (size + 1), *line, *save = NULL, *eq;
  struct lb_params p;
  struct lb_geometry g;
  char err[256];
  int failed = 0;

  if (text == NULL)
    return 0;
  memcpy (text, data, size);
  text[size] = '\0';
  lb_params_init (&p);
  for (line = strtok_r (text, "\n", &save); line && !failed;
       line = strtok_r (NULL, "\n", &save)) {
    eq = strchr (line, '=');
    if (eq == NULL)
      continue;
    *eq = '\0';
    err[0] = '\0';
    if (lb_params_set (&p, line, eq + 1, err, sizeof err) == -1) {
      check_message (err, sizeof err);
      failed = 1;
    }
  }
  if (!failed) {
    err[0] = '\0';
    if (lb_params_finish (&p, &g, err, sizeof err) == 0)
      check_geometry (&g);
    else
      check_message (err, sizeof err);
  }
  lb_params_free (&p);
  free (text);
  return 0;
}
