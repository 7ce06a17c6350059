# SPDX-License-Identifier: BSD-3-Clause
# largeblock: bench/ -- make bench (not part of make check).

# copy-cost is built by make check too: test-bench-smoke.sh runs it.
check_PROGRAMS += bench/copy-cost
bench_copy_cost_SOURCES = bench/copy-cost.c
bench_copy_cost_LDADD = lib/libdisk.la lib/libcore.la
# The benchmark: bench/largeblock-bench.py runs the package bench/lbbench,
# one module per section, and the report.
EXTRA_DIST += bench/largeblock-bench.py \
	bench/lbbench/__init__.py bench/lbbench/main.py bench/lbbench/run.py \
	bench/lbbench/common.py bench/lbbench/teardown.py \
	bench/lbbench/server.py bench/lbbench/fio.py \
	bench/lbbench/matrix.py bench/lbbench/memory.py bench/lbbench/scale.py \
	bench/lbbench/huge.py bench/lbbench/copy.py bench/lbbench/file.py \
	bench/lbbench/trim.py bench/lbbench/wcache.py bench/lbbench/limit.py bench/lbbench/kernel.py \
	bench/lbbench/kernel_host.py bench/lbbench/kernel_vm.py \
	bench/lbbench/report.py bench/lbbench/baseline.py
BENCH_ENV = \
	LARGEBLOCK_PLUGIN='$(abs_top_builddir)/plugins/largeblock/.libs/nbdkit-largeblock-plugin.so' \
	LARGEBLOCK_COPY_COST='$(abs_top_builddir)/bench/copy-cost' \
	LARGEBLOCK_RUN='$(abs_top_builddir)/server/run/largeblock-run' \
	LARGEBLOCK_VM='$(abs_top_builddir)/server/vm/largeblock-vm' \
	NBDKIT='$(NBDKIT)'

# The whole benchmark: about 35 minutes; writes docs/performance.md.
# BENCH_ARGS='--only file --only trim' runs some sections and keeps the
# others' text in the report.
bench: all bench/copy-cost
	$(BENCH_ENV) $(PYTHON_NBD) $(srcdir)/bench/largeblock-bench.py \
	  --output $(srcdir)/docs/performance.md \
	  --command "make bench$(if $(BENCH_ARGS), BENCH_ARGS='$(BENCH_ARGS)')" \
	  $(BENCH_ARGS)
.PHONY: bench
