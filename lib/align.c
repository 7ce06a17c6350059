/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: request classification -- see align.h.  Pure functions. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>

#include "largeblock/align.h"
#include "enum-counts.h"

static const char *const req_type_names[LB_REQ_NR_TYPES] = {
  [LB_REQ_READ] = "read",   [LB_REQ_WRITE] = "write",
  [LB_REQ_TRIM] = "trim",   [LB_REQ_ZERO] = "zero",
  [LB_REQ_CACHE] = "cache", [LB_REQ_EXTENTS] = "extents",
  [LB_REQ_FLUSH] = "flush",
};

const char *
lb_req_type_name (enum lb_req_type type)
{
  return type < LB_REQ_NR_TYPES ? req_type_names[type] : "unknown";
}

static int
carries_data (enum lb_req_type type)
{
  return type == LB_REQ_READ || type == LB_REQ_WRITE;
}

enum lb_align_class
lb_align_classify (const struct lb_geometry *g, enum lb_req_type type,
                   uint64_t offset, uint64_t count)
{
  const uint64_t logical_mask = g->logical_bytes - 1;

  if (count == 0)
    return LB_ALIGN_ZERO_LENGTH;
  if (offset > g->size_bytes || count > g->size_bytes - offset)
    return LB_ALIGN_PAST_END;
  if (carries_data (type) && count > g->max_request_bytes)
    return LB_ALIGN_TOO_LARGE;
  if (offset & logical_mask)
    return LB_ALIGN_MISALIGNED_OFFSET;
  if (count & logical_mask)
    return LB_ALIGN_MISALIGNED_LENGTH;
  return LB_ALIGN_OK;
}

char *
lb_align_describe (const struct lb_geometry *g, enum lb_req_type type,
                   uint64_t offset, uint64_t count, enum lb_align_class c,
                   char *buf, size_t buflen)
{
  const char *name = lb_req_type_name (type);

  switch (c) {
  case LB_ALIGN_OK:
    snprintf (buf, buflen,
              "%s of %" PRIu64 " bytes at offset %" PRIu64 " is aligned", name,
              count, offset);
    break;
  case LB_ALIGN_ZERO_LENGTH:
    snprintf (buf, buflen, "%s at offset %" PRIu64 " has zero length", name,
              offset);
    break;
  case LB_ALIGN_PAST_END:
    snprintf (buf, buflen,
              "%s of %" PRIu64 " bytes at offset %" PRIu64
              " goes past the end of the disk (%" PRIu64 " bytes)",
              name, count, offset, g->size_bytes);
    break;
  case LB_ALIGN_TOO_LARGE:
    snprintf (buf, buflen,
              "%s of %" PRIu64 " bytes is larger than "
              "max-request %" PRIu32,
              name, count, g->max_request_bytes);
    break;
  case LB_ALIGN_MISALIGNED_OFFSET:
    snprintf (buf, buflen,
              "%s offset %" PRIu64 " is not a multiple of "
              "logical-blksize %" PRIu32,
              name, offset, g->logical_bytes);
    break;
  case LB_ALIGN_MISALIGNED_LENGTH:
    snprintf (buf, buflen,
              "%s length %" PRIu64 " is not a multiple of "
              "logical-blksize %" PRIu32,
              name, count, g->logical_bytes);
    break;
  default:
    snprintf (buf, buflen, "%s: unknown classification %d", name, (int) c);
  }
  return buf;
}
