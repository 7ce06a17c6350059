/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: reading a statsfile back -- see statsread.h.
 *
 * A recursive-descent reader over the bytes [p, end) of one document,
 * RFC 8259's grammar: values it needs are decoded (strings, unsigned
 * integers), the rest are checked and skipped, nesting at most
 * MAX_DEPTH deep (so a hostile file cannot exhaust the stack).  It never
 * reads past end, and needs no terminating NUL.  No state outside the
 * caller's stack: safe from any thread.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "statsread.h"

#define MAX_DEPTH 64
#define MAX_FILE_BYTES (1 << 20)
#define KEY_MAX 32 /* longer keys are none of ours */

struct reader {
  const char *start, *p, *end;
  char *err;
  size_t errlen;
};

static int
bad (struct reader *rd, const char *what)
{
  return lb_fail (EINVAL, rd->err, rd->errlen, "byte %zu: %s",
                  (size_t) (rd->p - rd->start), what);
}

static void
skip_space (struct reader *rd)
{
  while (rd->p < rd->end &&
         (*rd->p == ' ' || *rd->p == '\t' || *rd->p == '\n' || *rd->p == '\r'))
    rd->p++;
}

/* Skip space, then: the next byte, or -1 at the end. */
static int
peek (struct reader *rd)
{
  skip_space (rd);
  return rd->p < rd->end ? (unsigned char) *rd->p : -1;
}

static int
expect (struct reader *rd, char c, const char *what)
{
  if (peek (rd) != c)
    return bad (rd, what);
  rd->p++;
  return 0;
}

static bool
is_digit (int c)
{
  return c >= '0' && c <= '9';
}

