/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: check the block-size conformance and data integrity
 * of an NBD export, a block device or a regular file.
 *
 * main: options, a path's claim (target-claim.c: opened once, and with
 * --write refused when in use or holding a signature), the target's
 * description (target.h), the region, and the report (a human table or
 * JSON) with the exit code.  The probes live in verify-probe.c, the
 * write and verify phases in verify-integrity.c, the report and its lock
 * in report.c, the JSON strings in json.c.  It exports only main: no
 * module calls back into it.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cutclass.h"
#include "json.h"
#include "largeblock/geometry.h"
#include "verify.h"

#define DEFAULT_REGION_BYTES (64ull << 20)
#define DEFAULT_IO_MAX_BYTES (32u << 20) /* NBD's usual limit */
#define IO_MAX_CAP_BYTES (8u << 20)      /* buffer per request slot */
#define MAX_CONNECTIONS 64u
#define MAX_DEPTH 64u
#define DEFAULT_CUT_REGION_BYTES (1ull << 20)
#define NELEMS(a) (sizeof (a) / sizeof (a)[0])

/* ---- options ---- */

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "Usage: largeblock-verify [OPTIONS] NBD-URI|DEVICE|FILE\n"
    "Check the block-size conformance and data integrity of an NBD export,\n"
    "or of a block device or file (a path starting with / or ./) through\n"
    "O_DIRECT.\n"
    "\n"
    "  --write              allow writing (destroys the region's data)\n"
    "  --force              with --write: overwrite a device or file that\n"
    "                       holds a filesystem or partition table\n"
    "  --verify-only SEED   only re-check the data a --write run with SEED left\n"
    "  --seed SEED          seed of the write run (default: random, printed)\n"
    "  --offset OFFSET      start of the region (default 0)\n"
    "  --size SIZE          length of the region (default: up to 64M)\n"
    "  --connections N      connections in parallel (default 4)\n"
    "  --depth N            requests in flight per connection (default 8)\n"
    "  --rounds N           write rounds (default 4)\n"
    "  --duration SECONDS   keep adding rounds for this long (default 0)\n"
    "  --json               report in JSON\n"
    "  --power-cut HOW      check what a power cut leaves of unflushed writes;\n"
    "                       HOW: fifo:PATH, run:COMMAND or wait\n"
    "  --expect-mode MODE   with --power-cut: fail unless the image is what\n"
    "                       power-cut-mode MODE allows (lose, atomic, torn)\n"
    "  --cut-timeout SECONDS  wait this long for the cut (default 30)\n"
    "  --physical-block SIZE  the unit to classify (default: preferred size)\n"
    "  --help, --version\n"
    "\n"
    "Exit status: 0 ok, 1 non-conformant, 2 data error, 3 usage error,\n"
    "4 could not run, 5 refused to overwrite a device or file in use or\n"
    "holding a signature.  See largeblock-verify(1).\n");
}

static int
usage_error (const char *fmt, ...)
{
  va_list ap;

  fputs ("largeblock-verify: ", stderr);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  exit (VERIFY_EXIT_USAGE);
}

static uint64_t
parse_u64 (const char *opt, const char *str, uint64_t min, uint64_t max)
{
  char *end;
  unsigned long long v;

  errno = 0;
  v = strtoull (str, &end, 0);
  if (errno || end == str || *end || str[0] == '-' || v < min || v > max)
    usage_error ("%s %s is not a number from %" PRIu64 " to %" PRIu64, opt,
                 str, min, max);
  return v;
}

static uint64_t
parse_size_opt (const char *opt, const char *str)
{
  char err[256];
  uint64_t v;

  if (lb_parse_size (opt, str, &v, err, sizeof err) == -1)
    usage_error ("%s", err);
  return v;
}

static double
parse_seconds (const char *opt, const char *str, double min)
{
  char *end;
  double v;

  errno = 0;
  v = strtod (str, &end);
  if (errno || end == str || *end || !(v >= min) || v > 1e7)
    usage_error ("%s %s is not a number of seconds from %g to 1e7", opt, str,
                 min);
  return v;
}

