#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: every invalid startup configuration (the rules of
# nbdkit-largeblock-plugin(1)'s PARAMETERS) is refused before anything
# is served -- nbdkit exits non-zero (not by a signal), the
# --run command never runs -- and stderr carries exactly one
# "largeblock: ..." line naming the parameter, the value and the rule.
# The valid extremes (7E, 2^63-64k with 64k blocks, blksize=32M,
# 64k/64k, and the magic "nbdkit largeblock 1G" form) do start, and the
# export they serve has the size and block sizes asked for.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

marker="$tmpdir/served"
nr_checked=0 nr_refused=0 nr_sampled_out=0

# Under valgrind (make check-valgrind) every start costs seconds, and the
# rules behind the messages are lib/disk/params', which the unit tests already
# run under valgrind (tests/unit/check-params.c, check-geometry.c), so
# only a sample of the refusals runs there: every 4th case, and every
# case marked "path" -- one for each way the plugin can refuse (config
# rejects a key=value, the magic size form given twice, the geometry
# refused in config_complete, the statsfile, the power-cut FIFO).  Every
# started configuration runs.  The plain and sanitizer runs run them all.
sample_every=1
[ -z "${LB_VALGRIND:-}" ] || sample_every=4

# refused 'ARGS' 'MESSAGE' [path]: start with ARGS (word-split), expect
# refusal with exactly one largeblock line containing MESSAGE.
refused () {
    local args=$1 want=$2 path=${3:-} rc lines
    nr_refused=$((nr_refused + 1))
    if [ -z "$path" ] && [ $((nr_refused % sample_every)) -ne 0 ]; then
        nr_sampled_out=$((nr_sampled_out + 1))
        return 0
    fi
    rm -f "$marker"
    # shellcheck disable=SC2086
    "$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" $args --run "touch '$marker'" \
        </dev/null >"$tmpdir/out" 2>"$tmpdir/err" && rc=0 || rc=$?
    [ "$rc" -ne 0 ] ||
        fail "'$args' was accepted (expected: $want)"
    [ "$rc" -lt 128 ] || {
        cat "$tmpdir/err" >&2; fail "'$args' killed nbdkit by a signal ($rc)"; }
    [ ! -e "$marker" ] ||
        fail "'$args' served before refusing (the --run command ran)"
    lines=$(grep -c 'largeblock: ' "$tmpdir/err" || :)
    [ "$lines" -eq 1 ] || {
        cat "$tmpdir/err" >&2
        fail "'$args': expected exactly one 'largeblock: ' line, got $lines"; }
    grep 'largeblock: ' "$tmpdir/err" | grep -qF -- "$want" || {
        cat "$tmpdir/err" >&2
        fail "'$args': message does not contain: $want"; }
    nr_checked=$((nr_checked + 1))
}

# --- size ---
refused "blksize=4k"                "size is required (e.g. size=512M)" path
refused "size=0"                    "size 0 must be greater than zero"
refused "size=1000"                 "size 1000 is not a multiple of logical-blksize 512 (the default)"
refused "size=20k logical-blksize=16k blksize=16k" \
                                    "size 20k is not a multiple of logical-blksize 16k"
refused "size=8E"                   "size 8E exceeds the maximum 9223372036854775807 (2^63-1)"
refused "size=9223372036854775808"  "size 9223372036854775808 exceeds the maximum 9223372036854775807"
refused "size=18446744073709551616" "size 18446744073709551616 exceeds the maximum"
refused "size=1Q"                   "size 1Q has an unknown suffix 'Q'"
refused "size=1MB"                  "size 1MB has an unknown suffix 'MB'"
refused "size=-1"                   "size -1 is negative"
refused "size=abc"                  "size abc is not a size" path
refused "size="                     "size is empty"

# --- blksize ---
refused "size=1M blksize=3000"      "blksize 3000 is not a power of two"
refused "size=1M blksize=256"       "blksize 256 is below the minimum 512"
refused "size=1M blksize=64M"       "blksize 64M is above the maximum 33554432"
refused "size=1M blksize=0"         "blksize 0 is not a power of two"

# --- logical-blksize ---
refused "size=1M logical-blksize=3000" \
                                    "logical-blksize 3000 is not a power of two"
refused "size=1M logical-blksize=256" \
                                    "logical-blksize 256 is below the minimum 512"
refused "size=1M logical-blksize=128k blksize=128k" \
                                    "logical-blksize 128k is above the maximum 65536"
refused "size=1M logical-blksize=16k blksize=8k" \
                                    "logical-blksize 16k is larger than blksize 8k"
