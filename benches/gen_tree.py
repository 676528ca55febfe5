#!/usr/bin/env python3
"""Benchmark trees for benches/bench.sh (the seed's scale).

  gen_tree.py seed DEST DIRS YOUNG
      DIRS Metal `gpuarchiver-XXXXXX` dirs of one file each (700, 3000 or 6000 bytes), half under
      DEST/com.apple.gpuarchiver and half under DEST/com.example.runner/com.apple.gpuarchiver.
      The first YOUNG names in sorted order keep their mtime (now); the rest are a day old.
      Same names, sizes and layout as the shared seed tree (/work/bench/gen_seed.py, seed 7).

  gen_tree.py mixed DEST ENTRIES
      About ENTRIES entries: a 10-ary tree of nested dirs (dir k's parent is dir k // 10) under
      nine top-level dirs, each dir holding 0-20 files of mixed sizes (most small, a few
      sparse ones of 1-64 MiB apparent), about 1% hard links to earlier files and 1% symlinks
      (to files, to dirs, some dangling).

  gen_tree.py young TREE YOUNG
      Prints the YOUNG young dirs of a seed tree (the first YOUNG names in sorted order), one
      path a line, relative to TREE.

  gen_tree.py touch-young TREE YOUNG
      Sets the mtime of the young dirs of a seed tree (and their files) to now, so a copy of an
      older seed tree has YOUNG young dirs again.

Progress goes to stderr. DEST must not exist; the caller renames DEST when done.
"""
import os
import random
import sys
import time

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
PARENTS = ("com.apple.gpuarchiver", os.path.join("com.example.runner", "com.apple.gpuarchiver"))


def progress(what, done, total, start):
    rate = done / max(time.time() - start, 1e-6)
    print(
        "\r  %s: %d/%d (%.0f/s, %.0f s left)   "
        % (what, done, total, rate, (total - done) / max(rate, 1e-6)),
        end="" if done < total else "\n",
        file=sys.stderr,
        flush=True,
    )


def seed_names(n):
    rng = random.Random(7)
    names = set()
    while len(names) < n:
        names.add("gpuarchiver-" + "".join(rng.choice(ALPHABET) for _ in range(6)))
    return sorted(names)


def seed(dest, n, young):
    old = time.time() - 86400
    parents = [os.path.join(dest, p) for p in PARENTS]
    for p in parents:
        os.makedirs(p)
    data = [b"m" * k for k in (700, 3000, 6000)]
    start = time.time()
    for i, name in enumerate(seed_names(n)):
        d = os.path.join(parents[i % 2], name)
        os.mkdir(d)
        f = os.path.join(d, "archive.metallib")
        fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data[i % 3])
        if i >= young:
            os.utime(fd, (old, old))
        os.close(fd)
        if i >= young:
            os.utime(d, (old, old))
        if i % 20000 == 0 or i == n - 1:
            progress("seed dirs", i + 1, n, start)


def young_dirs(tree, young):
    """The young dirs of a seed tree: the first `young` names over both parents, sorted."""
    names = []
    for p in PARENTS:
        full = os.path.join(tree, p)
        if os.path.isdir(full):
            names += [(n, os.path.join(p, n)) for n in os.listdir(full) if n.startswith("gpuarchiver-")]
    names.sort()
    return [rel for _, rel in names[:young]]


def touch_young(tree, young):
    for rel in young_dirs(tree, young):
        d = os.path.join(tree, rel)
        for f in os.listdir(d):
            os.utime(os.path.join(d, f))
        os.utime(d)


def file_size(rng):
    r = rng.random()
    if r < 0.05:
        return 0
    if r < 0.80:
        return rng.randint(1, 1024)
    if r < 0.98:
        return rng.randint(1025, 8 * 1024)
    return rng.randint(8 * 1024 + 1, 64 * 1024)


def mixed(dest, entries):
    rng = random.Random(10)
    os.makedirs(dest)
    blob = os.urandom(64 * 1024 + 1)
    paths = [dest]
    files = []  # recent regular files, for hard links and symlinks
    count = 0
    start = time.time()
    k = 0
    while count < entries:
        k += 1
        parent = paths[k // 10] if k >= 10 else dest
        name = ("com.example.tool%d" % k) if k < 10 else ("d%d" % (k % 10))
        d = os.path.join(parent, name)
        os.mkdir(d)
        paths.append(d)
        count += 1
        nfiles = rng.randint(0, 20)
        for j in range(nfiles):
            if count >= entries:
                break
            r = rng.random()
            p = os.path.join(d, "f%02d" % j)
            if r < 0.01 and files:
                os.link(rng.choice(files), p)
            elif r < 0.02:
                s = rng.random()
                if s < 0.5 and files:
                    os.symlink(os.path.relpath(rng.choice(files), d), p)
                elif s < 0.8:
                    os.symlink(os.path.relpath(paths[rng.randrange(len(paths))], d), p)
                else:
                    os.symlink("nowhere/%d" % j, p)
            else:
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                if r > 0.9995:
                    os.ftruncate(fd, rng.randint(1, 64) << 20)  # sparse
                    os.pwrite(fd, b"x", 4096 * rng.randint(0, 15))
                else:
                    n = file_size(rng)
                    if n:
                        os.write(fd, blob[:n])
                os.close(fd)
                if len(files) < 4096:
                    files.append(p)
                else:
                    files[rng.randrange(4096)] = p
            count += 1
        if k % 2000 == 0 or count >= entries:
            progress("mixed entries", count, entries, start)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "seed" and len(sys.argv) == 5:
        seed(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "mixed" and len(sys.argv) == 4:
        mixed(sys.argv[2], int(sys.argv[3]))
    elif mode == "young" and len(sys.argv) == 4:
        for rel in young_dirs(sys.argv[2], int(sys.argv[3])):
            print(rel)
    elif mode == "touch-young" and len(sys.argv) == 4:
        touch_young(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
