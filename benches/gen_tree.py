#!/usr/bin/env python3
"""Builds a benchmark cache root: N Metal `com.apple.gpuarchiver/gpuarchiver-XXXXXX` dirs (3 small
files each) plus B per-app `<bundle-id>/com.apple.metal/` bundles of 1-50 MiB, with every mtime set
a day back so age floors (gpuarchiver: 300 s) do not protect them.

usage: gen_tree.py DEST ARCHIVES BUNDLES [SEED]
"""
import os
import random
import sys
import time


def main():
    dest, archives, bundles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 42)
    old = time.time() - 86400
    ga = os.path.join(dest, "com.apple.gpuarchiver")
    os.makedirs(ga)
    small = [b"p" * n for n in (300, 1500, 5000, 9000)]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    names = set()
    while len(names) < archives:
        names.add("gpuarchiver-" + "".join(rng.choice(alphabet) for _ in range(6)))
    for name in sorted(names):
        d = os.path.join(ga, name)
        os.mkdir(d)
        for f in ("PersistentState", "functions.list", "archive.metallib"):
            p = os.path.join(d, f)
            with open(p, "wb") as fh:
                fh.write(rng.choice(small))
            os.utime(p, (old, old))
        os.utime(d, (old, old))
    chunk = os.urandom(1 << 20)
    for i in range(bundles):
        d = os.path.join(dest, "com.example.app%03d" % i, "com.apple.metal")
        os.makedirs(d)
        mib = rng.randint(1, 50)
        p = os.path.join(d, "shaders.data")
        with open(p, "wb") as fh:
            for _ in range(mib):
                fh.write(chunk)
        for f in ("index", "libraries.list"):
            q = os.path.join(d, f)
            with open(q, "wb") as fh:
                fh.write(b"i" * 2000)
            os.utime(q, (old, old))
        os.utime(p, (old, old))
        os.utime(d, (old, old))
        os.utime(os.path.dirname(d), (old, old))
    os.utime(ga, (old, old))


if __name__ == "__main__":
    main()
