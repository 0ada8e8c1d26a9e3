#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run COMMAND on a 30x120 pseudo-terminal, press q after a second, print
what it drew and exit with its status (as 'mrpinctl top' would run in a
terminal, or over ssh)."""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 120, 0, 0))
out = b''
start = time.time()
sent = False
while True:
    if not sent and time.time() - start > 1.0:
        os.write(fd, b'q')
        sent = True
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    if time.time() - start > 15:
        os.kill(pid, 9)
        break
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode('utf-8', 'replace'))
sys.exit(os.waitstatus_to_exitcode(status))