static const char *
parse_power_cut (const char *str)
{
  if ((strncmp (str, "fifo:", 5) == 0 && str[5]) ||
      (strncmp (str, "run:", 4) == 0 && str[4]) || strcmp (str, "wait") == 0)
    return str;
  usage_error ("--power-cut %s is not one of: fifo:PATH, run:COMMAND, wait",
               str);
  return NULL;
}

enum {
  OPT_WRITE = 256,
  OPT_FORCE,
  OPT_VERIFY_ONLY,
  OPT_SEED,
  OPT_OFFSET,
  OPT_SIZE,
  OPT_CONNECTIONS,
  OPT_DEPTH,
  OPT_ROUNDS,
  OPT_DURATION,
  OPT_JSON,
  OPT_POWER_CUT,
  OPT_EXPECT_MODE,
  OPT_CUT_TIMEOUT,
  OPT_PHYSICAL_BLOCK,
  OPT_HELP,
  OPT_VERSION
};

static const struct option long_options[] = {
  { "write", no_argument, NULL, OPT_WRITE },
  { "force", no_argument, NULL, OPT_FORCE },
  { "verify-only", required_argument, NULL, OPT_VERIFY_ONLY },
  { "seed", required_argument, NULL, OPT_SEED },
  { "offset", required_argument, NULL, OPT_OFFSET },
  { "size", required_argument, NULL, OPT_SIZE },
  { "connections", required_argument, NULL, OPT_CONNECTIONS },
  { "depth", required_argument, NULL, OPT_DEPTH },
  { "rounds", required_argument, NULL, OPT_ROUNDS },
  { "duration", required_argument, NULL, OPT_DURATION },
  { "json", no_argument, NULL, OPT_JSON },
  { "power-cut", required_argument, NULL, OPT_POWER_CUT },
  { "expect-mode", required_argument, NULL, OPT_EXPECT_MODE },
  { "cut-timeout", required_argument, NULL, OPT_CUT_TIMEOUT },
  { "physical-block", required_argument, NULL, OPT_PHYSICAL_BLOCK },
  { "help", no_argument, NULL, OPT_HELP },
  { "version", no_argument, NULL, OPT_VERSION },
  { NULL, 0, NULL, 0 },
};

/* The options only --power-cut takes, and those it has no use for. */
static void
check_power_cut_options (const struct verify_opts *o, const bool *given)
{
  static const struct {
    int opt;
    const char *name;
  } cut_only[] = {
    { OPT_EXPECT_MODE, "--expect-mode" },
    { OPT_CUT_TIMEOUT, "--cut-timeout" },
    { OPT_PHYSICAL_BLOCK, "--physical-block" },
  }, not_with_cut[] = {
    { OPT_VERIFY_ONLY, "--verify-only" }, { OPT_CONNECTIONS, "--connections" },
    { OPT_DEPTH, "--depth" },             { OPT_ROUNDS, "--rounds" },
    { OPT_DURATION, "--duration" },
  };

  for (size_t i = 0; !o->power_cut && i < NELEMS (cut_only); i++)
    if (given[cut_only[i].opt - OPT_WRITE])
      usage_error ("%s only applies with --power-cut", cut_only[i].name);
  for (size_t i = 0; o->power_cut && i < NELEMS (not_with_cut); i++)
    if (given[not_with_cut[i].opt - OPT_WRITE])
      usage_error ("%s has no meaning with --power-cut (one connection "
                   "writes two generations and checks them)",
                   not_with_cut[i].name);
  if (o->power_cut && target_is_path (o->uri))
    usage_error ("--power-cut needs an NBD URI, not the path %s", o->uri);
}

