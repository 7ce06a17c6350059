#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A server that sends the NBD newstyle greeting and hangs up, for
# tests/test-verify-server-hangs-up-named.sh.  Usage: SOCKET READY-FILE
# [CONNECTIONS]: serves that many connections (default 1), then exits.
import socket
import struct
import sys

path, ready = sys.argv[1], sys.argv[2]
connections = int(sys.argv[3]) if len(sys.argv) > 3 else 1
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(connections)
open(ready, "w").close()
for _ in range(connections):
    c, _ = s.accept()
    c.sendall(b"NBDMAGIC" + b"IHAVEOPT" + struct.pack(">H", 3))
    c.close()
s.close()
