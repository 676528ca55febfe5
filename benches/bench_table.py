#!/usr/bin/env python3
"""Tables for benches/bench.sh.

  bench_table.py scan LABEL OURS PEER... -- FILE...
      FILE: one per tool (OURS first, then the peers, same order), lines of
      `wall user sys maxrss_kib exit` (GNU time -f '%e %U %S %M %x'), one per run.
      Prints medians per column and the ratio of each value to the best peer's (the lowest
      of the peers in that column), then a `MD|` line per tool for the summary.
"""
import statistics
import sys


def load(path):
    runs = []
    with open(path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 5:
                runs.append([float(x) for x in parts[:5]])
    return runs


def scan(label, tools, files):
    ours = tools[0]
    med = {}
    bad = {}
    for tool, path in zip(tools, files):
        runs = load(path)
        if not runs:
            continue
        cols = list(zip(*runs))
        wall, user, sys_, rss = (statistics.median(c) for c in cols[:4])
        med[tool] = {"wall": wall, "user": user, "sys": sys_, "cpu": user + sys_, "rss": rss / 1024}
        bad[tool] = sorted({int(x) for x in cols[4] if x != 0})
    peers = [t for t in tools[1:] if t in med]
    cols = ["wall", "user", "sys", "cpu", "rss"]
    best = {}
    for c in cols:
        if peers:
            best[c] = min(peers, key=lambda t: med[t][c])
    head = "%-12s %9s %6s %8s %6s %8s %6s %8s %6s %9s %6s" % (
        "tool", "wall s", "x best", "user s", "x best", "sys s", "x best",
        "CPU s", "x best", "RSS MiB", "x best")
    print("%s (median of the runs; x best = value / best peer's value in that column)" % label)
    print(head)
    print("-" * len(head))

    def ratio(t, c):
        if c not in best:
            return float("nan")
        b = med[best[c]][c]
        return med[t][c] / b if b > 0 else float("inf") if med[t][c] > 0 else 1.0

    for t in tools:
        if t not in med:
            print("%-12s (not run)" % t)
            continue
        m = med[t]
        print("%-12s %9.3f %6.2f %8.2f %6.2f %8.2f %6.2f %8.2f %6.2f %9.1f %6.2f%s" % (
            t, m["wall"], ratio(t, "wall"), m["user"], ratio(t, "user"), m["sys"], ratio(t, "sys"),
            m["cpu"], ratio(t, "cpu"), m["rss"], ratio(t, "rss"),
            ("   exit %s" % ",".join(map(str, bad[t]))) if bad[t] else ""))
    if best:
        print("best peer per column: " + ", ".join("%s %s" % (c, best[c]) for c in cols))
    for t in tools:
        if t in med:
            m = med[t]
            extra = ""
            if t == ours and best:
                extra = "%.2fx wall, %.2fx user, %.2fx RSS of the best peer" % (
                    ratio(t, "wall"), ratio(t, "user"), ratio(t, "rss"))
            print("MD|| scan %s | %s | %.2f s | %.2f s | %.2f s | %.1f MiB | %s |" % (
                label, t, m["wall"], m["user"], m["sys"], m["rss"], extra))


def main():
    args = sys.argv[1:]
    if len(args) >= 4 and args[0] == "scan" and "--" in args:
        sep = args.index("--")
        label, tools, files = args[1], args[2:sep], args[sep + 1:]
        if len(tools) != len(files):
            sys.exit("tools and files differ in number")
        scan(label, tools, files)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