refused "size=1M logical-blksize=8k" \
                                    "logical-blksize 8k is larger than blksize 4096 (the default)"

# --- max-request ---
refused "size=1M max-request=1000"  "max-request 1000 is not a multiple of logical-blksize 512 (the default)"
refused "size=1M logical-blksize=4k max-request=6k blksize=4k" \
                                    "max-request 6k is not a multiple of logical-blksize 4k"
refused "size=1M max-request=2k"    "max-request 2k is smaller than blksize 4096 (the default)"
refused "size=1M blksize=64k max-request=32k" \
                                    "max-request 32k is smaller than blksize 64k"
refused "size=1M max-request=128M"  "max-request 128M is above the maximum"

# --- misaligned, memory-limit, statsfile ---
refused "size=1M misaligned=maybe"  "misaligned maybe is not one of: error, allow"
refused "size=1M memory-limit=1k"   "memory-limit 1k is smaller than blksize 4096"
refused "size=1M blksize=64k memory-limit=96k" \
                                    "memory-limit 96k is not a multiple of blksize 65536"
refused "size=1M statsfile=$tmpdir/no-such-dir/stats.json" \
                                    "statsfile $tmpdir/no-such-dir/stats.json cannot be written" path
[ ! -e "$tmpdir/no-such-dir" ] || fail "the statsfile's directory was created"
refused "size=1M statsfile="        "statsfile is empty"
refused "size=1M memory-limit=lots" "memory-limit lots is not a size"

# --- the volatile write cache and power cuts ---
refused "size=1M write-cache=yes"   "write-cache yes is not one of: none, volatile"
refused "size=1M write-cache=volatile power-cut-mode=half" \
                                    "power-cut-mode half is not one of: lose, atomic, torn"
refused "size=1M write-cache=volatile power-cut-seed=-3" \
                                    "power-cut-seed -3 is not a decimal integer"
refused "size=1M write-cache=volatile power-cut-seed=18446744073709551616" \
                                    "power-cut-seed 18446744073709551616 is larger than 18446744073709551615"
refused "size=1M write-cache=volatile power-cut-after=0" \
                                    "power-cut-after 0 is less than 1"
refused "size=1M write-cache=volatile power-cut-after=1k" \
                                    "power-cut-after 1k is not a decimal integer"
refused "size=1M power-cut-mode=torn" \
                                    "power-cut-mode=torn needs write-cache=volatile"
refused "size=1M power-cut-after=5" "power-cut-after=5 needs write-cache=volatile"
refused "size=1M blksize=64k write-cache=volatile write-cache-size=64k" \
                                    "write-cache-size 64k is smaller than one cached block"
refused "size=1M write-cache=volatile power-cut-fifo=/dev/null" \
                                    "power-cut-fifo /dev/null exists and is not a FIFO" path
refused "size=1M blksize=4x"        "blksize 4x has an unknown suffix 'x'"

# --- replay=LOG: the log gives the geometry; nothing of another disk ---
# A log of a 1M disk of 16k blocks over 4k (header only: one epoch).
log="$tmpdir/replay.log"
python3 -c 'import struct, sys
sys.stdout.buffer.write(b"LBCRLOG1" + struct.pack("<QIIQ", 1 << 20, 16384,
                        4096, 1 << 30) + bytes(32))' >"$log"
geometry="the log's header gives the disk's size and block sizes"
memory="crash states are served from memory, over the image the log rebuilds"
cut="the log is replayed, not recorded: each export name, epoch=K,mode=M,seed=S, chooses the power cut"
refused "replay=$log size=1M"       "size=1M cannot be given with replay=$log ($geometry)" path
refused "1M replay=$log"            "size=1M cannot be given with replay=$log ($geometry)"
refused "replay=$log blksize=16k"   "blksize=16k cannot be given with replay=$log ($geometry)"
refused "replay=$log logical-blksize=4k" \
                                    "logical-blksize=4k cannot be given with replay=$log ($geometry)"
refused "replay=$log file=$tmpdir/disk.img" \
                                    "file=$tmpdir/disk.img cannot be given with replay=$log ($memory)"
refused "replay=$log direct=on"     "direct=on cannot be given with replay=$log ($memory)"
refused "replay=$log memory-limit=1G" \
                                    "memory-limit=1G cannot be given with replay=$log (crash states have no memory limit)"
refused "replay=$log statsfile=$tmpdir/stats.json" \
                                    "statsfile=$tmpdir/stats.json cannot be given with replay=$log (crash states keep no statistics)" path
