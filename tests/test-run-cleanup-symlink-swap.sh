#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --cleanup never removes anything outside a run's
# directory, however its contents change under it.  A look-alike
# directory holds a dead run's journal, 50 subdirectories dN with a file
# "secret" in each, and 50 symlinks lN to a root-only directory (0700)
# holding a root-only file; while root's --cleanup runs, a helper swaps
# every dN with its lN (renameat2 RENAME_EXCHANGE) in a loop.  The
# root-only file must survive every try: once with the look-alike made
# by `nobody` (it must be ignored), once with one of root's (it is
# removed, never through a symlink).  LB_SWAP_TRIES tries each (20).
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/cleanup-functions.sh" || exit 1

tries=${LB_SWAP_TRIES:-20}
nr_dirs=50
swap_loop="$abs_top_builddir/tests/helpers/swap-loop"
[ -x "$swap_loop" ] || fail "$swap_loop is not built"

victim="$tmpdir/root-only"
mkdir -m 0700 "$victim"
echo "root's" >"$victim/secret"
chmod 0600 "$victim/secret"

swapper=
stop_swapper () {
    [ -n "$swapper" ] || return 0
    kill "$swapper" 2>/dev/null
    wait "$swapper" 2>/dev/null
    swapper=
}
cleanup_fn stop_swapper

# The contents every look-alike starts with, made once.
template="$tmpdir/template"
mkdir "$template"
(umask 077; echo "owner 1 0" >"$template/journal")
for (( i=0; i<nr_dirs; i++ )); do
    mkdir "$template/d$i" && echo x >"$template/d$i/secret" &&
        ln -s "$victim" "$template/l$i" || fail "cannot make $template"
done

# swap_dir USER: a look-alike of USER as described above, printed.
# Root fills it and gives it to USER, as USER could have made it.
swap_dir () {
    local dir
    dir=$(look_alike "$1") || return 1
    cp -a "$template/." "$dir/" && chown -hR "$1:" "$dir" || return 1
    echo "$dir"
}

# one_try USER: --cleanup beside the swapper; false if the file went.
one_try () {
    local user=$1 dir i
    dir=$(swap_dir "$user") || fail "cannot make $user's look-alike"
    # Not through a function: $! must be the swapper itself.  Until it
    # says it swaps, $! may still be a copy of this shell, whose traps
    # a signal would run: it is signalled only after that.
    rm -f "$tmpdir/swap.out"
    if [ "$user" = root ]; then
        "$swap_loop" "$dir" "$nr_dirs" >"$tmpdir/swap.out" &
    else
        setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" \
            --clear-groups -- "$swap_loop" "$dir" "$nr_dirs" \
            >"$tmpdir/swap.out" &
    fi
    swapper=$!
    for (( i=0; i<1000; i++ )); do
        [ -s "$tmpdir/swap.out" ] && break
        alive "$swapper" || fail "swap-loop ended: $(cat "$tmpdir/swap.out")"
        sleep 0.01
    done
    cleanup_shared >/dev/null 2>&1
    stop_swapper
    rm -rf "$dir"
    [ -e "$victim/secret" ]
}

escapes=0
for user in nobody root; do
    for (( t=1; t<=tries; t++ )); do
        one_try "$user" && continue
        echo "try $t with $user's look-alike: root's file was removed" >&2
        escapes=$((escapes + 1))
        echo "root's" >"$victim/secret"
        chmod 0600 "$victim/secret"
    done
done
echo "$((2 * tries)) tries, $escapes escapes"
[ "$escapes" = 0 ] || fail "--cleanup removed a root-only file outside the directory $escapes times"