static bool
is_hex (char c)
{
  return is_digit (c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string at rd->p, decoded into buf (escapes resolved; \uXXXX as '?',
 * enough for comparing with our ASCII names).  A string longer than
 * len - 1 is checked to its end and cut short, with *whole = false.
 */
static int
read_string (struct reader *rd, char *buf, size_t len, bool *whole)
{
  size_t n = 0;

  *whole = true;
  if (expect (rd, '"', "expected a string") == -1)
    return -1;
  for (;;) {
    char c;

    if (rd->p == rd->end)
      return bad (rd, "unterminated string");
    c = *rd->p++;
    if (c == '"')
      break;
    if ((unsigned char) c < 0x20)
      return bad (rd, "control character in a string");
    if (c == '\\') {
      if (rd->p == rd->end)
        return bad (rd, "unterminated string");
      c = *rd->p++;
      switch (c) {
      case '"':
      case '\\':
      case '/': break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u':
        for (int i = 0; i < 4; i++, rd->p++)
          if (rd->p == rd->end || !is_hex (*rd->p))
            return bad (rd, "bad \\u escape in a string");
        c = '?';
        break;
      default: return bad (rd, "bad escape in a string");
      }
    }
    if (n + 1 < len)
      buf[n++] = c;
    else
      *whole = false;
  }
  if (len)
    buf[n] = '\0';
  return 0;
}

static int
bad_member (struct reader *rd, const char *name, const char *what)
{
  char msg[96];

  snprintf (msg, sizeof msg, "write_cache: %s %s", name, what);
  return bad (rd, msg);
}

/* Member name's value, an unsigned integer 0 ... 2^64-1 (no sign,
 * fraction or exponent).
 */
static int
read_uint64 (struct reader *rd, const char *name, uint64_t *v)
{
  const char *first;

  *v = 0;
  if (!is_digit (peek (rd)))
    return bad_member (rd, name, "is not an unsigned integer");
  first = rd->p;
  for (; rd->p < rd->end && is_digit (*rd->p); rd->p++) {
    unsigned d = (unsigned) (*rd->p - '0');

    if (*v > (UINT64_MAX - d) / 10)
      return bad_member (rd, name, "is beyond 2^64-1");
    *v = *v * 10 + d;
  }
  if (*first == '0' && rd->p - first > 1)
    return bad_member (rd, name, "has a leading zero");
  if (rd->p < rd->end && (*rd->p == '.' || *rd->p == 'e' || *rd->p == 'E'))
    return bad_member (rd, name, "is not an integer");
  return 0;
}

static int
skip_digits (struct reader *rd)
{
  if (rd->p == rd->end || !is_digit (*rd->p))
    return bad (rd, "bad number");
  while (rd->p < rd->end && is_digit (*rd->p))
    rd->p++;
  return 0;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int
skip_number (struct reader *rd)
{
  if (*rd->p == '-')
    rd->p++;
  if (rd->p < rd->end && *rd->p == '0')
    rd->p++;
  else if (skip_digits (rd) == -1)
    return -1;
  if (rd->p < rd->end && *rd->p == '.') {
    rd->p++;
    if (skip_digits (rd) == -1)
      return -1;
  }
  if (rd->p < rd->end && (*rd->p == 'e' || *rd->p == 'E')) {
    rd->p++;
    if (rd->p < rd->end && (*rd->p == '+' || *rd->p == '-'))
      rd->p++;
    if (skip_digits (rd) == -1)
      return -1;
  }
  return 0;
}

static int
skip_word (struct reader *rd)
{
  static const char *const words[] = { "true", "false", "null" };

  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t n = strlen (words[i]);

    if ((size_t) (rd->end - rd->p) >= n && memcmp (rd->p, words[i], n) == 0) {
      rd->p += n;
      return 0;
    }
  }
  return bad (rd, "expected a value");
}

/* The next member of an object whose '{' has been read: 1 with its key
 * in key and the ':' read; 0 at the closing '}' (read).
 */
static int
next_member (struct reader *rd, bool *first, char *key, size_t keylen,
             bool *whole)
{
  if (peek (rd) == '}') {
    rd->p++;
    return 0;
  }
  if (!*first && expect (rd, ',', "expected ',' or '}' in an object") == -1)
    return -1;
  /* After a ',' a key must follow: "{ \"a\": 1, }" fails below. */
  *first = false;
  if (read_string (rd, key, keylen, whole) == -1 ||
      expect (rd, ':', "expected ':' after a key") == -1)
    return -1;
  return 1;
}

static int skip_value (struct reader *rd, int depth);

static int
skip_object (struct reader *rd, int depth)
{
  char key[KEY_MAX];
  bool first = true, whole;
  int r;

  rd->p++; /* '{' */
  while ((r = next_member (rd, &first, key, sizeof key, &whole)) == 1)
    if (skip_value (rd, depth) == -1)
      return -1;
  return r;
}

static int
skip_array (struct reader *rd, int depth)
{
  rd->p++; /* '[' */
  if (peek (rd) == ']') {
    rd->p++;
    return 0;
  }
  for (;;) {
    if (skip_value (rd, depth) == -1)
      return -1;
    if (peek (rd) == ']') {
      rd->p++;
      return 0;
    }
    if (expect (rd, ',', "expected ',' or ']' in an array") == -1)
      return -1;
  }
}

/* Check and pass over one value of any type. */
static int
skip_value (struct reader *rd, int depth)
{
  char buf[1];
  bool whole;
  int c = peek (rd);

  if (depth >= MAX_DEPTH)
    return bad (rd, "nested too deeply");
  switch (c) {
  case -1: return bad (rd, "unexpected end, expected a value");
  case '{': return skip_object (rd, depth + 1);
  case '[': return skip_array (rd, depth + 1);
  case '"': return read_string (rd, buf, sizeof buf, &whole);
  case '-': return skip_number (rd);
  default:
    if (is_digit (c))
      return skip_number (rd);
    return skip_word (rd);
  }
}

/* The write cache's members, in the order lb_wcache_write_json writes
 * them; "mode" is the one string.
 */
static const struct counter {
  const char *key;
  size_t offset;
} counters[] = {
  { "seed", offsetof (struct lb_statsread_wcache, seed) },
  { "size", offsetof (struct lb_statsread_wcache, size_bytes) },
  { "bytes_peak", offsetof (struct lb_statsread_wcache, bytes_peak) },
  { "implicit_flushes",
    offsetof (struct lb_statsread_wcache, implicit_flushes) },
  { "written_through",
    offsetof (struct lb_statsread_wcache, written_through) },
  { "cuts", offsetof (struct lb_statsread_wcache, cuts) },
  { "blocks_kept", offsetof (struct lb_statsread_wcache, blocks_kept) },
  { "blocks_lost", offsetof (struct lb_statsread_wcache, blocks_lost) },
  { "blocks_torn", offsetof (struct lb_statsread_wcache, blocks_torn) },
  { "logical_kept", offsetof (struct lb_statsread_wcache, logical_kept) },
  { "logical_lost", offsetof (struct lb_statsread_wcache, logical_lost) },
};
#define NR_COUNTERS (sizeof counters / sizeof counters[0])
#define MODE_BIT (1u << NR_COUNTERS)
#define ALL_BITS (MODE_BIT | (MODE_BIT - 1))

static int
read_mode (struct reader *rd, struct lb_statsread_wcache *wc)
{
  char name[16];
  bool whole;

  if (peek (rd) != '"')
    return bad_member (rd, "mode", "is not a string");
  if (read_string (rd, name, sizeof name, &whole) == -1)
    return -1;
  if (!whole || lb_cut_mode_from_name (name, &wc->mode) == -1)
    return bad_member (rd, "mode", "is not lose, atomic or torn");
  return 0;
}

/* One member of the write_cache object whose key is key; seen records
 * the members read so far.
 */
static int
read_wcache_member (struct reader *rd, const char *key, bool whole,
                    unsigned *seen, struct lb_statsread_wcache *wc)
{
  unsigned bit = 0;
  size_t i = NR_COUNTERS;

  if (whole && strcmp (key, "mode") == 0)
    bit = MODE_BIT;
  else if (whole) {
    for (i = 0; i < NR_COUNTERS && strcmp (key, counters[i].key) != 0; i++)
      ;
    if (i < NR_COUNTERS)
      bit = 1u << i;
  }
  if (bit == 0)
    return skip_value (rd, 1); /* a member a newer writer added */
  if (*seen & bit)
    return bad_member (rd, key, "appears twice");
  *seen |= bit;
  if (bit == MODE_BIT)
    return read_mode (rd, wc);
  return read_uint64 (rd, key,
                      (uint64_t *) ((char *) wc + counters[i].offset));
}

static int
read_wcache (struct reader *rd, struct lb_statsread_wcache *wc)
{
  char key[KEY_MAX];
  bool first = true, whole;
  unsigned seen = 0;
  int r;

  if (peek (rd) == -1)
    return bad (rd, "unexpected end, expected a value");
  if (peek (rd) != '{')
    return bad (rd, "write_cache is not an object");
  rd->p++;
  while ((r = next_member (rd, &first, key, sizeof key, &whole)) == 1)
    if (read_wcache_member (rd, key, whole, &seen, wc) == -1)
      return -1;
  if (r == -1)
    return -1;
  if (seen != ALL_BITS) {
    const char *missing = "mode";

    for (size_t i = 0; i < NR_COUNTERS; i++)
      if (!(seen & (1u << i))) {
        missing = counters[i].key;
        break;
      }
    return bad_member (rd, missing, "is missing");
  }
  return 0;
}

static int
read_document (struct reader *rd, struct lb_statsread_wcache *wc)
{
  char key[KEY_MAX];
  bool first = true, whole, found = false;
  int r;

  if (peek (rd) != '{')
    return bad (rd,
                rd->p == rd->end ? "empty, expected an object"
                                 : "expected an object");
  rd->p++;
  while ((r = next_member (rd, &first, key, sizeof key, &whole)) == 1) {
    if (!whole || strcmp (key, "write_cache") != 0)
      r = skip_value (rd, 1);
    else if (found)
      r = bad (rd, "write_cache appears twice");
    else {
      found = true;
      r = read_wcache (rd, wc);
    }
    if (r == -1)
      return -1;
  }
  if (r == -1)
    return -1;
  if (peek (rd) != -1)
    return bad (rd, "something after the object");
  if (!found)
    return lb_fail (ENOENT, rd->err, rd->errlen,
                    "no write_cache object (the server has no "
                    "write-cache=volatile)");
  return 0;
}

int
lb_statsread_wcache (const char *text, size_t len,
                     struct lb_statsread_wcache *wc, char *err, size_t errlen)
{
  struct reader rd = {
    .start = text, .p = text, .end = text + len, .err = err, .errlen = errlen
  };

  memset (wc, 0, sizeof *wc);
  if (read_document (&rd, wc) == -1) {
    int e = errno;

    memset (wc, 0, sizeof *wc);
    errno = e;
    return -1;
  }
  return 0;
}

int
lb_statsread_wcache_file (const char *path, struct lb_statsread_wcache *wc,
                          char *err, size_t errlen)
{
  char *buf = malloc (MAX_FILE_BYTES + 1), msg[256];
  size_t len = 0;
  ssize_t n = 1;
  int fd, r = -1;

  memset (wc, 0, sizeof *wc);
  if (buf == NULL)
    return lb_fail (ENOMEM, err, errlen, "statsfile %s: out of memory", path);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd == -1) {
    lb_fail (errno, err, errlen, "statsfile %s: %m", path);
    goto out;
  }
  while (len <= MAX_FILE_BYTES &&
         (n = read (fd, buf + len, MAX_FILE_BYTES + 1 - len)) > 0)
    len += (size_t) n;
  if (n == -1)
    lb_fail (errno, err, errlen, "statsfile %s: %m", path);
  else if (len > MAX_FILE_BYTES)
    lb_fail (EFBIG, err, errlen, "statsfile %s: larger than %d bytes", path,
             MAX_FILE_BYTES);
  else if ((r = lb_statsread_wcache (buf, len, wc, msg, sizeof msg)) == -1)
    lb_fail (errno, err, errlen, "statsfile %s: %s", path, msg);
  close (fd);
out:
  free (buf);
  return r;
}
