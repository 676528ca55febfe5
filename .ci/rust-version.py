#!/usr/bin/env python3
"""The workspace's declared `rust-version` is the real minimum: no package of the locked
dependency graph (every target platform) declares a higher `rust_version`, and the README states
the same version ("Rust toolchain (X.Y or newer").

Reads `cargo metadata --format-version 1 --locked` on stdin, or runs it when stdin is a terminal.

Usage: cargo metadata --format-version 1 --locked | python3 .ci/rust-version.py [README.md]
"""

import json
import re
import subprocess
import sys
from pathlib import Path


def parse(v):
    """`1.95` / `1.95.0` -> (1, 95, 0)."""
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def show(t):
    return ".".join(str(p) for p in (t if t[2] else t[:2]))


def main():
    if sys.stdin.isatty():
        raw = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True, capture_output=True, text=True,
        ).stdout
    else:
        raw = sys.stdin.read()
    meta = json.loads(raw)
    members = set(meta["workspace_members"])
    in_graph = {n["id"] for n in meta["resolve"]["nodes"]}
    by_id = {p["id"]: p for p in meta["packages"]}

    declared = {by_id[m]["name"]: by_id[m].get("rust_version") for m in members}
    missing = sorted(n for n, v in declared.items() if not v)
    if missing:
        print(f"rust-version: workspace members without rust-version: {', '.join(missing)} "
              "(set `rust-version.workspace = true` in their Cargo.toml)", file=sys.stderr)
        return 1
    ours = max(parse(v) for v in declared.values())
    if len({parse(v) for v in declared.values()}) != 1:
        print(f"rust-version: members disagree: {declared}", file=sys.stderr)
        return 1

    deps = sorted(
        ((parse(p["rust_version"]), p["name"], p["version"])
         for pid, p in by_id.items()
         if pid in in_graph and pid not in members and p.get("rust_version")),
        reverse=True,
    )
    errors = []
    if deps and deps[0][0] > ours:
        need = deps[0][0]
        over = [f"{n} {v} ({show(r)})" for r, n, v in deps if r > ours]
        errors.append(
            f"the workspace declares rust-version {show(ours)}, but the locked dependencies need "
            f"{show(need)}: {', '.join(over[:10])}{' ...' if len(over) > 10 else ''}; "
            f"set rust-version = \"{show(need)}\" in [workspace.package] and in the README"
        )
    elif deps and deps[0][0] < ours:
        print(f"rust-version: note: {show(ours)} is above what the dependencies need "
              f"({show(deps[0][0])}, {deps[0][1]} {deps[0][2]}); fine if the workspace's own code needs it")

    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    stated = re.findall(r"Rust toolchain \((\d+\.\d+(?:\.\d+)?) or newer", readme.read_text())
    if not stated:
        errors.append(f"{readme} does not say \"Rust toolchain (X.Y or newer\"")
    for s in stated:
        if parse(s) != ours:
            errors.append(f"{readme} says Rust {s} or newer, the workspace declares {show(ours)}")

    for e in errors:
        print(f"rust-version: {e}", file=sys.stderr)
    if errors:
        return 1
    top = f"{deps[0][1]} {deps[0][2]} ({show(deps[0][0])})" if deps else "none declares one"
    print(f"rust-version: workspace {show(ours)}; highest of {len(deps)} dependencies: {top}; README agrees")
    return 0


if __name__ == "__main__":
    sys.exit(main())
