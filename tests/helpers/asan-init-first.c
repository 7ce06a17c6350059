/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: initialise a preloaded sanitizer runtime before any other
 * library's constructor (an LD_PRELOAD shim, linked with -z initfirst).
 *
 * nbdkit is not instrumented, so the sanitizer builds (through
 * tests/helpers/nbdkit-wrapper.sh) and the session fuzzer
 * (scripts/fuzz-session.sh) preload the ASan runtime into it.  Preloaded
 * objects are initialised after the program's own libraries, so the first
 * malloc() in the process -- in libp11-kit's constructor, inside newlocale(),
 * which holds glibc's __libc_setlocale_lock for writing -- initialises ASan
 * lazily. ASan's start-up looks up an optional symbol with dlsym() and clears
 * the failure with dlerror(), which translates the message with dcgettext(),
 * which read-locks and then unlocks that same lock: the unlock releases
 * newlocale()'s write lock, and newlocale()'s own unlock then leaves the
 * lock with a reader count of -1.  The first strerror() (any "%m" in an
 * error message) makes that permanent, and at exit libp11-kit's
 * destructor waits forever in freelocale() for the lock: the "ASan exit
 * deadlock" of docs/testing.md, with gcc's libasan and clang's runtime
 * alike, and with nbdkit's own memory plugin as well as ours.
 *
 * DF_1_INITFIRST makes this constructor run before every other one, so
 * its malloc() initialises the runtime while no lock is held.
 */
#include <stdlib.h>

__attribute__ ((constructor)) static void
asan_init_first (void)
{
  free (malloc (1));
}
