#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify --power-cut names what a power cut left of unflushed
# writes on largeblock's volatile write cache (4k logical, 16k physical,
# fixed seeds): torn mode tears physical blocks and the tool counts
# exactly the torn blocks the server logged, and --expect-mode torn
# holds; atomic mode leaves old and new blocks, never torn; lose leaves
# every block old; --expect-mode atomic on the torn image fails and says
# why; the same seed gives the identical report; a logical block damaged
# behind the server's back is foreign and fails in any mode.  The cut comes through
# the FIFO, a command, or power-cut-after= (on a write of generation 2).
# A cut too early, a server that never loses power, a FIFO nobody reads,
# a failing command and bad options are each one clear line.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

geometry=(size=4M blksize=16k logical-blksize=4k write-cache=volatile)

# cut_server NAME MODE SEED [PARAM...]: largeblock with a power-cut FIFO
# at $tmpdir/NAME.cut.
cut_server () {
    local name=$1 mode=$2 seed=$3; shift 3
    start_server "$name" "${geometry[@]}" power-cut-mode="$mode" \
        power-cut-seed="$seed" power-cut-fifo="$tmpdir/$name.cut" "$@"
}

# The server's log line for cut 1 agrees with the tool: kept = new,
# lost = old, torn = torn.
server_agrees () {
    local name=$1 line
    line=$(grep -o 'power cut 1 (mode [a-z]*, seed [0-9]*): .*' \
        "$tmpdir/$name.err") || fail "$name: no cut in the server's log"
    assert_json "$name" "'%d blocks kept, %d lost, %d torn' % \
(pc['blocks']['new'], pc['blocks']['old'], pc['blocks']['torn']) in '''$line'''"
}

# torn: torn blocks, named; --expect-mode torn holds.
cut_server torn torn 42
lb_verify torn --write --seed 5 --power-cut "fifo:$tmpdir/torn.cut" \
    --expect-mode torn "$(uri_of torn)"
expect_rc torn 0
assert_json torn "r['result'] == 'ok'" \
    "pc['blocks']['torn'] > 0 and pc['blocks']['foreign'] == 0" \
    "sum(pc['blocks'].values()) == 64" \
    "pc['logical_block'] == 4096 and pc['physical_block'] == 16384" \
    "pc['old_writes'] == 64 and pc['new_writes'] == 64" \
    "not pc['cut_during_new_writes']" \
    "'Input/output error' in pc['old_connection']" \
    "pc['violation'] is None" \
    "all(len(m) == 4 and 'o' in m and 'n' in m for s in pc['runs'] \
if s['class'] == 'torn' for m in s['maps'])" \
    "sum(s['count'] for s in pc['runs']) == 64"
server_agrees torn

# The same image checked against atomic: a violation, said in words.
cut_server wrong torn 42
lb_verify wrong --write --seed 5 --power-cut "fifo:$tmpdir/wrong.cut" \
    --expect-mode atomic "$(uri_of wrong)"
expect_rc wrong 2
assert_json wrong "r['result'] == 'data error'" \
    "pc['violation'].endswith('physical blocks are torn, but power-cut-mode \
atomic keeps or loses each physical block whole, never a mix')"
"$VERIFY" --write --seed 5 --power-cut "fifo:$tmpdir/wrong.cut" \
    --expect-mode atomic "$(uri_of wrong)" >"$tmpdir/human.out" 2>&1 &&
    fail "human report: exit 0" || :
grep -q "^  expected mode    atomic: [0-9]* physical blocks are torn" \
    "$tmpdir/human.out" && grep -q "^    [0-9-]* *torn    [on]\{4\}" \
    "$tmpdir/human.out" && grep -q "^result             data error" \
    "$tmpdir/human.out" || fail "human report: $(cat "$tmpdir/human.out")"

# Same seed, same report, block by block.
"$PYTHON_NBD" - "$tmpdir/torn.json" "$tmpdir/wrong.json" <<'PY' ||
import json, sys
a, b = (json.load(open(f))["power_cut"] for f in sys.argv[1:])
assert a["runs"] == b["runs"] and a["blocks"] == b["blocks"], (a, b)
PY
    fail "seed 42 did not replay the same report"

# atomic, through a command: old and new blocks, none torn.
cut_server atomic atomic 7
lb_verify atomic --write --seed 5 \
    --power-cut "run:echo cut > '$tmpdir/atomic.cut'" \
    --expect-mode atomic "$(uri_of atomic)"
expect_rc atomic 0
assert_json atomic "pc['blocks']['torn'] == 0" \
    "pc['blocks']['old'] > 0 and pc['blocks']['new'] > 0" \
    "pc['blocks']['foreign'] == 0"
server_agrees atomic

# lose: every block old.
cut_server lose lose 7
lb_verify lose --write --seed 5 --power-cut "fifo:$tmpdir/lose.cut" \
    --expect-mode lose "$(uri_of lose)"
expect_rc lose 0
assert_json lose "pc['blocks']['old'] == 64" \
    "pc['runs'] == [{'first': 0, 'count': 64, 'offset': 0, 'class': 'old'}]"

