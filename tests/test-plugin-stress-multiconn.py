#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Four connections with many requests in flight never corrupt or crash.

A 64M disk with 16k folios and 4k logical blocks and four libnbd handles
with many asynchronous requests in flight each (aio_pwrite / aio_pread /
aio_trim / aio_zero, plus flushes):

Phase 1 (deterministic content; one Python thread per handle, up to 24
in flight each): each connection owns disjoint, interleaved parts of the
disk -- in the first half, units of 12k that do not line up with folios,
so neighbouring units of different connections share folios; in the
second half, units of 256k (16 folios) -- and replays its own fixed,
seeded list of writes, reads, trims and zeros (with and without NO_HOLE /
FUA) inside them.  A connection never has two requests on one unit in
flight, so every read has exactly one right answer, which is checked when
it completes; at the end a fresh connection reads all 64M and every byte
must match the model.

Phase 2 (racing on purpose; one thread per handle, up to 32 in flight
each): the first 8 folios are filled with one pattern P; two connections
then trim, zero (both kinds) and rewrite P over random, overlapping,
often partial-folio ranges while two others read the same folios.  Every
4k block of every read must be either P's bytes or zeros -- nothing else
-- and so must the area afterwards; the rest of the disk still matches
the model and the server is alive.

Phase 3 (allocation races): 300 rounds in which all four connections
write their own 4k block of each of the same 8 empty folios at once, read
them back (each must hold exactly what its connection wrote: a lost
allocation race would drop one), and the area is trimmed or zeroed whole
again.  Finally the whole disk matches the model.

Request counts are fixed (a quarter under valgrind); nothing depends on timing except how the
requests interleave (so a race bug is found often, not always).
"""
import os
import random
import threading

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB
SIZE = 64 * MiB
FOLIO = 16 * KiB
LG = 4 * KiB
NR_CONN = 4
DEPTH = 24
DEPTH_PHASE2 = 32
# Under valgrind (LB_VALGRIND) a quarter of the requests: each is ~50
# times slower there, and memcheck needs every path, not every race;
# TSan (NBDKIT_PRELOAD) keeps them all, it is the race proof.
SCALE = 4 if os.environ.get("LB_VALGRIND") else 1
OPS_PHASE1 = 2500 // SCALE      # per connection
OPS_PHASE2 = 5000 // SCALE      # per connection
ROUNDS_PHASE3 = 300 // SCALE
SMALL_UNIT = 12 * KiB           # first half: straddles folios
BIG_UNIT = 256 * KiB            # second half
HALF = SIZE // 2
HOT = 8 * FOLIO                 # phases 2 and 3: [0, HOT)
ZERO_LG = bytes(LG)


def units_of(conn):
    """(offset, size) of every unit conn owns."""
    small = [(u * SMALL_UNIT, SMALL_UNIT)
             for u in range(HALF // SMALL_UNIT) if u % NR_CONN == conn]
    big = [(HALF + u * BIG_UNIT, BIG_UNIT)
           for u in range(HALF // BIG_UNIT) if u % NR_CONN == conn]
    return small, big


def plan(conn):
    """The connection's fixed list of (kind, unit, offset, length, arg)."""
    rng = random.Random(1000 + conn)
    small, big = units_of(conn)
    ops = []
    for i in range(OPS_PHASE1):
        unit = rng.choice(small) if rng.random() < 0.5 else rng.choice(big)
        blocks = unit[1] // LG
        first = rng.randrange(blocks)
        n = rng.randint(1, blocks - first)
        off, length = unit[0] + first * LG, n * LG
        r = rng.random()
        if r < 0.40:
            ops.append(("write", unit, off, length,
                        rng.choice([0, nbd.CMD_FLAG_FUA])))
        elif r < 0.70:
            ops.append(("read", unit, off, length, 0))
        elif r < 0.85:
            ops.append(("trim", unit, off, length, 0))
        elif r < 0.98:
            ops.append(("zero", unit, off, length,
                        rng.choice([0, nbd.CMD_FLAG_NO_HOLE,
                                    nbd.CMD_FLAG_FUA])))
        else:
            ops.append(("flush", None, 0, 0, 0))
    return ops