static void
parse_option (struct verify_opts *o, int c, bool *seed_given)
{
  switch (c) {
  case OPT_WRITE: o->write = true; break;
  case OPT_FORCE: o->force = true; break;
  case OPT_VERIFY_ONLY:
    o->verify_only = *seed_given = true;
    o->seed = parse_u64 ("--verify-only", optarg, 0, UINT64_MAX);
    break;
  case OPT_SEED:
    o->seed = parse_u64 ("--seed", optarg, 0, UINT64_MAX);
    *seed_given = true;
    break;
  case OPT_OFFSET:
    o->offset_bytes = parse_size_opt ("--offset", optarg);
    break;
  case OPT_SIZE: o->size_bytes = parse_size_opt ("--size", optarg); break;
  case OPT_CONNECTIONS:
    o->connections = parse_u64 ("--connections", optarg, 1, MAX_CONNECTIONS);
    break;
  case OPT_DEPTH:
    o->depth = parse_u64 ("--depth", optarg, 1, MAX_DEPTH);
    break;
  case OPT_ROUNDS:
    o->rounds = parse_u64 ("--rounds", optarg, 1, 1000000);
    break;
  case OPT_DURATION:
    o->duration_s = parse_seconds ("--duration", optarg, 0);
    break;
  case OPT_JSON: o->json = true; break;
  case OPT_POWER_CUT: o->power_cut = parse_power_cut (optarg); break;
  case OPT_EXPECT_MODE:
    if (lb_cut_mode_from_name (optarg, &o->expect_mode) == -1)
      usage_error ("--expect-mode %s is not one of: lose, atomic, torn",
                   optarg);
    o->expect_mode_given = true;
    break;
  case OPT_CUT_TIMEOUT:
    o->cut_timeout_s = parse_seconds ("--cut-timeout", optarg, 0.01);
    break;
  case OPT_PHYSICAL_BLOCK:
    o->physical_bytes = parse_size_opt ("--physical-block", optarg);
    break;
  case OPT_HELP: usage (stdout); exit (VERIFY_EXIT_OK);
  case OPT_VERSION:
    printf ("largeblock-verify %s\n", PACKAGE_VERSION);
    exit (VERIFY_EXIT_OK);
  default: usage (stderr); exit (VERIFY_EXIT_USAGE);
  }
}

static void
parse_options (int argc, char **argv, struct verify_opts *o)
{
  bool seed_given = false, given[OPT_VERSION - OPT_WRITE + 1] = { false };
  int c;

  *o = (struct verify_opts) {
    .path_fd = -1,
    .connections = 4,
    .depth = 8,
    .rounds = 4,
    .cut_timeout_s = 30,
  };
  while ((c = getopt_long (argc, argv, "", long_options, NULL)) != -1) {
    parse_option (o, c, &seed_given);
    given[c - OPT_WRITE] = true;
  }
  if (optind != argc - 1)
    usage_error ("expected exactly one NBD URI, device or file (see --help)");
  o->uri = argv[optind];
  check_power_cut_options (o, given);
  if (o->write && o->verify_only)
    usage_error ("--write and --verify-only exclude each other");
  if (!o->write && !o->verify_only)
    usage_error ("refusing to write to %s: the probes and the integrity "
                 "test overwrite the region; pass --write to allow it, or "
                 "--verify-only SEED to only read",
                 o->uri);
  if (o->force && (!o->write || !target_is_path (o->uri)))
    usage_error ("--force only applies with --write on a device or file "
                 "path");
  if (!seed_given)
    o->seed = (uint64_t) time (NULL) * 1000003u ^ (uint64_t) getpid ();
  o->progress = !o->json && isatty (STDERR_FILENO);
}

/* ---- the export and the region ---- */

static void
describe_export (struct target *t, struct verify_export *ex)
{
  struct target_desc d;

  t->ops->describe (t, &d);
  ex->size_bytes = d.size_bytes;
  ex->min_bytes = d.min_bytes;
  ex->preferred_bytes = d.preferred_bytes;
  ex->max_bytes = d.max_bytes;
  ex->max_enforced = d.max_enforced;
  ex->block_bytes = ex->min_bytes > LB_PATTERN_MIN_BLOCK_BYTES
    ? ex->min_bytes
    : LB_PATTERN_MIN_BLOCK_BYTES;
  ex->read_only = d.read_only;
  ex->can_trim = d.can_trim;
  ex->can_zero = d.can_zero;
  ex->can_flush = d.can_flush;
  ex->multi_conn = d.multi_conn;
  ex->dio_offset_align_bytes = d.dio_offset_align_bytes;
  ex->dio_mem_align_bytes = d.dio_mem_align_bytes;
  ex->dio_source = d.dio_source;
}

