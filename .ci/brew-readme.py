#!/usr/bin/env python3
"""Every `brew` command in the README's shell blocks names a tap, formula or cask of this
repository's tap layout (Formula/<name>.rb, Casks/<token>.rb) in a form current Homebrew accepts.

Homebrew refuses formulae and casks given as file paths outside a tap, so `brew install` must
name a formula or cask, never a path; `brew tap USER/REPO URL` must point at this repository (the
`repository` of the workspace's Cargo.toml); `brew services` needs a formula with a `service do`
block. The formula's class and the cask's token must match their file names (Homebrew finds them
by file name), and `sha256` must be 64 hex digits (zeros until a release fills it).

Usage: python3 .ci/brew-readme.py [README.md]   (run from the repository root)
"""

import re
import shlex
import sys
from pathlib import Path


def fail(errors, msg):
    errors.append(msg)


def formula_class(name):
    # Homebrew's class name of a formula file name: `foo-bar@2` -> `FooBarAT2`.
    name = name.replace("@", "AT").replace("+", "x")
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_.]", name))


def brew_lines(readme):
    """(line number, command) of each line starting with `brew ` inside ```sh blocks."""
    out, in_block = [], False
    for n, line in enumerate(readme.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_block = not in_block and stripped[3:].strip() in ("sh", "bash", "shell", "console", "")
            continue
        if in_block and stripped.startswith("brew "):
            out.append((n, stripped.split(" #", 1)[0].strip()))
    return out


def check_formula(path, errors):
    text = path.read_text()
    name = path.stem
    want = formula_class(name)
    if not re.search(rf"^class {re.escape(want)} < Formula\b", text, re.M):
        fail(errors, f"{path}: the class must be `{want} < Formula` (Homebrew derives it from the file name)")
    for sha in re.findall(r'^\s*sha256 "([^"]*)"', text, re.M):
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            fail(errors, f"{path}: sha256 {sha!r} is not 64 lowercase hex digits")
    return text


def check_cask(path, errors):
    text = path.read_text()
    if not re.search(rf'^cask "{re.escape(path.stem)}" do\b', text, re.M):
        fail(errors, f'{path}: the cask must be `cask "{path.stem}" do` (Homebrew derives it from the file name)')
    for sha in re.findall(r'^\s*sha256 "([^"]*)"', text, re.M):
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            fail(errors, f"{path}: sha256 {sha!r} is not 64 lowercase hex digits")
    return text


def main():
    readme_path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    readme = readme_path.read_text()
    cargo = Path("Cargo.toml").read_text()
    m = re.search(r'^repository = "([^"]+)"', cargo, re.M)
    repo_url = m.group(1).rstrip("/") if m else None
    errors = []

    formulae = {p.stem: p for p in sorted(Path("Formula").glob("*.rb"))}
    casks = {p.stem: p for p in sorted(Path("Casks").glob("*.rb"))}
    if not formulae:
        fail(errors, "Formula/ holds no formula (*.rb)")
    texts = {}
    for name, p in formulae.items():
        texts[("formula", name)] = check_formula(p, errors)
    for name, p in casks.items():
        texts[("cask", name)] = check_cask(p, errors)

    lines = brew_lines(readme)
    if not lines:
        fail(errors, f"{readme_path}: no `brew` command in a shell block")
    tapped = False
    for n, cmd in lines:
        where = f"{readme_path}:{n}: `{cmd}`"
        args = shlex.split(cmd)[1:]
        verb = args[0] if args else ""
        flags = [a for a in args[1:] if a.startswith("-")]
        names = [a for a in args[1:] if not a.startswith("-")]
        if verb == "tap":
            if len(names) != 2 or names[0].count("/") != 1:
                fail(errors, f"{where}: expected `brew tap USER/REPO URL`")
                continue
            if repo_url and names[1].rstrip("/").removesuffix(".git") != repo_url:
                fail(errors, f"{where}: the tap URL must be this repository ({repo_url})")
            tapped = True
        elif verb in ("install", "reinstall", "upgrade", "info"):
            if not tapped:
                fail(errors, f"{where}: comes before `brew tap`, so Homebrew cannot find it")
            cask = "--cask" in flags
            for name in names:
                if "/" in name and name.count("/") != 2 or name.endswith(".rb"):
                    fail(errors, f"{where}: {name!r} is a path; Homebrew installs from taps only (name the formula or cask)")
                    continue
                short = name.rsplit("/", 1)[-1]
                table, kind = (casks, "Casks") if cask else (formulae, "Formula")
                if short not in table:
                    fail(errors, f"{where}: no {kind}/{short}.rb in the tap")
        elif verb == "services":
            if len(names) < 2:
                fail(errors, f"{where}: expected `brew services start|stop|restart FORMULA`")
                continue
            short = names[1].rsplit("/", 1)[-1]
            text = texts.get(("formula", short))
            if text is None:
                fail(errors, f"{where}: no Formula/{short}.rb in the tap")
            elif not re.search(r"^\s*service do\b", text, re.M):
                fail(errors, f"{where}: Formula/{short}.rb has no `service do` block")
        else:
            fail(errors, f"{where}: unknown brew command {verb!r} (the check knows tap, install, services)")

    for e in errors:
        print(f"brew-readme: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"brew-readme: {len(lines)} brew commands in {readme_path} name {len(formulae)} formulae and {len(casks)} casks of the tap")
    return 0


if __name__ == "__main__":
    sys.exit(main())