class Conn:
    """One handle with its in-flight commands."""

    def __init__(self, server, name):
        self.h = server.connect()
        self.name = name
        self.inflight = {}      # cookie -> (unit, check, keepalive)

    def reap(self):
        """Wait for at least one completion and retire what completed."""
        self.h.poll(-1)
        for cookie in list(self.inflight):
            try:
                done = self.h.aio_command_completed(cookie)
            except nbd.Error as e:
                unit, check, _ = self.inflight.pop(cookie)
                raise AssertionError("%s: command failed: %s" % (
                    self.name, e.string))
            if done:
                unit, check, _ = self.inflight.pop(cookie)
                if check:
                    check()

    def busy(self, unit):
        return any(u == unit for u, _, _ in self.inflight.values())

    def drain(self):
        while self.inflight:
            self.reap()


def phase1_worker(server, conn, model, errors):
    c = None
    try:
        c = Conn(server, "phase 1 connection %d" % conn)
        h = c.h
        for i, (kind, unit, off, length, arg) in enumerate(plan(conn)):
            while len(c.inflight) >= DEPTH or (unit and c.busy(unit)):
                c.reap()
            check = None
            keep = None
            if kind == "write":
                data = lbtest.pattern(length, conn * 1000003 + i)
                keep = nbd.Buffer.from_bytearray(bytearray(data))
                cookie = h.aio_pwrite(keep, off, flags=arg)
                model[off:off + length] = data
            elif kind == "read":
                keep = nbd.Buffer(length)
                want = bytes(model[off:off + length])

                def check(buf=keep, want=want, off=off, length=length):
                    got = buf.to_bytearray()
                    if got != want:
                        bad = next(j for j in range(length)
                                   if got[j] != want[j])
                        raise AssertionError(
                            "phase 1 connection %d: read of %d at %d: byte "
                            "%d is %d, want %d" % (conn, length, off,
                                                   off + bad, got[bad],
                                                   want[bad]))
                cookie = h.aio_pread(keep, off)
            elif kind == "trim":
                cookie = h.aio_trim(length, off)
                model[off:off + length] = bytes(length)
            elif kind == "zero":
                cookie = h.aio_zero(length, off, flags=arg)
                model[off:off + length] = bytes(length)
            else:
                cookie = h.aio_flush()
            c.inflight[cookie] = (unit, check, keep)
        c.drain()
    except BaseException as e:          # reported by the main thread
        errors.append(e)
    finally:
        if c:
            lbtest.close(c.h)