/* The region and the largest integrity request; exits on a bad region. */
static void
choose_region (const struct verify_opts *o, struct verify_export *ex)
{
  uint64_t block = ex->block_bytes, avail, io_max, default_bytes;

  if (!lb_pattern_block_size_ok (ex->block_bytes))
    usage_error ("minimum block size %" PRIu32 " is above 64k", ex->min_bytes);
  if (o->offset_bytes % block || o->offset_bytes >= ex->size_bytes)
    usage_error ("--offset %" PRIu64 " is not a multiple of the %" PRIu64
                 "-byte block inside the %" PRIu64 "-byte export",
                 o->offset_bytes, block, ex->size_bytes);
  avail = (ex->size_bytes - o->offset_bytes) / block * block;
  ex->region_offset_bytes = o->offset_bytes;
  default_bytes = o->power_cut ? DEFAULT_CUT_REGION_BYTES
                               : DEFAULT_REGION_BYTES;
  ex->region_bytes = o->size_bytes ? o->size_bytes
    : avail < default_bytes        ? avail
                                   : default_bytes;
  if (ex->region_bytes % block || ex->region_bytes > avail ||
      ex->region_bytes == 0)
    usage_error ("--size %" PRIu64
                 " is not a non-zero multiple of the %" PRIu64
                 "-byte block within the %" PRIu64 " bytes after "
                 "--offset",
                 ex->region_bytes, block, avail);
  io_max = ex->max_bytes ? ex->max_bytes : DEFAULT_IO_MAX_BYTES;
  io_max = io_max < IO_MAX_CAP_BYTES ? io_max : IO_MAX_CAP_BYTES;
  /* at least eight requests per round, so offsets vary in small regions */
  io_max = io_max < ex->region_bytes / 8 ? io_max : ex->region_bytes / 8;
  ex->io_max_bytes = (uint32_t) (io_max / block * block);
  if (ex->io_max_bytes == 0)
    ex->io_max_bytes = (uint32_t) block;
}

/* --power-cut: the physical block, which the region must be made of;
 * exits on a bad one.
 */
static void
choose_physical (const struct verify_opts *o, struct verify_export *ex)
{
  uint64_t block = ex->block_bytes, phys = o->physical_bytes;
  struct lb_cutclass_layout l = { .old_gen = 1, .new_gen = 2 };
  const char *why;

  if (!phys)
    phys = ex->preferred_bytes > block && ex->preferred_bytes % block == 0
      ? ex->preferred_bytes
      : block;
  l.logical_bytes = ex->block_bytes;
  l.physical_bytes = phys > UINT32_MAX ? 0 : (uint32_t) phys;
  why = lb_cutclass_layout_invalid (&l);
  if (why)
    usage_error ("--physical-block %" PRIu64 " with %" PRIu64
                 "-byte logical blocks: %s",
                 phys, block, why);
  if (ex->max_bytes && phys > ex->max_bytes)
    usage_error ("--physical-block %" PRIu64 " is above the export's "
                 "maximum request, %" PRIu32,
                 phys, ex->max_bytes);
  if (ex->region_offset_bytes % phys || ex->region_bytes % phys)
    usage_error ("--offset %" PRIu64 " and --size %" PRIu64
                 " must be multiples of the %" PRIu64 "-byte physical block",
                 ex->region_offset_bytes, ex->region_bytes, phys);
  ex->physical_bytes = (uint32_t) phys;
}

/* ---- output ---- */

static const char *const result_names[] = { "pass", "FAIL", "skip" };

static int
exit_code_of (const struct report_data *rep)
{
  if (rep->nr_errors_total)
    return VERIFY_EXIT_DATA_ERROR;
  for (unsigned i = 0; i < rep->nr_probes; i++)
    if (rep->probes[i].result == PROBE_FAIL)
      return VERIFY_EXIT_NONCONFORMANT;
  return VERIFY_EXIT_OK;
}

static const char *
verdict_of (int code)
{
  return code == VERIFY_EXIT_OK         ? "ok"
    : code == VERIFY_EXIT_NONCONFORMANT ? "non-conformant"
                                        : "data error";
}

static const char *
yes_no (bool b)
{
  return b ? "yes" : "no";
}

