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