def verify_all(server, model, what, skip_hot=False):
    h = server.connect()
    try:
        for pos in range(0, SIZE, 4 * MiB):
            got = h.pread(4 * MiB, pos)
            want = model[pos:pos + 4 * MiB]
            if skip_hot and pos == 0:
                got, want = got[HOT:], want[HOT:]
                base = HOT
            else:
                base = pos
            if got != want:
                bad = next(j for j in range(len(got)) if got[j] != want[j])
                raise AssertionError(
                    "%s: byte %d is %d, want %d (folio %d)" % (
                        what, base + bad, got[bad], want[bad],
                        (base + bad) // FOLIO))
    finally:
        lbtest.close(h)


def check_hot(got, off, p, what):
    """Every 4k block of got (read at off) is P's bytes or zeros."""
    for j in range(0, len(got), LG):
        block = got[j:j + LG]
        if block != ZERO_LG and block != p[off + j:off + j + LG]:
            nz = sum(1 for b in block if b)
            raise AssertionError(
                "%s: 4k block at %d is neither the old data nor zeros "
                "(%d non-zero bytes, %s P)" % (
                    what, off + j, nz,
                    "partly" if any(block[k] == p[off + j + k]
                                    for k in range(LG) if block[k])
                    else "not"))


def phase2_worker(server, conn, p, errors):
    c = None
    rng = random.Random(2000 + conn)
    mutator = conn < 2
    try:
        c = Conn(server, "phase 2 connection %d" % conn)
        h = c.h
        for i in range(OPS_PHASE2):
            while len(c.inflight) >= DEPTH_PHASE2:
                c.reap()
            first = rng.randrange(HOT // LG)
            n = rng.randint(1, min(HOT // LG - first, 3 * FOLIO // LG))
            off, length = first * LG, n * LG
            check = keep = None
            r = rng.random()
            if not mutator:
                keep = nbd.Buffer(length)

                def check(buf=keep, off=off):
                    check_hot(buf.to_bytearray(), off, p,
                              "phase 2 connection %d: read" % conn)
                cookie = h.aio_pread(keep, off)
            elif r < 0.35:
                cookie = h.aio_trim(length, off)
            elif r < 0.50:
                cookie = h.aio_zero(length, off)
            elif r < 0.60:
                cookie = h.aio_zero(length, off, flags=nbd.CMD_FLAG_NO_HOLE)
            else:
                keep = nbd.Buffer.from_bytearray(
                    bytearray(p[off:off + length]))
                cookie = h.aio_pwrite(keep, off)
            c.inflight[cookie] = (None, check, keep)
        c.drain()
    except BaseException as e:
        errors.append(e)
    finally:
        if c:
            lbtest.close(c.h)


def phase3(server):
    """Rounds of: every connection writes its own 4k block of each of the
    hot folios, all empty, interleaved so that the four writes to a
    folio reach the server together and race to allocate it; every block
    is read back; then the area is trimmed (or zeroed) whole again.  One
    thread drives the four handles round-robin: Python threads would
    issue their requests in bursts, one thread at a time."""
    conns = []
    try:
        for i in range(NR_CONN):
            conns.append(Conn(server, "phase 3 connection %d" % i))
        nr_folios = HOT // FOLIO
        for rnd in range(ROUNDS_PHASE3):
            datas = {}
            for f in range(nr_folios):
                for i, c in enumerate(conns):
                    off = f * FOLIO + i * LG
                    datas[off] = lbtest.pattern(LG, rnd * 100003 + off)
                    keep = nbd.Buffer.from_bytearray(bytearray(datas[off]))
                    c.inflight[c.h.aio_pwrite(keep, off)] = (None, None, keep)
            for c in conns:
                c.drain()
            for off, want in datas.items():
                c = conns[(off % FOLIO) // LG]
                keep = nbd.Buffer(LG)

                def check(buf=keep, off=off, want=want):
                    if buf.to_bytearray() != want:
                        raise AssertionError(
                            "phase 3 round %d: connection %d's 4k block at "
                            "%d (folio %d) lost its data" % (
                                rnd, (off % FOLIO) // LG, off, off // FOLIO))
                c.inflight[c.h.aio_pread(keep, off)] = (None, check, keep)
            for c in conns:
                c.drain()
            if rnd % 2:
                conns[rnd % NR_CONN].h.zero(HOT, 0)
            else:
                conns[rnd % NR_CONN].h.trim(HOT, 0)
    finally:
        for c in conns:
            lbtest.close(c.h)


def run_threads(target, args_of):
    errors = []
    threads = [threading.Thread(target=target, args=args_of(i) + (errors,))
               for i in range(NR_CONN)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        e = errors[0]
        if isinstance(e, AssertionError):
            raise e
        raise AssertionError("worker failed: %r" % e)


def main():
    # LB_STRESS_PARAMS adds parameters, e.g. "file=PATH direct=on" to run
    # the same races against a file disk (tests/test-plugin-stress-file.sh).
    extra = os.environ.get("LB_STRESS_PARAMS", "").split()
    with lbtest.Server("size=64M", "blksize=16k", "logical-blksize=4k",
                       *extra) as s:
        model = bytearray(SIZE)
        run_threads(phase1_worker, lambda i: (s, i, model))
        assert s.alive(), "server died in phase 1: %s" % s.stderr()
        verify_all(s, model, "phase 1, whole disk from a fresh connection")

        p = lbtest.pattern(HOT, 77)
        h = s.connect()
        try:
            h.pwrite(p, 0)
        finally:
            lbtest.close(h)
        model[0:HOT] = p
        run_threads(phase2_worker, lambda i: (s, i, p))
        assert s.alive(), "server died in phase 2: %s" % s.stderr()
        h = s.connect()
        try:
            check_hot(h.pread(HOT, 0), 0, p, "phase 2, afterwards")
        finally:
            lbtest.close(h)
        verify_all(s, model, "phase 2, rest of the disk", skip_hot=True)

        h = s.connect()
        try:
            h.trim(HOT, 0)
        finally:
            lbtest.close(h)
        model[0:HOT] = bytes(HOT)
        phase3(s)
        assert s.alive(), "server died in phase 3: %s" % s.stderr()
        verify_all(s, model, "phase 3, whole disk")


lbtest.run(main)
