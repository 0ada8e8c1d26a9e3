#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a Prometheus text exposition (format 0.0.4) line by line, and
mrpin's naming conventions: mrpin_ prefix, counters end in _total, sizes
in _bytes, HELP and TYPE for every family, no duplicate series.

    promcheck.py [FILE]     (default: standard input); exit 1 on a problem
"""
import math
import re
import sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*'
VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r'^(%s)(?:\{((?:%s=%s)(?:,%s=%s)*,?)?\})? (\S+)(?: (-?\d+))?$'
                    % (NAME, LABEL, VALUE, LABEL, VALUE))
PAIR = re.compile(r'(%s)=(%s)' % (LABEL, VALUE))
HELP = re.compile(r'^# HELP (%s) (.*)$' % NAME)
TYPE = re.compile(r'^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$' % NAME)


def fail(lineno, msg):
    print('promcheck: line %d: %s' % (lineno, msg), file=sys.stderr)
    sys.exit(1)


def check(text):
    if text and not text.endswith('\n'):
        fail(text.count('\n') + 1, 'no newline at the end')
    helps, types, seen, done = {}, {}, set(), set()
    current = None
    samples = 0
    for n, line in enumerate(text.split('\n')[:-1], 1):
        if line.startswith('#'):
            m = HELP.match(line) or TYPE.match(line)
            if line.startswith('# HELP') or line.startswith('# TYPE'):
                if not m:
                    fail(n, 'malformed HELP or TYPE line: %r' % line)
                name = m.group(1)
                table = helps if line.startswith('# HELP') else types
                if name in table:
                    fail(n, 'second %s for %s' % (line[2:6], name))
                if name in done or (current and name != current and name in seen):
                    fail(n, '%s for %s after its samples' % (line[2:6], name))
                table[name] = m.group(2)
            continue
        if not line.strip():
            fail(n, 'blank line')
        m = SAMPLE.match(line)
        if not m:
            fail(n, 'malformed sample: %r' % line)
        name, labels, value = m.group(1), m.group(2) or '', m.group(3)
        try:
            v = float(value)
        except ValueError:
            fail(n, 'bad value %r' % value)
        if math.isnan(v) or v < 0:
            fail(n, 'mrpin values are never negative or NaN: %r' % value)
        if name not in types or name not in helps:
            fail(n, 'sample of %s before its HELP and TYPE' % name)
        if current != name:
            if name in done:
                fail(n, 'samples of %s are not together' % name)
            if current:
                done.add(current)
            current = name
        pairs = PAIR.findall(labels)
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            fail(n, 'label given twice')
        if any(k.startswith('__') for k in keys):
            fail(n, 'reserved label name')
        series = (name, tuple(sorted(pairs)))
        if series in seen:
            fail(n, 'duplicate series %s{%s}' % (name, labels))
        seen.add(series)
        seen.add(name)
        samples += 1
        if not name.startswith('mrpin_'):
            fail(n, '%s: no mrpin_ prefix' % name)
        if types[name] == 'counter' and not name.endswith('_total'):
            fail(n, 'counter %s does not end in _total' % name)
        if types[name] != 'counter' and name.endswith('_total'):
            fail(n, '%s ends in _total but is a %s' % (name, types[name]))
        if 'bytes' in name and not re.search(r'_bytes(_total)?$', name):
            fail(n, '%s: a size not in _bytes' % name)
    for name in types:
        if name not in helps:
            fail(0, '%s has TYPE but no HELP' % name)
    return samples


def main():
    data = open(sys.argv[1], 'rb').read() if len(sys.argv) > 1 else sys.stdin.buffer.read()
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as e:
        fail(data[:e.start].count(b'\n') + 1, 'not UTF-8')
    n = check(text)
    if not n:
        fail(0, 'no samples')
    print('promcheck: %d samples, %d lines: OK' % (n, text.count('\n')))


if __name__ == '__main__':
    main()
