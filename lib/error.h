/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: how lib/ reports an error.
 *
 * Every lib function that can fail returns -1 (or NULL) with errno set to
 * what a client or caller should see, and writes one line naming the
 * parameter, the value and the rule into a caller's buffer.  lb_fail does
 * both, and keeps no state.  The one state here is per thread: a fault
 * code (lb_set_fault, lb_take_fault) that says why the calling thread's
 * last request failed, in a thread-local variable -- so every function is
 * safe from any thread, and no thread sees another's fault.
 */
#ifndef LARGEBLOCK_ERROR_H
#define LARGEBLOCK_ERROR_H

#include <stddef.h>

/* Format the message into err (if err is not NULL and errlen > 0), with
 * every control character (newline, tab, ESC, ...) replaced by '?' so it
 * stays one line; set errno = errnum, return -1.
 */
int lb_fail (int errnum, char *err, size_t errlen, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));

enum lb_fault {
  LB_FAULT_NONE,
  LB_FAULT_PAST_EOF,  /* a read reached past the end of the backing file */
  LB_FAULT_POWER_CUT, /* EIO: the connection outlived a power cut */
  LB_FAULT_CRASH_LOG, /* ENOSPC: the crash log is full; EIO: broken */
};

/* Set the calling thread's fault code. */
void lb_set_fault (enum lb_fault fault);

/* The calling thread's fault code, which goes back to LB_FAULT_NONE. */
enum lb_fault lb_take_fault (void);

#endif /* LARGEBLOCK_ERROR_H */
