/* largeblock: the user-facing parameters -- see params.h. */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

enum param_key {
  KEY_SIZE,
  KEY_BLKSIZE,
  KEY_LOGICAL,
  KEY_MAX_REQUEST,
  KEY_MISALIGNED,
  KEY_MEMORY_LIMIT,
  KEY_STATSFILE,
  KEY__COUNT
};

static const char *const key_names[KEY__COUNT] = {
  [KEY_SIZE] = "size",
  [KEY_BLKSIZE] = "blksize",
  [KEY_LOGICAL] = "logical-blksize",
  [KEY_MAX_REQUEST] = "max-request",
  [KEY_MISALIGNED] = "misaligned",
  [KEY_MEMORY_LIMIT] = "memory-limit",
  [KEY_STATSFILE] = "statsfile",
};

static int
fail (char *err, size_t errlen, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));

static int
fail (char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (err, errlen, fmt, ap);
  va_end (ap);
  errno = EINVAL;
  return -1;
}

void
lb_params_init (struct lb_params *p)
{
  memset (p, 0, sizeof *p);
  lb_geometry_request_defaults (&p->geom);
  p->misaligned = LB_MISALIGNED_ERROR;
}

void
lb_params_free (struct lb_params *p)
{
  for (size_t i = 0; i < KEY__COUNT; i++)
    free (p->typed[i]);
  lb_params_init (p);
}

const char *
lb_misaligned_policy_name (enum lb_misaligned_policy policy)
{
  return policy == LB_MISALIGNED_ALLOW ? "allow" : "error";
}

static int
find_key (const char *key)
{
  for (int i = 0; i < KEY__COUNT; i++)
    if (strcmp (key, key_names[i]) == 0)
      return i;
  return -1;
}

static int
set_misaligned (struct lb_params *p, const char *value, char *err,
                size_t errlen)
{
  if (strcmp (value, "error") == 0)
    p->misaligned = LB_MISALIGNED_ERROR;
  else if (strcmp (value, "allow") == 0)
    p->misaligned = LB_MISALIGNED_ALLOW;
  else
    return fail (err, errlen, "misaligned %s is not one of: error, allow",
                 value);
  return 0;
}

static int
set_value (struct lb_params *p, int key, const char *value, char *err,
           size_t errlen)
{
  const char *name = key_names[key];

  switch (key) {
  case KEY_MISALIGNED:
    return set_misaligned (p, value, err, errlen);
  case KEY_STATSFILE:
    if (*value == '\0')
      return fail (err, errlen, "statsfile is empty (expected a path)");
    return 0;
  case KEY_SIZE:
    return lb_parse_size (name, value, &p->geom.size_bytes, err, errlen);
  case KEY_BLKSIZE:
    return lb_parse_size (name, value, &p->geom.physical_bytes, err, errlen);
  case KEY_LOGICAL:
    return lb_parse_size (name, value, &p->geom.logical_bytes, err, errlen);
  case KEY_MAX_REQUEST:
    return lb_parse_size (name, value, &p->geom.max_request_bytes,
                          err, errlen);
  case KEY_MEMORY_LIMIT:
    return lb_parse_size (name, value, &p->memory_limit_bytes, err, errlen);
  }
  abort ();
}

int
lb_params_set (struct lb_params *p, const char *key, const char *value,
               char *err, size_t errlen)
{
  int k = find_key (key);
  char *copy;

  if (k < 0)
    return fail (err, errlen, "unknown parameter '%s' (expected size, "
                 "blksize, logical-blksize, max-request, misaligned, "
                 "memory-limit or statsfile)", key);
  if (p->seen & (1u << k))
    return fail (err, errlen, "%s given twice (%s=%s and %s=%s)",
                 key, key, p->typed[k], key, value);
  if (set_value (p, k, value, err, errlen) == -1) {
    errno = EINVAL;
    return -1;
  }

  copy = strdup (value);
  if (copy == NULL) {
    snprintf (err, errlen, "%s: out of memory", key);
    return -1;
  }
  p->typed[k] = copy;
  p->seen |= 1u << k;
  if (k == KEY_STATSFILE)
    p->statsfile = copy;
  return 0;
}

static int
check_memory_limit (const struct lb_params *p, char *err, size_t errlen)
{
  const char *typed = p->typed[KEY_MEMORY_LIMIT];

  if (typed == NULL)
    return 0;
  if (p->memory_limit_bytes < p->geom.physical_bytes)
    return fail (err, errlen, "memory-limit %s is smaller than blksize %llu "
                 "(no folio would fit)", typed,
                 (unsigned long long) p->geom.physical_bytes);
  if (p->memory_limit_bytes % p->geom.physical_bytes != 0)
    return fail (err, errlen, "memory-limit %s is not a multiple of "
                 "blksize %llu", typed,
                 (unsigned long long) p->geom.physical_bytes);
  return 0;
}

int
lb_params_finish (struct lb_params *p, struct lb_geometry *g,
                  char *err, size_t errlen)
{
  p->geom.size_str = p->typed[KEY_SIZE];
  p->geom.physical_str = p->typed[KEY_BLKSIZE];
  p->geom.logical_str = p->typed[KEY_LOGICAL];
  p->geom.max_request_str = p->typed[KEY_MAX_REQUEST];

  if (lb_geometry_init (g, &p->geom, err, errlen) == -1)
    return -1;
  return check_memory_limit (p, err, errlen);
}
