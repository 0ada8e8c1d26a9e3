#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Broken copies of mrpinctl's inputs, for run.sh's generated corpus.

  mutate.py tables SNAPSHOT OUT SEED FILE...
      For each FILE of the recorded debugfs snapshot SNAPSHOT, copies of
      SNAPSHOT in OUT/N/ with that one file broken: cut at random places,
      bits flipped, a column missing, a number out of range, a column too
      many, CRLF line ends, a NUL byte, a line of 100 KB, empty, the header
      alone, no header.  Prints "N FILE KIND LINE" per copy: LINE is the
      line the change is on (1: the header), 0 when it is not one line.

  mutate.py config CONF OUT SEED
      Broken copies of the config file CONF in OUT/N.conf: cut, bits
      flipped, a value out of range, a line of garbage, a NUL byte, CRLF, a
      line of 100 KB.  Prints "N KIND" per copy.

The same SEED makes the same copies.
"""
import os
import random
import re
import shutil
import sys

BAD_NUMBERS = [b"18446744073709551616", b"18446744073709551615",
               b"99999999999999999999999999", b"-1", b"-0", b"1e5", b"0x10",
               b"1.5", b"+7", b"4294967296", b"340282366920938463463374607431768211456"]


def cut(rng, data):
    return data[:rng.randrange(len(data) + 1)], 0


def flip(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data), 0


def lines_of(data):
    return data.split(b"\n")


def data_line(rng, lines):
    """A data line's index (not the header), or None."""
    rows = [i for i, l in enumerate(lines) if l.strip() and not l.startswith(b"#")]
    return rng.choice(rows) if rows else None


def drop_column(rng, data):
    lines = lines_of(data)
    i = 0 if rng.randrange(3) == 0 or data_line(rng, lines) is None \
        else data_line(rng, lines)
    words = lines[i].split(b" ")
    if len(words) < 2:
        return data, 0
    del words[rng.randrange(1 if lines[i].startswith(b"#") else 0, len(words))]
    lines[i] = b" ".join(words)
    return b"\n".join(lines), i + 1


def on_data_line(rng, data, change):
    """data with a data line, picked at random, as change(rng, line) makes
    it: unchanged when there is none or change() gives None."""
    lines = lines_of(data)
    i = data_line(rng, lines)
    line = None if i is None else change(rng, lines[i])
    if line is None:
        return data, 0
    lines[i] = line
    return b"\n".join(lines), i + 1


def huge(rng, data):
    def change(rng, line):
        nums = list(re.finditer(rb"(?<![\w.%:])\d+(?![\w.%:])", line))
        if not nums:
            return None
        m = rng.choice(nums)
        return line[:m.start()] + rng.choice(BAD_NUMBERS) + line[m.end():]
    return on_data_line(rng, data, change)


def extra_column(rng, data):
    return on_data_line(rng, data, lambda rng, line:
                        line + b" " + rng.choice([b"x", b"42", b"\\040", b"-"]))


def crlf(rng, data):
    return data.replace(b"\n", b"\r\n"), 0


def nul(rng, data):
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"\0" + data[i:], 0


def long_line(rng, data):
    lines = lines_of(data)
    i = rng.randrange(1, len(lines)) if len(lines) > 1 else 0
    lines.insert(i, b"9" * 100000)
    return b"\n".join(lines), i + 1


def empty(rng, data):
    return b"", 0


def header_only(rng, data):
    return data.split(b"\n", 1)[0] + b"\n", 0


def no_header(rng, data):
    return data.split(b"\n", 1)[1] if b"\n" in data else b"", 0


TABLE_KINDS = [(cut, 5), (flip, 4), (drop_column, 2), (huge, 3),
               (extra_column, 1), (crlf, 1), (nul, 1), (long_line, 1),
               (empty, 1), (header_only, 1), (no_header, 1)]


def broken_copies(rng, data, kinds):
    """(kind, broken data, line) for each of kinds, as many times as it
    says; the copies a kind left as they were are left out."""
    for kind, times in kinds:
        for _ in range(times):
            broken, line = kind(rng, data)
            if broken != data:
                yield kind, broken, line


def tables(snap, out, rng, files):
    n = 0
    for name in files:
        with open(os.path.join(snap, name), "rb") as f:
            data = f.read()
        for kind, broken, line in broken_copies(rng, data, TABLE_KINDS):
            n += 1
            dst = os.path.join(out, str(n))
            shutil.copytree(snap, dst)
            with open(os.path.join(dst, name), "wb") as f:
                f.write(broken)
            print(n, name, kind.__name__, line)


def garbage_line(rng, data):
    lines = lines_of(data)
    junk = bytes(rng.choice(b"abcxyz019=%/ \t#\\\xff") for _ in range(rng.randint(1, 40)))
    lines.insert(rng.randrange(len(lines) + 1), junk)
    return b"\n".join(lines), 0


def huge_value(rng, data):
    lines = lines_of(data)
    rows = [i for i, l in enumerate(lines) if b"=" in l.split(b"#")[0]]
    if not rows:
        return data, 0
    i = rng.choice(rows)
    lines[i] = re.sub(rb"=[^ \t#]*", b"=" + rng.choice(BAD_NUMBERS) +
                      rng.choice([b"", b"K", b"G", b"T", b"%"]), lines[i], count=1)
    return b"\n".join(lines), 0


CONFIG_KINDS = [(cut, 12), (flip, 12), (huge_value, 6), (garbage_line, 6),
                (nul, 3), (crlf, 1), (long_line, 1)]


def config(conf, out, rng):
    with open(conf, "rb") as f:
        data = f.read()
    os.makedirs(out, exist_ok=True)
    n = 0
    for kind, broken, _line in broken_copies(rng, data, CONFIG_KINDS):
        n += 1
        with open(os.path.join(out, "%d.conf" % n), "wb") as f:
            f.write(broken)
        print(n, kind.__name__)


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == "tables":
        tables(sys.argv[2], sys.argv[3], random.Random(sys.argv[4]), sys.argv[5:])
    elif len(sys.argv) == 5 and sys.argv[1] == "config":
        config(sys.argv[2], sys.argv[3], random.Random(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
