#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: fuzz the plugin through "nbdkit -s" with NBD sessions as
# input (AFL++), each target for FUZZ_SECONDS (default 60).  Usage, from
# a configured tree (scripts/fuzz.sh, "make fuzz", calls it):
#   scripts/fuzz-session.sh [TARGET...]   (default: every fuzz/session-targets line)
#
# The plugin and lib/ are compiled again with afl-clang-fast and
# ASan+UBSan into one shared object that also carries AFL's runtime.
# nbdkit itself is not instrumented: it dlopens the plugin, the
# plugin's constructor starts AFL's fork server, and every input is
# served by a child forked from there -- configuration, handshake and
# requests -- on standard input, as "nbdkit -s" reads a client.  The ASan
# runtime is preloaded (with tests/helpers/asan-init-first.c, see there why).
#
# Seeds: fuzz/corpus/session (recorded from real clients by
# fuzz/record-sessions.py) and fuzz/regressions/session.  Output under
# fuzz/work/TARGET/ in the build tree.  A crash or a hang that reproduces
# outside AFL fails the run and its input is printed: copy it into
# fuzz/regressions/session/, where "make check" replays it from then on
# (tests/test-fuzz-session-replay.sh).  nbdkit 1.32's own hang-up abort
# (docs/testing.md, Protocol abuse) is reported but not counted.
set -uo pipefail
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${abs_top_builddir:-$srcdir}
seconds=${FUZZ_SECONDS:-60}
NBDKIT=${NBDKIT_REAL:-${NBDKIT:-nbdkit}}
# A single request on a 4M disk takes well under a millisecond; an input
# still running after this many ms under AFL is a hang candidate.
hang_ms=${FUZZ_SESSION_HANG_MS:-2000}
known_core_abort="raw_send_socket: Assertion \`sock >= 0' failed"

for p in afl-fuzz afl-clang-fast clang "$NBDKIT"; do
    command -v "$p" >/dev/null ||
        { echo "fuzz: $p is missing (apt-get install afl++ clang nbdkit)"; exit 77; }
done
[ -f "$builddir/config.h" ] || { echo "fuzz: configure first (no $builddir/config.h)"; exit 1; }

# TARGET PARAMS... lines of fuzz/session-targets.
declare -A target_params=()
all_targets=()
while read -r name params; do
    case $name in ''|'#'*) continue ;; esac
    target_params[$name]=$params
    all_targets+=("$name")
done <"$srcdir/fuzz/session-targets"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

# ---- build the instrumented plugin (once for all targets) ----
bld="$builddir/fuzz/work/session-build"
asan_rt=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
[ -f "$asan_rt" ] || { echo "fuzz: no ASan runtime at $asan_rt"; exit 1; }
afl_rt=
for f in /usr/lib/afl/afl-compiler-rt.o /usr/local/lib/afl/afl-compiler-rt.o; do
    [ -f "$f" ] && { afl_rt=$f; break; }
done
[ -n "$afl_rt" ] || { echo "fuzz: cannot find AFL's afl-compiler-rt.o"; exit 1; }

build_plugin () {
    local f objs=()
    rm -rf "$bld" && mkdir -p "$bld" || return 1
    # afl-cc leaves its runtime out of shared objects (it expects an
    # instrumented program), so compile with it and link with clang.
    # The plugin's sources, as plugins/largeblock/local.mk lists them.
    local sources
    sources=$(make -s --no-print-directory -C "$builddir" print-plugin-sources) || return 1
    for f in $sources; do
        objs+=("$bld/$(basename "$f" .c).o")
        AFL_QUIET=1 afl-clang-fast -g -O1 -fPIC -fno-omit-frame-pointer \
            -fsanitize=address,undefined -fno-sanitize-recover=all \
            -I"$builddir" -I"$srcdir/include" -I"$builddir/include" -I"$srcdir/lib" -I"$srcdir/lib/disk" $(pkg-config --cflags nbdkit) \
            -c "$srcdir/$f" -o "${objs[-1]}" || return 1
    done
    clang -shared -shared-libasan -fsanitize=address,undefined \
        -o "$bld/nbdkit-largeblock-plugin.so" "${objs[@]}" "$afl_rt" \
        -Wl,--version-script="$srcdir/plugins/largeblock/plugin.syms" \
        $(pkg-config --libs libcap-ng) -pthread || return 1
    clang -shared -fPIC -Wl,-z,initfirst -o "$bld/asan-init-first.so" \
        "$srcdir/tests/helpers/asan-init-first.c"
}
echo "fuzz: building the AFL-instrumented plugin in $bld"
build_plugin >"$builddir/fuzz/work/session-build.log" 2>&1 || {
    cat "$builddir/fuzz/work/session-build.log"
    echo "fuzz: cannot build the instrumented plugin"; exit 1; }