static void
print_human (const struct verify_opts *o, const struct verify_export *ex,
             const struct report_data *rep, int code)
{
  printf ("export             %s\n", o->uri);
  printf ("size               %" PRIu64 "\n", ex->size_bytes);
  printf ("block sizes        minimum %" PRIu32 ", preferred %" PRIu32
          ", maximum %" PRIu32 " (0: not advertised)\n",
          ex->min_bytes, ex->preferred_bytes, ex->max_bytes);
  if (ex->dio_offset_align_bytes)
    printf ("direct I/O         offset alignment %" PRIu32
            ", memory alignment %" PRIu32 " (%s)\n",
            ex->dio_offset_align_bytes, ex->dio_mem_align_bytes,
            ex->dio_source);
  printf ("features           trim %s, zero %s, flush %s, multi-conn %s\n",
          yes_no (ex->can_trim), yes_no (ex->can_zero), yes_no (ex->can_flush),
          yes_no (ex->multi_conn));
  printf ("conformance\n");
  for (unsigned i = 0; i < rep->nr_probes; i++)
    printf ("  %-4s  %-40s %s\n", result_names[rep->probes[i].result],
            rep->probes[i].name, rep->probes[i].detail);
  printf ("misaligned policy  %s\n", rep->misaligned_policy);
  printf ("disconnects        %u\n", rep->disconnects);
  if (rep->integrity_run) {
    printf ("integrity          seed %" PRIu64 ", region %" PRIu64 "+%" PRIu64
            ", %" PRIu32 "-byte blocks, %u connections x %u deep, %u rounds"
            "\n",
            o->seed, ex->region_offset_bytes, ex->region_bytes,
            ex->block_bytes, o->connections,
            target_is_path (o->uri) ? 1 : o->depth, rep->rounds_done);
    printf ("  requests         %" PRIu64 " writes (%" PRIu64
            " bytes), %" PRIu64 " trims, %" PRIu64 " zeros, %" PRIu64
            " failed\n",
            rep->writes, rep->bytes_written, rep->trims, rep->zeros,
            rep->io_errors);
    printf ("  blocks          ");
    for (int c = 0; c < LB_PATTERN_NR_CLASSES; c++)
      printf (" %s %" PRIu64, lb_pattern_class_name (c),
              rep->blocks_by_class[c]);
    printf ("\n");
    for (unsigned i = 0; i < rep->nr_errors; i++)
      printf ("  error            %s\n", rep->errors[i]);
    if (rep->nr_errors_total > rep->nr_errors)
      printf ("  error            ... %" PRIu64 " more\n",
              rep->nr_errors_total - rep->nr_errors);
    printf ("re-check with      largeblock-verify --verify-only %" PRIu64
            " --rounds %u --offset %" PRIu64 " --size %" PRIu64 " '%s'\n",
            o->seed, rep->rounds_done, ex->region_offset_bytes,
            ex->region_bytes, o->uri);
  }
  printf ("result             %s\n", verdict_of (code));
}

static const char *
json_bool (bool b)
{
  return b ? "true" : "false";
}

static void
print_json_integrity (const struct verify_opts *o,
                      const struct verify_export *ex,
                      const struct report_data *rep)
{
  printf (",\n \"integrity\": {\"seed\": %" PRIu64 ", \"offset\": %" PRIu64
          ", \"size\": %" PRIu64 ", \"block_size\": %" PRIu32
          ", \"rounds\": %u, \"writes\": %" PRIu64 ", \"trims\": %" PRIu64
          ", \"zeros\": %" PRIu64 ", \"failed_requests\": %" PRIu64
          ",\n  \"blocks\": {",
          o->seed, ex->region_offset_bytes, ex->region_bytes, ex->block_bytes,
          rep->rounds_done, rep->writes, rep->trims, rep->zeros,
          rep->io_errors);
  for (int c = 0; c < LB_PATTERN_NR_CLASSES; c++)
    printf ("%s\"%s\": %" PRIu64, c ? ", " : "", lb_pattern_class_name (c),
            rep->blocks_by_class[c]);
  printf ("},\n  \"errors_total\": %" PRIu64 ", \"errors\": [",
          rep->nr_errors_total);
  json_string_lines (rep->errors[0], sizeof rep->errors[0], rep->nr_errors);
  printf ("]}");
}

