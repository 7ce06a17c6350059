/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: JSON strings on stdout -- see json.h.  No state. */
#include <config.h>

#include <stdio.h>

#include "json.h"

void
json_string (const char *s)
{
  putchar ('"');
  for (; *s; s++)
    if (*s == '"' || *s == '\\')
      printf ("\\%c", *s);
    else if ((unsigned char) *s < 0x20)
      printf ("\\u%04x", *s);
    else
      putchar (*s);
  putchar ('"');
}

void
json_string_lines (const char *lines, size_t stride, unsigned n)
{
  for (unsigned i = 0; i < n; i++) {
    printf ("%s\n   ", i ? "," : "");
    json_string (lines + i * stride);
  }
}
