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
  }
  errno = errnum;
  return -1;
}