[ ! -e "$tmpdir/stats.json" ] || fail "replay= refused statsfile= but made it"
refused "replay=$log write-cache=volatile" \
                                    "write-cache=volatile cannot be given with replay=$log ($cut)"
refused "replay=$log write-cache-size=1M" \
                                    "write-cache-size=1M cannot be given with replay=$log ($cut)"
refused "replay=$log power-cut-mode=torn" \
                                    "power-cut-mode=torn cannot be given with replay=$log ($cut)"
refused "replay=$log power-cut-seed=5" \
                                    "power-cut-seed=5 cannot be given with replay=$log ($cut)"
refused "replay=$log power-cut-after=5" \
                                    "power-cut-after=5 cannot be given with replay=$log ($cut)"
refused "replay=$log power-cut-fifo=$tmpdir/cut" \
                                    "power-cut-fifo=$tmpdir/cut cannot be given with replay=$log ($cut)"
[ ! -e "$tmpdir/cut" ] || fail "replay= refused power-cut-fifo= but made it"
refused "replay=$log crash-log=$tmpdir/new.log" \
                                    "crash-log=$tmpdir/new.log cannot be given with replay=$log ($cut)"
[ ! -e "$tmpdir/new.log" ] || fail "replay= refused crash-log= but made it"
refused "replay=$log crash-log-size=1M" \
                                    "crash-log-size=1M cannot be given with replay=$log ($cut)"
refused "replay=$log max-request=8k" \
                                    "max-request 8k is smaller than blksize 16384 (from replay=$log)" path
refused "replay="                   "replay is empty (expected a path)"
refused "replay=$tmpdir/absent.log" "replay: $tmpdir/absent.log: cannot open the crash log: No such file or directory" path
echo "not a crash log" >"$tmpdir/text"
refused "replay=$tmpdir/text"       "replay: $tmpdir/text: not a largeblock crash log" path

# --- unknown and repeated keys ---
refused "size=1M foo=bar"           "unknown parameter 'foo'" path
refused "size=1M blocksize=4k"      "unknown parameter 'blocksize'"
refused "size=1M size=2M"           "size given twice (size=1M and size=2M)"
refused "1M size=2M"                "size given twice (size=1M and size=2M)" path
refused "size=1M blksize=4k blksize=8k" \
                                    "blksize given twice (blksize=4k and blksize=8k)"

# started 'ARGS' SIZE MIN PREF MAX: ARGS start; the served export has
# that size and those block sizes, and its last logical block reads as
# zeros.
started () {
    local args=$1 size=$2 min=$3 pref=$4 max=$5 rc
    cat >"$tmpdir/check.py" <<EOF
import nbd, os, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
got = (h.get_size(), h.get_block_size(nbd.SIZE_MINIMUM),
       h.get_block_size(nbd.SIZE_PREFERRED),
       h.get_block_size(nbd.SIZE_MAXIMUM))
want = ($size, $min, $pref, $max)
if got != want:
    sys.exit("got (size, min, preferred, max) %r, want %r" % (got, want))
if h.pread($min, $size - $min) != bytes($min):
    sys.exit("the last block does not read as zeros")
h.shutdown()
EOF
    # shellcheck disable=SC2086
    "$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" $args \
        --run "'$PYTHON_NBD' '$tmpdir/check.py' \"\$uri\"" \
        </dev/null >"$tmpdir/out" 2>"$tmpdir/err" && rc=0 || rc=$?
    [ "$rc" -eq 0 ] || {
        cat "$tmpdir/out" "$tmpdir/err" >&2
        fail "'$args' did not start and serve correctly (exit $rc)"; }
    ! grep -q 'largeblock: ' "$tmpdir/err" || {
        cat "$tmpdir/err" >&2; fail "'$args' printed an error"; }
    nr_checked=$((nr_checked + 1))
}

started "size=7E" 8070450532247928832 512 4096 33554432
started "size=9223372036854710272 logical-blksize=64k blksize=64k" \
    9223372036854710272 65536 65536 33554432
started "size=64M blksize=32M" 67108864 512 33554432 33554432
started "size=1M logical-blksize=64k blksize=64k" 1048576 65536 65536 33554432
started "1G" 1073741824 512 4096 33554432
started "1M logical-blksize=4k blksize=16k max-request=64M" \
    1048576 4096 16384 67108864

echo "PASS: $nr_checked configurations checked" \
    "($nr_sampled_out of $nr_refused refusals sampled out under valgrind)"
