/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: what nbdkit's command line says -- see nbdkitargs.h.
 *
 * The option tables are nbdkit's (1.32 up to today): only -r matters,
 * and which options take an argument, so that "--run -r" or "-P -r" is
 * not read as -r.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbdkitargs.h"

/* Short options that take an argument (joined, -Ufoo, or the next word). */
static const char short_with_arg[] = "DegipPtuU";

struct long_option {
  const char *name;
  bool takes_arg;
  bool read_only;
};

static const struct long_option long_options[] = {
  { "debug", true, false },
  { "dump-config", false, false },
  { "dump-plugin", false, false },
  { "exit-with-parent", false, false },
  { "export", true, false },
  { "export-name", true, false },
  { "exportname", true, false },
  { "filter", true, false },
  { "foreground", false, false },
  { "no-fork", false, false },
  { "group", true, false },
  { "help", false, false },
  { "ip-addr", true, false },
  { "ipaddr", true, false },
  { "log", true, false },
  { "long-options", false, false },
  { "mask-handshake", true, false },
  { "new-style", false, false },
  { "newstyle", false, false },
  { "no-sr", false, false },
  { "old-style", false, false },
  { "oldstyle", false, false },
  { "pid-file", true, false },
  { "pidfile", true, false },
  { "port", true, false },
  { "read-only", false, true },
  { "readonly", false, true },
  { "run", true, false },
  { "selinux-label", true, false },
  { "short-options", false, false },
  { "single", false, false },
  { "stdin", false, false },
  { "swap", false, false },
  { "threads", true, false },
  { "tls", true, false },
  { "tls-certificates", true, false },
  { "tls-psk", true, false },
  { "tls-verify-peer", false, false },
  { "unix", true, false },
  { "user", true, false },
  { "verbose", false, false },
  { "version", false, false },
  { "vsock", false, false },
};
#define NR_LONG_OPTIONS (sizeof long_options / sizeof long_options[0])

/* The option "--word" (without "--", up to any '=') names, as
 * getopt_long finds it: an exact name, or a prefix of names that all mean
 * the same (--read is --read-only).  NULL: unknown or ambiguous, which
 * nbdkit refuses anyway.
 */
static const struct long_option *
find_long_option (const char *word, size_t n)
{
  const struct long_option *found = NULL;

  for (size_t i = 0; i < NR_LONG_OPTIONS; i++)
    if (strncmp (long_options[i].name, word, n) == 0 &&
        long_options[i].name[n] == '\0')
      return &long_options[i];
  for (size_t i = 0; i < NR_LONG_OPTIONS; i++) {
    const struct long_option *o = &long_options[i];

    if (strncmp (o->name, word, n) != 0)
      continue;
    if (found &&
        (found->takes_arg != o->takes_arg || found->read_only != o->read_only))
      return NULL;
    found = o;
  }
  return found;
}

/* One word that starts with "-" (not "-" or "--"): sets *read_only if it
 * says -r; returns how many following words it consumes as an argument.
 */
static int
parse_option_word (const char *word, bool *read_only)
{
  if (word[1] == '-') {
    const char *eq = strchr (word + 2, '=');
    size_t n = eq ? (size_t) (eq - word - 2) : strlen (word + 2);
    const struct long_option *o = find_long_option (word + 2, n);

    if (o == NULL)
      return 0;
    *read_only |= o->read_only;
    return o->takes_arg && eq == NULL ? 1 : 0;
  }
  for (const char *c = word + 1; *c; c++) {
    if (*c == 'r')
      *read_only = true;
    else if (strchr (short_with_arg, *c))
      return c[1] == '\0' ? 1 : 0; /* the rest is the argument */
  }
  return 0;
}

bool
lb_nbdkit_args_read_only (int argc, char *const *argv, bool stop_at_operand)
{
  bool read_only = false;

  for (int i = 1; i < argc; i++) {
    const char *w = argv[i];

    if (strcmp (w, "--") == 0)
      break;
    if (w[0] != '-' || w[1] == '\0') {
      if (stop_at_operand)
        break;
      continue;
    }
    i += parse_option_word (w, &read_only);
  }
  return read_only;
}

int
lb_nbdkit_cmdline_read_only (const char *buf, size_t len, bool stop_at_operand)
{
  char **argv;
  int argc = 0;
  bool r;

  argv = calloc (len + 1, sizeof *argv);
  if (argv == NULL) {
    errno = ENOMEM;
    return -1;
  }
  /* Each argument ends with a NUL; a last one without is ignored. */
  for (size_t start = 0, i = 0; i < len; i++)
    if (buf[i] == '\0') {
      argv[argc++] = (char *) buf + start;
      start = i + 1;
    }
  r = lb_nbdkit_args_read_only (argc, argv, stop_at_operand);
  free (argv);
  return r;
}

/* All of path into a new buffer; NULL with errno set. */
static char *
read_whole_file (const char *path, size_t *len)
{
  FILE *fp = fopen (path, "re");
  size_t size = 4096, n = 0;
  char *buf = NULL;

  if (fp == NULL)
    return NULL;
  for (;;) {
    char *bigger = realloc (buf, size);

    if (bigger == NULL) {
      free (buf);
      fclose (fp);
      errno = ENOMEM;
      return NULL;
    }
    buf = bigger;
    n += fread (buf + n, 1, size - n, fp);
    if (n < size)
      break;
    size *= 2;
  }
  if (ferror (fp)) {
    free (buf);
    fclose (fp);
    errno = EIO;
    return NULL;
  }
  fclose (fp);
  *len = n;
  return buf;
}

int
lb_nbdkit_self_read_only (void)
{
  size_t len;
  char *buf = read_whole_file ("/proc/self/cmdline", &len);
  int r;

  if (buf == NULL)
    return -1;
  r = lb_nbdkit_cmdline_read_only (buf, len, getenv ("POSIXLY_CORRECT"));
  free (buf);
  return r;
}
