/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock fuzzing: run a harness over files, without libFuzzer.
 *
 * "make check" builds each harness with this main() and the ordinary
 * compiler and replays the seed corpus and every past crash
 * (fuzz/corpus/HARNESS, fuzz/regressions/HARNESS), so a fixed bug stays
 * fixed even where clang is missing -- and under the sanitizer builds.
 */
#include <config.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static int
replay_file (const char *path)
{
  FILE *fp = fopen (path, "rb");
  uint8_t *buf = NULL;
  long len;

  if (fp == NULL || fseek (fp, 0, SEEK_END) == -1 || (len = ftell (fp)) < 0 ||
      fseek (fp, 0, SEEK_SET) == -1 ||
      (buf = malloc (len ? (size_t) len : 1)) == NULL ||
      fread (buf, 1, (size_t) len, fp) != (size_t) len) {
    perror (path);
    if (fp)
      fclose (fp);
    free (buf);
    return -1;
  }
  fclose (fp);
  LLVMFuzzerTestOneInput (buf, (size_t) len);
  free (buf);
  return 0;
}

int
main (int argc, char *argv[])
{
  int n = 0;

  for (int i = 1; i < argc; i++) {
    DIR *d = opendir (argv[i]);
    struct dirent *e;

    if (d == NULL) {
      if (replay_file (argv[i]) == -1)
        return 1;
      n++;
      continue;
    }
    while ((e = readdir (d)) != NULL) {
      char path[4096];
      struct stat st;

      snprintf (path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (stat (path, &st) == -1 || !S_ISREG (st.st_mode))
        continue;
      if (replay_file (path) == -1) {
        closedir (d);
        return 1;
      }
      n++;
    }
    closedir (d);
  }
  printf ("replayed %d inputs\n", n);
  return n > 0 ? 0 : 1;
}
