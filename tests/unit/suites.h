/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the Check suites, one per lib/ module. */
#ifndef LARGEBLOCK_TEST_SUITES_H
#define LARGEBLOCK_TEST_SUITES_H

#include <check.h>
#include <stdint.h>

#include "largeblock/geometry.h"

Suite *align_suite (void);
Suite *aligned_io_suite (void);
Suite *cutclass_suite (void);
Suite *cutfifo_suite (void);
Suite *extents_suite (void);
Suite *filestore_suite (void);
Suite *nbdkitargs_suite (void);
Suite *geometry_suite (void);
Suite *params_suite (void);
Suite *pattern_suite (void);
Suite *ramstore_suite (void);
Suite *reclaim_suite (void);
Suite *slab_suite (void);
Suite *stats_suite (void);
Suite *statsread_suite (void);
Suite *wcache_suite (void);
Suite *mkfscmd_suite (void);
Suite *proc_suite (void);
Suite *kernel_version_suite (void);

/* A geometry the test asserts is valid (shared by the suites). */
void test_geometry (struct lb_geometry *g, uint64_t size, uint32_t physical,
                    uint32_t logical, uint32_t max_request);

#endif
