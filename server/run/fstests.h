/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run --fstests: the run as an fstests fixture.
 *
 * Owns the option's rules (a filesystem, two disks: TEST_DEV and
 * SCRATCH_DEV, private mount points), MKFS_OPTIONS made from the same
 * geometry arguments the run's own mkfs used, and what fstests is told:
 * its variables in the environment and in a config file in the run's
 * work directory that HOST_OPTIONS names, so that a local.config (or
 * /etc/xfsqa.config) elsewhere cannot point it at other devices.
 *
 * Called from largeblock-run's single thread; no locking.
 */
#ifndef LARGEBLOCK_RUN_FSTESTS_H
#define LARGEBLOCK_RUN_FSTESTS_H

#include "run.h"

/* After parsing: refuse what cannot be a fixture, set two disks and
 * private mount points.  0, or -1 after one line on stderr. */
int fstests_check_options (struct run *run);

/* After set-up: unmount the scratch disk (fstests makes and mounts its
 * own scratch filesystems), write the config file, set the environment.
 * 0, or -1 after one line on stderr. */
int fstests_prepare (struct run *run);

/* At teardown: remove the config file (nothing if none was written). */
void fstests_remove_config (struct run *run);

#endif /* LARGEBLOCK_RUN_FSTESTS_H */
