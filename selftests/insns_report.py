#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The instruction counts of bench.sh's insns section, as its report.

    insns_report.py INSNS MANIFEST [TOP]

INSNS is what qemu_insns.c wrote: per window, the kernel's blocks that ran
("tb ADDR INSNS RUNS") and the totals ("end W TOTAL KERNEL USER").
MANIFEST has a line per window: "WINDOW SIZE RUN LOADED PAIRS KALLSYMS
[HELD KIND]", LOADED 1 with mrpin loaded, KALLSYMS a copy of /proc/kallsyms
taken right after the window (mrpin's text moves at each load), HELD the
MRs the process held through the window (KIND disjoint or same: see
mrpin_bench.c).  Prints, per size and run, the instructions per reg+dereg
pair without mrpin and with it, what it adds, mrpin's own (its text's) and
their share of the path; how far the runs of one size agree; at the first
size, the TOP functions of mrpin's own count and the TOP kernel functions
that ran more with mrpin than without; and what the union of pinned ranges
(distinct.c) costs per pair as the held pins grow.
"""
import bisect
import sys


def read_windows(path):
    """{window: (total, kernel, user, [(addr, insns)])}"""
    windows, blocks = {}, []
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "window":
                blocks = []
            elif w[0] == "tb":
                blocks.append((int(w[1], 16), int(w[2]) * int(w[3])))
            elif w[0] == "end":
                windows[int(w[1])] = (int(w[2]), int(w[3]), int(w[4]), blocks)
    return windows


class Symbols:
    """The text symbols of a /proc/kallsyms copy, by address."""

    def __init__(self, path):
        syms = []
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) < 3 or w[1] not in "tTwW":
                    continue
                addr = int(w[0], 16)
                if addr:
                    mod = w[3].strip("[]") if len(w) > 3 else ""
                    syms.append((addr, w[2], mod))
        if not syms:
            sys.exit(f"insns_report: {path}: no symbol with an address (not read as root?)")
        syms.sort()
        self.addrs = [s[0] for s in syms]
        self.syms = syms

    def of(self, addr):
        """(name, module) of the function holding addr."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return ("?", "")
        return self.syms[i][1:]


def per_function(blocks, syms):
    """{(name, module): instructions}"""
    out = {}
    for addr, n in blocks:
        key = syms.of(addr)
        out[key] = out.get(key, 0) + n
    return out


# The functions of distinct.c (the union of pinned ranges), by prefix.
DISTINCT = ("mrpin_distinct_", "mrpin_point_")