# A file disk damaged behind the server's back just before the cut: the
# logical block at 57344 is neither generation, so its physical block is
# foreign -- exit 2 with no --expect-mode, and the block named.
truncate -s 4M "$tmpdir/disk.img"
cut_server damaged lose 7 file="$tmpdir/disk.img"
lb_verify damaged --write --seed 5 --power-cut "run:head -c 4096 \
/dev/zero | tr '\\0' '\\245' | dd of='$tmpdir/disk.img' bs=4096 seek=14 \
conv=notrunc status=none && echo cut > '$tmpdir/damaged.cut'" \
    "$(uri_of damaged)"
expect_rc damaged 2
assert_json damaged "pc['blocks'] == {'old': 63, 'new': 0, 'torn': 0, \
'foreign': 1}" "pc['violation'] is None and r['result'] == 'data error'" \
    "{'first': 3, 'count': 1, 'offset': 49152, 'class': 'foreign', \
'maps': ['ooxo']} in pc['runs']" \
    "pc['errors'] == ['physical block at 49152: logical block 2 (at 57344) \
is neither generation 1 nor 2: foreign: block at 57344 (expected \
generation 2)']"

# power-cut-after=74: the 10th write of generation 2 fails; the blocks
# after it were never written again, so they are old.
start_server after "${geometry[@]}" power-cut-mode=torn power-cut-seed=3 \
    power-cut-after=74
lb_verify after --write --seed 5 --power-cut wait --expect-mode torn \
    "$(uri_of after)"
expect_rc after 0
assert_json after "pc['cut_during_new_writes']" "pc['new_writes'] == 9" \
    "pc['old_connection'].startswith('write at 147456 failed')" \
    "pc['runs'][-1]['class'] == 'old' and \
pc['runs'][-1]['first'] + pc['runs'][-1]['count'] == 64 and \
pc['runs'][-1]['first'] <= 10"

# power-cut-after=5: the power fails before generation 1 is durable.
start_server early "${geometry[@]}" power-cut-after=5
lb_verify early --write --power-cut wait "$(uri_of early)"
expect_rc early 4
grep -q "^largeblock-verify: --power-cut wait: writing generation 1 (64 \
writes and a flush) failed: Input/output error; did the power fail too \
early?" "$tmpdir/early.verr" || fail "early: $(cat "$tmpdir/early.verr")"

# Any server: nbdkit memory never loses power.
start_nbdkit memory memory 4M
lb_verify never --write --power-cut wait --cut-timeout 0.5 \
    "$(uri_of memory)"
expect_rc never 4
grep -q "^largeblock-verify: --power-cut wait: the power did not fail: the \
connection opened before the cut still works after 0.5 seconds \
(--cut-timeout)$" "$tmpdir/never.verr" ||
    fail "never: $(cat "$tmpdir/never.verr")"

# A FIFO nobody reads, a path that is no FIFO, a failing command.
mkfifo "$tmpdir/nobody.fifo"
touch "$tmpdir/plain"
while IFS='|' read -r name how msg; do
    lb_verify "$name" --write --power-cut "$how" "$(uri_of memory)"
    expect_rc "$name" 4
    grep -qF "largeblock-verify: --power-cut $how: $msg" \
        "$tmpdir/$name.verr" || fail "$name: $(cat "$tmpdir/$name.verr")"
done <<TABLE
nobody|fifo:$tmpdir/nobody.fifo|nobody reads $tmpdir/nobody.fifo: is a server running with power-cut-fifo= on it?
plain|fifo:$tmpdir/plain|$tmpdir/plain is not a FIFO
missing|fifo:$tmpdir/missing|cannot use $tmpdir/missing: No such file or directory
false|run:exit 3|exit 3 failed: exit status 3
TABLE

# Bad options: exit 3 and one line naming the option and the rule.
uri=$(uri_of memory)
while IFS='|' read -r name msg args; do
    # shellcheck disable=SC2086
    "$VERIFY" $args >"$tmpdir/$name.out" 2>&1 && rc=0 || rc=$?
    [ "$rc" -eq 3 ] && grep -qF -- "$msg" "$tmpdir/$name.out" ||
        fail "$name: exit $rc: $(cat "$tmpdir/$name.out")"
done <<TABLE
how|--power-cut sometimes is not one of: fifo:PATH, run:COMMAND, wait|--write --power-cut sometimes $uri
mode|--expect-mode flaky is not one of: lose, atomic, torn|--write --power-cut wait --expect-mode flaky $uri
alone|--expect-mode only applies with --power-cut|--write --expect-mode torn $uri
rounds|--rounds has no meaning with --power-cut|--write --power-cut wait --rounds 2 $uri
path|--power-cut needs an NBD URI, not the path /dev/null|--write --power-cut wait /dev/null
timeout|--cut-timeout 0 is not a number of seconds from 0.01 to 1e7|--write --power-cut wait --cut-timeout 0 $uri
phys|--physical-block 6144 with 512-byte logical blocks: the physical block is not a power of two|--write --power-cut wait --physical-block 6k $uri
big|--physical-block 131072 with 512-byte logical blocks: the physical block holds more than 128 logical blocks|--write --power-cut wait --physical-block 128k $uri
TABLE
echo PASS
