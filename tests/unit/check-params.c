/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/params unit tests.
 *
 * Each key accepted and stored; every per-key and cross-key error with its
 * exact message; unknown and repeated keys; a failed set leaves the
 * parameters as they were; defaults when nothing is given.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "params.h"

struct kv {
  const char *key, *value;
};

#define REPLAY_CUT \
  "the log is replayed, not recorded: each export name, " \
  "epoch=K,mode=M,seed=S, chooses the power cut"

/* Apply pairs until a NULL key; return the first failure's result. */
static int
apply (struct lb_params *p, const struct kv *kv, struct lb_geometry *g,
       char *err, size_t errlen)
{
  for (; kv->key; kv++)
    if (lb_params_set (p, kv->key, kv->value, err, errlen) == -1)
      return -1;
  return lb_params_finish (p, g, err, errlen);
}

START_TEST (test_all_keys)
{
  struct lb_params p;
  struct lb_geometry g;
  char err[256] = "";
  const struct kv kv[] = {
    { "size", "1G" },
    { "blksize", "64k" },
    { "logical-blksize", "4k" },
    { "max-request", "8M" },
    { "misaligned", "allow" },
    { "memory-limit", "256M" },
    { "statsfile", "/tmp/stats.json" },
    { "keep-capabilities", "Yes" },
    { NULL, NULL },
  };
  const struct kv file_kv[] = {
    { "size", "1G" },
    { "file", "/tmp/disk.img" },
    { "direct", "ON" },
    { NULL, NULL },
  };

  lb_params_init (&p);
  ck_assert_msg (apply (&p, kv, &g, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq (g.size_bytes, 1ull << 30);
  ck_assert_uint_eq (g.physical_bytes, 65536);
  ck_assert_uint_eq (g.logical_bytes, 4096);
  ck_assert_uint_eq (g.max_request_bytes, 8u << 20);
  ck_assert_int_eq (p.misaligned, LB_MISALIGNED_ALLOW);
  ck_assert_str_eq (lb_misaligned_policy_name (p.misaligned), "allow");
  ck_assert_uint_eq (p.memory_limit_bytes, 256ull << 20);
  ck_assert_str_eq (p.statsfile, "/tmp/stats.json");
  ck_assert_ptr_null (p.file);
  ck_assert (!p.direct);
  ck_assert (p.keep_capabilities);
  ck_assert (lb_params_size_given (&p));
  lb_params_free (&p);

  lb_params_init (&p);
  ck_assert_msg (apply (&p, file_kv, &g, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq (p.file, "/tmp/disk.img");
  ck_assert (p.direct);
  lb_params_free (&p);
}
END_TEST

START_TEST (test_defaults)
{
  struct lb_params p;
  struct lb_geometry g;
  char err[256] = "";
  const struct kv kv[] = { { "size", "512M" }, { NULL, NULL } };

  lb_params_init (&p);
  ck_assert_msg (apply (&p, kv, &g, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq (g.physical_bytes, LB_DEFAULT_BLKSIZE_BYTES);
  ck_assert_uint_eq (g.logical_bytes, LB_DEFAULT_LOGICAL_BYTES);
  ck_assert_uint_eq (g.max_request_bytes, LB_DEFAULT_MAX_REQUEST_BYTES);
  ck_assert_int_eq (p.misaligned, LB_MISALIGNED_ERROR);
  ck_assert_str_eq (lb_misaligned_policy_name (p.misaligned), "error");
  ck_assert_uint_eq (p.memory_limit_bytes, 0);
  ck_assert_ptr_null (p.statsfile);
  ck_assert (!p.keep_capabilities);
  lb_params_free (&p);
}
END_TEST

static const struct {
  struct kv kv[5];
  const char *message;
} bad[] = {
  { { { "sise", "1G" } },
    "unknown parameter 'sise' (expected size, blksize, logical-blksize, "
    "max-request, misaligned, memory-limit, statsfile, file, direct, "
    "keep-capabilities, write-cache, write-cache-size, power-cut-mode, "
    "power-cut-seed, power-cut-after, power-cut-fifo, crash-log, "
    "crash-log-size or replay)" },
  { { { "size", "1G" }, { "keep-capabilities", "maybe" } },
    "keep-capabilities maybe is not a boolean (yes or no)" },
  { { { "size", "1G" },
      { "keep-capabilities", "yes" },
      { "keep-capabilities", "no" } },
    "keep-capabilities given twice (keep-capabilities=yes and "
    "keep-capabilities=no)" },
  { { { "file", "/tmp/x" }, { "size", "1G" }, { "memory-limit", "1G" } },
    "memory-limit 1G applies to RAM disks only, not to file=/tmp/x" },
  { { { "size", "1G" }, { "direct", "on" } },
    "direct=on needs file= (a RAM disk has no page cache to bypass)" },
  { { { "file", "/tmp/x" }, { "direct", "maybe" } },
    "direct maybe is not a boolean (on or off)" },
  { { { "size", "1G" }, { "file", "" } }, "file is empty (expected a path)" },
  { { { "size", "1G" }, { "size", "2G" } },
    "size given twice (size=1G and size=2G)" },
  { { { "size", "1G" }, { "misaligned", "ignore" } },
    "misaligned ignore is not one of: error, allow" },
  { { { "size", "1G" }, { "statsfile", "" } },
    "statsfile is empty (expected a path)" },
  { { { "size", "1Q" } },
    "size 1Q has an unknown suffix 'Q' (use b, s, k, M, G, T, P or E)" },
  { { { "blksize", "lots" } },
    "blksize lots is not a size (expected digits with an optional suffix, "
    "e.g. 512M)" },
  { { { "size", "8E" } },
    "size 8E exceeds the maximum 9223372036854775807 (2^63-1)" },
  { { { "size", "1G" }, { "blksize", "16k" }, { "memory-limit", "8k" } },
    "memory-limit 8k is smaller than blksize 16384 (no folio would fit)" },
  { { { "size", "1G" }, { "blksize", "16k" }, { "memory-limit", "24k" } },
    "memory-limit 24k is not a multiple of blksize 16384" },
  { { { "size", "1G" }, { "logical-blksize", "3000" } },
    "logical-blksize 3000 is not a power of two" },
  { { { "blksize", "16k" } }, "size is required (e.g. size=512M)" },
  { { { "size", "1G" }, { "blksize", "4k" }, { "logical-blksize", "8k" } },
    "logical-blksize 8k is larger than blksize 4k" },
  { { { "size", "1G" }, { "max-request", "1000" } },
    "max-request 1000 is not a multiple of logical-blksize 512 "
    "(the default)" },
  { { { "size", "1G" }, { "crash-log", "/tmp/log" } },
    "crash-log=/tmp/log needs write-cache=volatile (without a volatile "
    "cache every write is durable at once)" },
  { { { "size", "1G" }, { "crash-log", "" } },
    "crash-log is empty (expected a path)" },
  { { { "size", "1G" },
      { "write-cache", "volatile" },
      { "crash-log-size", "1M" } },
    "crash-log-size=1M needs crash-log=PATH (it bounds that log)" },
  { { { "size", "1G" },
      { "write-cache", "volatile" },
      { "crash-log", "/tmp/log" },
      { "crash-log-size", "100" } },
    "crash-log-size 100 is smaller than the smallest log (744 bytes: its "
    "header, one record and the room kept for flushes)" },
  { { { "replay", "" } }, "replay is empty (expected a path)" },
  { { { "replay", "/tmp/log" } },
    "replay=/tmp/log: the disk's size and block sizes come from the log, "
    "which was not read (only nbdkit largeblock serves replay=)" },
  { { { "replay", "/tmp/log" }, { "replay", "/tmp/other" } },
    "replay given twice (replay=/tmp/log and replay=/tmp/other)" },
};

/* replay=LOG refuses, one line each, every parameter it does not take. */
static const struct {
  struct kv kv;
  const char *why;
} replay_refuses[] = {
  { { "size", "1G" },
    "the log's header gives the disk's size and block sizes" },
  { { "blksize", "16k" },
    "the log's header gives the disk's size and block sizes" },
  { { "logical-blksize", "4k" },
    "the log's header gives the disk's size and block sizes" },
  { { "file", "/tmp/disk.img" },
    "crash states are served from memory, over the image the log rebuilds" },
  { { "direct", "on" },
    "crash states are served from memory, over the image the log rebuilds" },
  { { "memory-limit", "1G" }, "crash states have no memory limit" },
  { { "statsfile", "/tmp/stats.json" }, "crash states keep no statistics" },
  { { "write-cache", "none" }, REPLAY_CUT },
  { { "write-cache", "volatile" }, REPLAY_CUT },
  { { "write-cache-size", "1M" }, REPLAY_CUT },
  { { "power-cut-mode", "torn" }, REPLAY_CUT },
  { { "power-cut-seed", "5" }, REPLAY_CUT },
  { { "power-cut-after", "5" }, REPLAY_CUT },
  { { "power-cut-fifo", "/tmp/cut" }, REPLAY_CUT },
  { { "crash-log", "/tmp/new.log" }, REPLAY_CUT },
  { { "crash-log-size", "1M" }, REPLAY_CUT },
};

/* Given before or after replay=, checked before the log is read, and
 * again by lb_params_finish.
 */
START_TEST (test_replay_refuses)
{
  const struct kv *kv = &replay_refuses[_i].kv;
  struct lb_params p;
  struct lb_geometry g;
  char err[512] = "", want[512];

  snprintf (want, sizeof want,
            "%s=%s cannot be given with replay=/tmp/log (%s)", kv->key,
            kv->value, replay_refuses[_i].why);
  for (int replay_first = 0; replay_first < 2; replay_first++) {
    lb_params_init (&p);
    if (replay_first)
      ck_assert_int_eq (lb_params_set (&p, "replay", "/tmp/log", err,
                                       sizeof err),
                        0);
    ck_assert_int_eq (lb_params_set (&p, kv->key, kv->value, err, sizeof err),
                      0);
    if (!replay_first)
      ck_assert_int_eq (lb_params_set (&p, "replay", "/tmp/log", err,
                                       sizeof err),
                        0);
    errno = 0;
    ck_assert_int_eq (lb_params_check_replay (&p, err, sizeof err), -1);
    ck_assert_int_eq (errno, EINVAL);
    ck_assert_str_eq (err, want);
    err[0] = '\0';
    ck_assert_int_eq (lb_params_finish (&p, &g, err, sizeof err), -1);
    ck_assert_str_eq (err, want);
    lb_params_free (&p);
  }
}
END_TEST

/* The log's geometry stands in for size=, blksize= and logical-blksize=,
 * and the messages about it say where it came from.
 */
START_TEST (test_replay_geometry_from_log)
{
  const struct lb_crashlog_geometry log = { .disk_size = 1 << 20,
                                            .blksize = 16384,
                                            .logical_blksize = 4096 };
  struct lb_params p;
  struct lb_geometry g;
  char err[512] = "";

  lb_params_init (&p);
  ck_assert_int_eq (lb_params_set (&p, "replay", "/tmp/log", err, sizeof err),
                    0);
  ck_assert_int_eq (lb_params_set (&p, "misaligned", "allow", err, sizeof err),
                    0);
  ck_assert_int_eq (lb_params_check_replay (&p, err, sizeof err), 0);
  ck_assert_int_eq (lb_params_set_geometry_from_log (&p, &log, err,
                                                     sizeof err),
                    0);
  ck_assert_msg (lb_params_finish (&p, &g, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq (p.replay, "/tmp/log");
  ck_assert_uint_eq (g.size_bytes, 1 << 20);
  ck_assert_uint_eq (g.physical_bytes, 16384);
  ck_assert_uint_eq (g.logical_bytes, 4096);
  ck_assert_uint_eq (g.max_request_bytes, LB_DEFAULT_MAX_REQUEST_BYTES);
  ck_assert_int_eq (p.misaligned, LB_MISALIGNED_ALLOW);
  lb_params_free (&p);

  lb_params_init (&p);
  ck_assert_int_eq (lb_params_set (&p, "max-request", "8k", err, sizeof err),
                    0);
  ck_assert_int_eq (lb_params_set (&p, "replay", "/tmp/log", err, sizeof err),
                    0);
  ck_assert_int_eq (lb_params_set_geometry_from_log (&p, &log, err,
                                                     sizeof err),
                    0);
  ck_assert_int_eq (lb_params_finish (&p, &g, err, sizeof err), -1);
  ck_assert_str_eq (err,
                    "max-request 8k is smaller than blksize 16384 "
                    "(from replay=/tmp/log)");
  lb_params_free (&p);
}
END_TEST

START_TEST (test_errors)
{
  struct lb_params p;
  struct lb_geometry g;
  char err[512] = "";

  lb_params_init (&p);
  errno = 0;
  ck_assert_int_eq (apply (&p, bad[_i].kv, &g, err, sizeof err), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_str_eq (err, bad[_i].message);
  lb_params_free (&p);
}
END_TEST

/* A rejected value leaves the key unset, so a corrected retry works and
 * nothing half-applied leaks into the geometry. */
START_TEST (test_failed_set_changes_nothing)
{
  struct lb_params p;
  struct lb_geometry g;
  char err[256] = "";

  lb_params_init (&p);
  ck_assert_int_eq (lb_params_set (&p, "misaligned", "maybe", err, sizeof err),
                    -1);
  ck_assert_int_eq (p.misaligned, LB_MISALIGNED_ERROR);
  ck_assert_int_eq (lb_params_set (&p, "size", "1X", err, sizeof err), -1);
  ck_assert_uint_eq (p.geom.size_bytes, 0);
  ck_assert_int_eq (lb_params_set (&p, "size", "1M", err, sizeof err), 0);
  ck_assert_int_eq (lb_params_set (&p, "misaligned", "allow", err, sizeof err),
                    0);
  ck_assert_int_eq (lb_params_finish (&p, &g, err, sizeof err), 0);
  ck_assert_uint_eq (g.size_bytes, 1u << 20);
  lb_params_free (&p);
}
END_TEST

static Suite *
params_suite (void)
{
  Suite *s = suite_create ("params");
  TCase *tc = tcase_create ("params");

  tcase_add_test (tc, test_all_keys);
  tcase_add_test (tc, test_defaults);
  tcase_add_loop_test (tc, test_errors, 0, sizeof bad / sizeof bad[0]);
  tcase_add_test (tc, test_failed_set_changes_nothing);
  tcase_add_loop_test (tc, test_replay_refuses, 0,
                       sizeof replay_refuses / sizeof replay_refuses[0]);
  tcase_add_test (tc, test_replay_geometry_from_log);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (params_suite);
