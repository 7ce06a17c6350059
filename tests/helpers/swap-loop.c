/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock tests: the attacker of the --cleanup symlink-swap test.
 *
 *   swap-loop DIR N
 *
 * Swaps DIR/dI with DIR/lI (I = 0 .. N-1) atomically with renameat2
 * RENAME_EXCHANGE, over and over, until it is killed: a directory a
 * remover has just looked at becomes a symlink, and back.  Errors (the
 * names being removed meanwhile) are ignored.  Writes one line to stdout
 * once it has swapped everything once, so the test can wait for it.
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  char d_name[32], l_name[32];
  long n;
  int dir_fd;

  if (argc != 3 || (n = strtol (argv[2], NULL, 10)) <= 0) {
    fprintf (stderr, "usage: swap-loop DIR N\n");
    return 2;
  }
  dir_fd = open (argv[1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (dir_fd == -1) {
    perror (argv[1]);
    return 1;
  }
  for (unsigned long round = 0;; round++) {
    for (long i = 0; i < n; i++) {
      snprintf (d_name, sizeof d_name, "d%ld", i);
      snprintf (l_name, sizeof l_name, "l%ld", i);
      renameat2 (dir_fd, d_name, dir_fd, l_name, RENAME_EXCHANGE);
    }
    if (round == 0) {
      puts ("swapping");
      fflush (stdout);
    }
  }
}