static void
print_json (const struct verify_opts *o, const struct verify_export *ex,
            const struct report_data *rep, int code)
{
  printf ("{\"uri\": ");
  json_string (o->uri);
  printf (", \"size\": %" PRIu64 ",\n \"block_size\": {\"minimum\": %" PRIu32
          ", \"preferred\": %" PRIu32 ", \"maximum\": %" PRIu32 "},\n",
          ex->size_bytes, ex->min_bytes, ex->preferred_bytes, ex->max_bytes);
  if (ex->dio_offset_align_bytes) {
    printf (" \"direct_io\": {\"offset_alignment\": %" PRIu32
            ", \"memory_alignment\": %" PRIu32 ", \"source\": ",
            ex->dio_offset_align_bytes, ex->dio_mem_align_bytes);
    json_string (ex->dio_source);
    printf ("},\n");
  }
  else
    printf (" \"direct_io\": null,\n");
  printf (" \"probes\": [");
  for (unsigned i = 0; i < rep->nr_probes; i++) {
    printf ("%s\n  {\"name\": ", i ? "," : "");
    json_string (rep->probes[i].name);
    printf (", \"result\": \"%s\", \"detail\": ",
            rep->probes[i].result == PROBE_PASS     ? "pass"
              : rep->probes[i].result == PROBE_FAIL ? "fail"
                                                    : "skip");
    json_string (rep->probes[i].detail);
    printf ("}");
  }
  printf ("],\n \"features\": {\"trim\": %s, \"zero\": %s, \"flush\": %s, "
          "\"multi_conn\": %s},\n \"misaligned_policy\": \"%s\", "
          "\"disconnects\": %u",
          json_bool (ex->can_trim), json_bool (ex->can_zero),
          json_bool (ex->can_flush), json_bool (ex->multi_conn),
          rep->misaligned_policy, rep->disconnects);
  if (rep->integrity_run)
    print_json_integrity (o, ex, rep);
  printf (",\n \"result\": \"%s\", \"exit_code\": %d}\n", verdict_of (code),
          code);
}

int
main (int argc, char **argv)
{
  struct verify_opts opts;
  struct verify_export ex = { 0 };
  static struct report_data data;
  struct verify_report *rep;
  struct target *t;
  int code;

  parse_options (argc, argv, &opts);
  if (target_is_path (opts.uri)) {
    /* Held until the process exits: every target is a dup of it. */
    enum target_claim_status claim = target_claim_path (opts.uri, opts.write,
                                                        opts.force,
                                                        &opts.path_fd);

    if (claim == TARGET_CLAIM_REFUSED)
      return VERIFY_EXIT_REFUSED;
    if (claim == TARGET_CLAIM_FAILED)
      return VERIFY_EXIT_FAILURE;
  }
  t = target_open (opts.uri, opts.path_fd, false, opts.write);
  if (!t)
    return VERIFY_EXIT_FAILURE;
  describe_export (t, &ex);
  if (opts.write && ex.read_only)
    usage_error ("%s is read-only: --write cannot write to it", opts.uri);
  choose_region (&opts, &ex);
  if (opts.power_cut) {
    choose_physical (&opts, &ex);
    if (!ex.can_flush) {
      fprintf (stderr,
               "largeblock-verify: --power-cut: %s does not "
               "support flush, so nothing is durable before a cut\n",
               opts.uri);
      t->ops->close (t);
      return VERIFY_EXIT_FAILURE;
    }
    return verify_power_cut (&opts, &ex, t);
  }
  rep = report_new ();
  if (!rep) {
    fprintf (stderr, "largeblock-verify: out of memory\n");
    t->ops->close (t);
    return VERIFY_EXIT_FAILURE;
  }
  verify_probes (&opts, &ex, &t, rep);
  t->ops->close (t);
  if (verify_integrity (&opts, &ex, rep) == -1) {
    report_free (rep);
    return VERIFY_EXIT_FAILURE;
  }
  report_read (rep, &data);
  report_free (rep);
  code = exit_code_of (&data);
  if (opts.json)
    print_json (&opts, &ex, &data, code);
  else
    print_human (&opts, &ex, &data, code);
  return code;
}