plugin="$bld/nbdkit-largeblock-plugin.so"

# Fatal reports, as signals AFL sees; leaks are nbdkit's business.  While
# fuzzing, no allocation stacks and AFL's own UBSAN_OPTIONS (which also
# set malloc_context_size=0 for the shared runtime: three times faster);
# replaying a finding, full reports.
fuzz_asan="abort_on_error=1:symbolize=0:detect_leaks=0:malloc_context_size=0"
replay_asan="abort_on_error=1:detect_leaks=0"
replay_ubsan="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
unset UBSAN_OPTIONS
preload="$asan_rt:$bld/asan-init-first.so"

# stat FILE KEY: one value of afl-fuzz's fuzzer_stats.
stat () { sed -n "s/^$2 *: *//p" "$1"; }

status=0
for t in "${targets[@]}"; do
    [ -n "${target_params[$t]+set}" ] ||
        { echo "fuzz: unknown session target $t"; status=1; continue; }
    work="$builddir/fuzz/work/$t"
    rm -rf "$work" && mkdir -p "$work/in"
    # Seeds and past crashes; AFL refuses empty files (.keep).
    for f in "$srcdir"/fuzz/corpus/session/* "$srcdir"/fuzz/regressions/session/*; do
        [ -s "$f" ] && cp "$f" "$work/in/"
    done
    # FILE: a fresh scratch image, kept across the run's inputs (a file
    # disk's contents outlive a connection, as they do for real).
    # shellcheck disable=SC2206 # the parameters are words
    params=(${target_params[$t]//FILE/$work/disk.img})
    cmd=("$NBDKIT" -s -t 1 "$plugin" "${params[@]}")

    echo "fuzz: $t for ${seconds}s: nbdkit -s -t 1 ... ${target_params[$t]}"
    AFL_NO_UI=1 AFL_SKIP_BIN_CHECK=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 \
    AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_PRELOAD="$preload" \
    ASAN_OPTIONS="$fuzz_asan" \
        timeout -k 10 $((seconds + 300)) \
        afl-fuzz -V "$seconds" -m none -t "$hang_ms" \
        -x "$srcdir/fuzz/session.dict" -i "$work/in" -o "$work/out" \
        -- "${cmd[@]}" </dev/null >"$work/fuzz.log" 2>&1
    r=$?
    stats="$work/out/default/fuzzer_stats"
    if [ $r -ne 0 ] || [ ! -f "$stats" ]; then
        tail -40 "$work/fuzz.log"
        echo "fuzz: $t: afl-fuzz failed ($r)"; status=1; continue
    fi
    edges=$(stat "$stats" edges_found)
    echo "fuzz: $t: $(stat "$stats" execs_done) executions," \
         "$(stat "$stats" execs_per_sec) per second;" \
         "$(stat "$stats" corpus_count) paths ($(stat "$stats" corpus_found) new);" \
         "$edges of $(stat "$stats" total_edges) edges; stability $(stat "$stats" stability)"
    if [ "${edges:-0}" -lt 10 ]; then
        echo "fuzz: $t: no coverage reached AFL (is the fork server in the plugin?)"
        status=1
    fi

    # Replay every crash and hang outside AFL, under the same sanitizers.
    for f in "$work"/out/default/crashes/id:* "$work"/out/default/hangs/id:*; do
        [ -f "$f" ] || continue
        LD_PRELOAD="$preload" ASAN_OPTIONS="$replay_asan" \
        UBSAN_OPTIONS="$replay_ubsan" timeout -k 5 30 "${cmd[@]}" <"$f" \
            >/dev/null 2>"$f.stderr"
        r=$?
        if grep -qF "$known_core_abort" "$f.stderr"; then
            echo "fuzz: $t: nbdkit core's known hang-up abort, not ours: $f"
        elif [ $r -ge 124 ] || [ "${f#*/crashes/}" != "$f" ]; then
            tail -30 "$f.stderr"
            echo "fuzz: $t: FAILED (exit $r) on $f"
            status=1
        else
            echo "fuzz: $t: hang under AFL only, exits in time alone ($r): $f"
        fi
    done
done
exit $status
