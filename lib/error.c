/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: how lib/ reports an error -- see error.h. */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

int
lb_fail (int errnum, char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if (err && errlen) {
    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
    /* One line, whatever the user typed: a value with a newline or other
     * control characters must not break the message (or forge a second
     * log line).  Found by fuzz/fuzz-parse-size.c. */
    for (char *c = err; *c; c++)
      if ((unsigned char) *c < 0x20 || *c == 0x7f)
        *c = '?';
  }
  errno = errnum;
  return -1;
}

static _Thread_local enum lb_fault thread_fault;

void
lb_set_fault (enum lb_fault fault)
{
  thread_fault = fault;
}

enum lb_fault
lb_take_fault (void)
{
  enum lb_fault fault = thread_fault;

  thread_fault = LB_FAULT_NONE;
  return fault;
}
