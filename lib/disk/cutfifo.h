/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: power cuts on demand through a FIFO.
 *
 * A test script cuts the power at a moment of its choosing by writing the
 * line "cut" into a named pipe the server watches (echo cut > PATH): no
 * signals (nbdkit owns them), no client library, no restart.  The line
 * "cut N" (N a decimal number, 1 or more) asks for cut number N: the
 * power is cut unless N cuts have already happened, so several parties
 * (a workload, a harness, power-cut-after) that each want "the first
 * cut" ask for "cut 1" and the disk loses power once.  The FIFO is
 * created when missing (mode 0600) and removed again at close; an existing
 * path is used only if it is a FIFO, not a symbolic link, owned by the
 * server's effective uid and not writable by group or others (anyone who
 * can write to it can cut the power).  The server holds it open for
 * reading and writing, so writers come and go without it ever seeing
 * end-of-file.
 *
 * Owns the FIFO's descriptor and one watcher thread.  Lines are handled
 * one at a time on that thread, in the order they were written: "cut"
 * calls cut(0, opaque), "cut N" cut(N, opaque) (the callback owns the
 * count of cuts, and decides); blank lines are ignored; any other line
 * calls complain(line, opaque).  Lines longer than LB_CUTFIFO_LINE_MAX
 * are complained about in pieces.
 *
 * lb_cutfifo_open runs before nbdkit forks (so errors stop the start),
 * lb_cutfifo_start after (threads do not survive a fork).
 */
#ifndef LARGEBLOCK_CUTFIFO_H
#define LARGEBLOCK_CUTFIFO_H

#include <stddef.h>
#include <stdint.h>

#define LB_CUTFIFO_LINE_MAX 256

struct lb_cutfifo;

/* nth: 0 for "cut", N for "cut N". */
typedef void (*lb_cutfifo_cut_fn) (uint64_t nth, void *opaque);
typedef void (*lb_cutfifo_complain_fn) (const char *line, void *opaque);

/* What one line (without its newline) asks for: 1, a cut (*nth = 0 for
 * "cut", N for "cut N"); 0, nothing (blank); -1 with errno = EINVAL for
 * anything else ("cut 0", "cut -1", "cut x", "cut 1 2", a number beyond
 * 2^64-1, "cuts").  Spaces, tabs and a carriage return around and
 * between the words are allowed.
 */
int lb_cutfifo_parse_line (const char *line, uint64_t *nth);

/* Create (if missing, mode 0600) and open path, refusing an existing path
 * that breaks the rule above.  Returns the watcher, not started, or NULL
 * with errno (EPERM: a link, another owner, group/other write; EINVAL:
 * not a FIFO) and a one-line message naming power-cut-fifo, the path and
 * the rule in err; a FIFO this call made is removed again on failure.
 */
struct lb_cutfifo *lb_cutfifo_open (const char *path, lb_cutfifo_cut_fn cut,
                                    lb_cutfifo_complain_fn complain,
                                    void *opaque, char *err, size_t errlen);

/* Start the watcher thread.  Returns 0, or -1 with errno and a message. */
int lb_cutfifo_start (struct lb_cutfifo *w, char *err, size_t errlen);

/* Stop the thread (if started), close the FIFO, remove it if
 * lb_cutfifo_open made it and the path still names that FIFO (one it found
 * stays), free w.  Waits for a cut in progress.  w may be NULL.
 */
void lb_cutfifo_close (struct lb_cutfifo *w);

#endif /* LARGEBLOCK_CUTFIFO_H */