def human(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    windows = read_windows(sys.argv[1])
    top = int(sys.argv[3]) if len(sys.argv) == 4 else 12
    runs = []   # (size, run, loaded, pairs, window, kallsyms)
    held = []   # (held, kind, pairs, window, kallsyms)
    with open(sys.argv[2]) as f:
        for line in f:
            w = line.split()
            if len(w) == 8:
                held.append((int(w[6]), w[7], int(w[4]), int(w[0]), w[5]))
            elif w:
                runs.append((int(w[1]), int(w[2]), w[3] == "1", int(w[4]), int(w[0]), w[5]))
    missing = [r[4] for r in runs if r[4] not in windows]
    missing += [h[3] for h in held if h[3] not in windows]
    if missing:
        sys.exit(f"insns_report: no count for window(s) {missing} in {sys.argv[1]}")

    # One row per size and run: (without, with, mrpin's own) per pair.
    rows, funcs = {}, {}
    for size, run, loaded, pairs, window, kallsyms in runs:
        total, kernel, user, blocks = windows[window]
        syms = Symbols(kallsyms)
        fn = per_function(blocks, syms)
        own = sum(n for (name, mod), n in fn.items() if mod == "mrpin")
        row = rows.setdefault((size, run), {})
        row["with" if loaded else "without"] = total / pairs
        if loaded:
            row["own"] = own / pairs
        funcs[(size, run, loaded)] = {k: v / pairs for k, v in fn.items()}

    print("instructions per reg+dereg pair (QEMU plugin count, whole guest):")
    print(f"{'size':>5} {'run':>3} {'without':>10} {'with':>10} {'added':>9} "
          f"{'mrpin own':>10} {'own/path':>8}")
    sizes = sorted({s for s, _ in rows})
    for (size, run), r in sorted(rows.items()):
        if "with" not in r or "without" not in r:
            continue
        print(f"{human(size):>5} {run:>3} {r['without']:>10.0f} {r['with']:>10.0f} "
              f"{r['with'] - r['without']:>+9.0f} {r['own']:>10.0f} "
              f"{100 * r['own'] / r['with']:>7.2f}%")
    print("first pair against second of a size (largest over the smallest; the boot's")
    print("state moves between them, mrpin's own count should not):")
    for size in sizes:
        spread = []
        for key in ("without", "with", "own"):
            vals = [r[key] for (s, _), r in rows.items() if s == size and key in r]
            if len(vals) > 1 and min(vals) > 0:
                spread.append(f"{key} {100 * (max(vals) - min(vals)) / min(vals):.3f}%")
        print(f"  {human(size)}: " + (", ".join(spread) if spread else "one run"))
    owns = {size: [r["own"] for (s, _), r in rows.items() if s == size and "own" in r]
            for size in sizes}
    if all(owns.values()) and len(sizes) > 1:
        med = {s: sorted(v)[len(v) // 2] for s, v in owns.items()}
        lo = min(med.values())
        print("mrpin's own per pair by size: " +
              ", ".join(f"{human(s)} {med[s]:.0f}" for s in sizes) +
              f" (largest {100 * (max(med.values()) - lo) / lo:.1f}% over the smallest)")

    size = sizes[0]
    with_fn = funcs.get((size, 1, True), {})
    without_fn = funcs.get((size, 1, False), {})
    print(f"mrpin's own instructions per pair at {human(size)}, by function:")
    own_fn = sorted(((v, k[0]) for k, v in with_fn.items() if k[1] == "mrpin"), reverse=True)
    for v, name in own_fn[:top]:
        print(f"  {v:>9.0f}  {name}")
    print(f"kernel functions that ran more with mrpin than without at {human(size)} "
          "(instructions per pair):")
    grew = []
    for key, v in with_fn.items():
        if key[1] == "mrpin":
            continue
        d = v - without_fn.get(key, 0)
        if d > 0:
            grew.append((d, key[0] + (f" [{key[1]}]" if key[1] else "")))
    for d, name in sorted(grew, reverse=True)[:top]:
        print(f"  {d:>+9.0f}  {name}")

    # Where mrpin's own count grows with the size of the pin.
    for big in sizes[1:]:
        big_fn = funcs.get((big, 1, True), {})
        more = sorted(((v - with_fn.get(k, 0), k[0]) for k, v in big_fn.items()
                       if k[1] == "mrpin" and v - with_fn.get(k, 0) >= 1),
                      reverse=True)
        if more:
            print(f"mrpin's own functions that run more per pair at {human(big)} "
                  f"than at {human(size)}:")
            for d, name in more[:top]:
                print(f"  {d:>+9.0f}  {name}")

    report_held(windows, held, with_fn)


def report_held(windows, held, with_fn):
    """distinct.c's instructions per pair as the process holds more pins."""
    if not held:
        return
    base = sum(v for k, v in with_fn.items() if k[1] == "mrpin")
    base_d = sum(v for k, v in with_fn.items()
                 if k[1] == "mrpin" and k[0].startswith(DISTINCT))
    print("the union of pinned ranges (distinct.c) per 4K pair, as the process holds")
    print("more MRs through the window (disjoint: on other pages; same: on the pair's page):")
    print(f"{'held':>8} {'kind':>9} {'mrpin own':>10} {'distinct.c':>11} {'share':>6}")
    print(f"{0:>8} {'-':>9} {base:>10.0f} {base_d:>11.0f} {100 * base_d / base:>5.1f}%")
    for n, kind, pairs, window, kallsyms in sorted(held):
        fn = per_function(windows[window][3], Symbols(kallsyms))
        own = sum(v for k, v in fn.items() if k[1] == "mrpin") / pairs
        dist = sum(v for k, v in fn.items()
                   if k[1] == "mrpin" and k[0].startswith(DISTINCT)) / pairs
        print(f"{n:>8} {kind:>9} {own:>10.0f} {dist:>11.0f} {100 * dist / own:>5.1f}%")


if __name__ == "__main__":
    main()
