# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm: helpers for the make check-vm tests (sourced after
# functions.sh).  They boot real guest kernels under QEMU (TCG where KVM
# cannot boot them), so they skip only where QEMU is not installed or no
# guest kernel can be fetched, never for a missing or unusable /dev/kvm.
# The guest kernel is the default one largeblock-vm fetches once into its
# cache (--kernel-release=lbs, Debian 13 backports' newest cloud kernel,
# >= 6.15); requires_kernel_release 6.12 for the older one.  Helper
# names: the words of tests/functions.sh (lb_vm runs largeblock-vm).

requires qemu-system-x86_64
requires busybox
requires socat
requires nbd-client

LARGEBLOCK_VM="$abs_top_builddir/server/vm/largeblock-vm"
export TMPDIR="$tmpdir"     # largeblock-vm's private directory goes here
# The project's programs go into the guest from here.
export PATH="$abs_top_builddir/tools:$abs_top_builddir/server/run:$PATH"

# requires_kernel_release RELEASE: fetch it into largeblock-vm's cache
# now (once per machine), or skip the test saying why.
requires_kernel_release () {
    local cache=${LARGEBLOCK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/largeblock-vm}
    if ! "$abs_top_srcdir/server/vm/largeblock-vm-helper" fetch-kernel "$cache" "$1" \
         >"$tmpdir/kernel" 2>"$tmpdir/kernel.err"; then
        echo "SKIP: no --kernel-release=$1 guest kernel: $(tail -1 "$tmpdir/kernel.err")"
        exit 77
    fi
    echo "guest kernel ($1): $(head -1 "$tmpdir/kernel")"
}
requires_kernel_release lbs

vm_out="$tmpdir/vm.out"
vm_err="$tmpdir/vm.err"

# lb_vm ARGS...: run largeblock-vm with a 300 s guard; stdout and stderr
# are kept in $vm_out and $vm_err and echoed.  Sets $rc.  largeblock-vm's
# own --timeout comes first (a test's own --timeout overrides it), so a
# guest that hangs is stopped by largeblock-vm, which prints the end of
# the guest's console (hung tasks, oopses) into the test's log; the
# outer guard is for largeblock-vm itself.
lb_vm () {
    rc=0
    timeout 330 "$LARGEBLOCK_VM" --timeout=300 "$@" >"$vm_out" 2>"$vm_err" || rc=$?
    cat "$vm_out"
    cat "$vm_err" >&2
}

# expect_out TEXT / expect_err TEXT: the last run printed a line TEXT
# (stdout), or a message containing TEXT (stderr).
expect_out () { grep -qxF -- "$1" "$vm_out" || fail "expected on stdout: $1"; }
expect_err () { grep -qF -- "$1" "$vm_err" || fail "expected message: $1"; }

# vm_assert_nothing_left: no QEMU or nbdkit of ours runs (their command
# lines name the private directory) and the directory is gone.
vm_assert_nothing_left () {
    if pgrep -f -- "$tmpdir/largeblock-vm" >/dev/null; then
        pgrep -af -- "$tmpdir/largeblock-vm" >&2
        fail "a process largeblock-vm started (qemu or nbdkit) remains"
    fi
    if ls -d "$tmpdir"/largeblock-vm.* 2>/dev/null; then
        fail "largeblock-vm's private directory remains"
    fi
}

# If a test fails half-way: stop what a leak check would flag (only
# processes whose command line names our private directory).
_vm_emergency_cleanup () {
    pkill -KILL -f -- "$tmpdir/largeblock-vm" 2>/dev/null || :
}
cleanup_fn _vm_emergency_cleanup

# signal_vm_during SIG READY ARGS...: start largeblock-vm ARGS..., wait
# until READY exists (a file a slow-tool.sh wrapper creates) or, when
# READY is "stdout:TEXT", until the guest printed the line TEXT, then
# send it SIG.  Output as lb_vm; sets $rc.
signal_vm_during () {
    local sig=$1 ready=$2 i; shift 2
    [ "${ready#stdout:}" != "$ready" ] || rm -f "$ready"
    "$LARGEBLOCK_VM" "$@" >"$vm_out" 2>"$vm_err" &
    local pid=$!
    for (( i=0; i<2400; i++ )); do
        if [ "${ready#stdout:}" != "$ready" ]; then
            grep -qxF -- "${ready#stdout:}" "$vm_out" && break
        elif [ -e "$ready" ]; then break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$pid" 2>/dev/null || { cat "$vm_err" >&2; fail "largeblock-vm ended before the point to signal"; }
    [ $i -lt 2400 ] || fail "never reached the point to signal"
    kill "-$sig" "$pid"
    rc=0; wait "$pid" || rc=$?
    cat "$vm_out"; cat "$vm_err" >&2
}

# vm_xfs_roundtrip ATTACH GEOMETRY PARAM=VALUE...: run vm-xfs-roundtrip.sh
# in a guest; it must see GEOMETRY ("logical physical"), refuse a 4 KiB
# O_DIRECT read on a larger logical block, keep its data and log nothing
# alarming, and the server must have seen reads and writes, none
# misaligned, no error.
vm_xfs_roundtrip () {
    local attach=$1 geometry=$2; shift 2
    lb_vm --attach="$attach" "$@" statsfile="$tmpdir/stats.json" -- \
         "$(cat "$abs_top_srcdir/tests/vm-xfs-roundtrip.sh")"
    [ "$rc" -eq 0 ] || fail "largeblock-vm --attach=$attach exited with $rc"
    expect_out "geometry $geometry"
    expect_out "data intact"
    expect_out "dmesg clean"
    [ "${geometry%% *}" -le 4096 ] || expect_out "4 KiB O_DIRECT read: EINVAL"
    vm_assert_nothing_left
    "$PYTHON_NBD" - "$tmpdir/stats.json" <<'PY' || fail "server statistics"
import json, sys
s = json.load(open(sys.argv[1]))
bad = {k: v for k in ("misaligned", "errors") for v in [s[k]] if any(v.values())}
assert not bad, bad
assert s["requests"]["write"] > 0 and s["requests"]["read"] > 0, s["requests"]
print("server: %d writes, %d reads, 0 misaligned, 0 errors"
      % (s["requests"]["write"], s["requests"]["read"]))
PY
}
