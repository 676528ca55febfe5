#!/usr/bin/env python3
"""Print each crate's graph of top-level modules and fail on a cycle between them.

    python3 .ci/module-graph.py [CRATE_DIR...]     (default: every crate of the workspace)
    python3 .ci/module-graph.py --write-docs       (rewrite the floors blocks of the docs)
    python3 .ci/module-graph.py --self-test        (the checks on a small crate it writes)

For each crate root (`src/lib.rs`, else `src/main.rs`) the script follows the `mod` declarations
(with `#[path = "..."]`) to every file of the crate, and gives each file the top-level module it
belongs to (`src/watch/live/store.rs` belongs to `watch`). An edge A -> B is drawn when code of
module A names module B:
- `crate::B` anywhere (a `use`, a path in code, `pub(in crate::B)`, `$crate::B` in a macro);
- a grouped use `crate::{B, C::x}` (each first segment of the group);
- a string that is such a path, as serde and ts-rs attributes take one
  (`#[serde(with = "crate::B::x")]`);
- `super::...` that climbs out of A to the crate root and goes on into B (also grouped);
- `crate::Name` / `super::Name` where the crate root re-exports `Name` from module B
  (`pub use B::Name;` in lib.rs), so a re-export cannot hide an edge.
Names the root re-exports from another crate (`pub use other_crate::module`) are no modules of
this crate and draw no edge. Edges from the crate root itself (lib.rs, main.rs) are not drawn: it
is the facade that declares the modules.

Not counted, by decision:
- comments (line, block, doc, so intra-doc links too) and other string literals: text, not code;
- test code: a module or item under `#[cfg(test)]` (or any `cfg` that is false when `test` is
  false, such as `cfg(all(test, unix))`): `tests.rs` files, `#[path = "x_tests.rs"] mod tests;`
  and inline `mod tests { ... }` blocks. Tests may reach across floors to build what they check;
  the product's modules may not.

The floors of the crates named in DOC_BLOCKS are also written into docs/architecture.md, between
`<!-- floors CRATE_DIR -->` and `<!-- /floors -->`, so the page cannot drift from the code: a run
over every crate fails when a block differs from the floors computed now (run it with
`--write-docs` to rewrite them).

The front ends (`crates/cli`, `src-tauri`) have one door into the engine: its `api` and `dto`
modules. In their code (not their tests, as above), a path `cachewatch::X` with X neither `api`
nor `dto` (each element of a group counts), any `cachewatch_core::` path, such a path in a string
attribute, and `use cachewatch;` / `use cachewatch as e;` are each printed with file and line, and
fail the check.

Output: per crate, its modules, its edges, and when the graph is acyclic its floors (floor 0
imports no sibling; a module sits one floor above the highest module it imports). Exit 1 when
any crate has a cycle: every strongly connected component of more than one module is named with
the edges that close it.
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CRATES = ["crates/core", "crates/engine", "crates/cli", "crates/testkit", "src-tauri"]
DOC = "docs/architecture.md"
DOC_BLOCKS = ["crates/engine", "crates/core"]


# --- Lexing ---------------------------------------------------------------------------------------

TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*)
    | (?P<raw_string>b?r(?P<hashes>\#*)")
    | (?P<string>b?")
    | (?P<char>b?'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])')
    | (?P<lifetime>'[A-Za-z_][A-Za-z0-9_]*)
    | (?P<ident>\$?(?:r\#)?[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>[0-9][A-Za-z0-9_.]*)
    | (?P<path_sep>::)
    | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


PATH_STRING = re.compile(r"(?:\$?crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+")
FRONT_STRING = re.compile(r"(?:cachewatch|cachewatch_core)(?:::[A-Za-z_][A-Za-z0-9_]*)+")


def string_tokens(value, line=0):
    """A string literal's token. A string that is a whole path into the crate, as serde and ts-rs
    take them (`#[serde(with = "crate::bounds::every")]`, `#[ts(as = "crate::RootKind")]`), names
    that module as code does: its path tokens follow the string token."""
    out = [('"', value, line)]
    if PATH_STRING.fullmatch(value) or FRONT_STRING.fullmatch(value):
        for i, seg in enumerate(value.split("::")):
            if i:
                out.append(("::", None, line))
            out.append((seg, None, line))
    return out


def tokens(text):
    """The code tokens of a Rust source: identifiers, `::` and single punctuation characters.
    Comments, strings and chars are dropped; a string becomes the token `"` so attributes like
    `#[path = "x.rs"]` keep their value (as the token's second element). The third element is
    the token's line (1-based)."""
    out = []
    i, n = 0, len(text)
    line, counted = 1, 0
    while i < n:
        line += text.count("\n", counted, i)
        counted = i
        m = TOKEN.match(text, i)
        kind = m.lastgroup
        if kind == "hashes":
            kind = "raw_string"
        if kind == "block_comment":
            depth, j = 1, m.end()
            while depth and j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = j
            continue
        if kind == "raw_string":
            end = '"' + m.group("hashes")
            j = text.find(end, m.end())
            j = n if j < 0 else j
            out.extend(string_tokens(text[m.end() : j], line))
            i = j + len(end)
            continue
        if kind == "string":
            j = m.end()
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.extend(string_tokens(text[m.end() : j], line))
            i = j + 1
            continue
        if kind in ("ident", "path_sep", "punct"):
            out.append((m.group(), None, line))
        elif kind in ("char", "lifetime", "number"):
            out.append(("0", None, line))
        i = m.end()
    return out


# --- cfg(test) --------------------------------------------------------------------------------------


def cfg_value(toks, i):
    """Three-valued truth of the cfg predicate starting at toks[i] with `test` false and every
    other predicate unknown: (True | False | None, index after the predicate)."""
    name = toks[i][0]
    i += 1
    if i < len(toks) and toks[i][0] == "(" and name in ("all", "any", "not"):
        i += 1
        values = []
        while toks[i][0] != ")":
            v, i = cfg_value(toks, i)
            values.append(v)
            if toks[i][0] == ",":
                i += 1
        i += 1
        if name == "not":
            v = values[0]
            return (None if v is None else not v), i
        if name == "all":
            if False in values:
                return False, i
            return (True if all(v is True for v in values) else None), i
        if True in values:
            return True, i
        return (False if all(v is False for v in values) else None), i
    if i < len(toks) and toks[i][0] == "=":
        return None, i + 2
    return (False if name == "test" else None), i


def skip_group(toks, i):
    """Index after the bracketed group opening at toks[i] (`(`, `[` or `{`)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[toks[i][0]]]
    i += 1
    while stack and i < len(toks):
        t = toks[i][0]
        if t in pairs:
            stack.append(pairs[t])
        elif t == stack[-1]:
            stack.pop()
        i += 1
    return i


def skip_item(toks, i):
    """Index after the item starting at toks[i] (its attributes already consumed): up to its `;`
    or the end of its first top-level `{ ... }` block."""
    while i < len(toks):
        t = toks[i][0]
        if t == ";":
            return i + 1
        if t == "{":
            return skip_group(toks, i)
        if t in ("(", "["):
            i = skip_group(toks, i)
            continue
        i += 1
    return i


# --- Modules and references -------------------------------------------------------------------------


# The front ends reach the engine through one door: its `api` and `dto` modules.
FRONT_ENDS = ["crates/cli", "src-tauri"]
ENGINE = "cachewatch"
DOORS = ("api", "dto")
CORE = "cachewatch_core"


class Crate:
    def __init__(self, src, front=False):
        self.src = src
        self.front = front  # a front end: paths into the engine must go through its doors
        self.strays = []  # (file, line, path) of each path into the engine past its doors
        self.top = []  # top-level modules, in declaration order
        self.reexports = {}  # name re-exported by the root -> top-level module it comes from
        self.refs = {}  # top-level module -> {referenced module: (file, line-less example)}

    def add_edge(self, a, b, where):
        if a is not None and b in self.top and a != b:
            self.refs.setdefault(a, {}).setdefault(b, where)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def child_file(dir_of_children, name, path_attr, base_dir):
    if path_attr is not None:
        return os.path.join(base_dir, path_attr)
    for cand in (os.path.join(dir_of_children, name + ".rs"), os.path.join(dir_of_children, name, "mod.rs")):
        if os.path.exists(cand):
            return cand
    return None


def resolve(crate, modpath, segs):
    """The top-level module a path names, given the module path of the code naming it.
    segs: the path's leading segments, starting with `crate` or `super` (a group is expanded by
    the caller). Returns None when the path stays in the crate root or leaves the crate."""
    if segs[0] in ("crate", "$crate"):
        rest = segs[1:]
    else:
        ups = 0
        while ups < len(segs) and segs[ups] == "super":
            ups += 1
        base = modpath[: max(len(modpath) - ups, 0)] if ups <= len(modpath) else None
        if base is None:
            return None
        if base:
            return base[0]
        rest = segs[ups:]
    if not rest:
        return None
    head = rest[0]
    if head in crate.top:
        return head
    return crate.reexports.get(head)


def path_at(toks, i):
    """The `::`-joined identifiers starting at toks[i]: (segments, index after, group start or
    None when the path ends in `::{`)."""
    segs = [toks[i][0]]
    i += 1
    while i + 1 < len(toks) and toks[i][0] == "::":
        nxt = toks[i + 1][0]
        if nxt == "{":
            return segs, i + 1, i + 1
        if not re.match(r"[A-Za-z_$]", nxt):
            break
        segs.append(nxt)
        i += 2
    return segs, i, None


def group_heads(toks, i):
    """First segment of each element of the group `{ a::x, b, c::{..} }` opening at toks[i]."""
    heads = []
    end = skip_group(toks, i)
    j = i + 1
    expect_head = True
    depth = 0
    while j < end - 1:
        t = toks[j][0]
        if t in ("{", "(", "["):
            depth += 1
        elif t in ("}", ")", "]"):
            depth -= 1
        elif depth == 0 and t == ",":
            expect_head = True
        elif depth == 0 and expect_head and re.match(r"[A-Za-z_]", t):
            heads.append(t)
            expect_head = False
        j += 1
    return heads


def scan_file(crate, path, modpath, is_root):
    """Walk one file: record references from its code and recurse into the modules it declares.
    modpath: the module path of this file's code, [] for the crate root."""
    toks = tokens(read(path))
    base_dir = os.path.dirname(path)
    fname = os.path.basename(path)
    if is_root or fname == "mod.rs":
        children_dir = base_dir
    else:
        children_dir = os.path.join(base_dir, fname[:-3])
    walk(crate, toks, 0, len(toks), modpath, children_dir, base_dir, path)


def walk(crate, toks, i, end, modpath, children_dir, base_dir, path):
    top = modpath[0] if modpath else None
    attrs = []  # pending outer attributes: (name, tokens)
    while i < end:
        t = toks[i][0]
        # Attributes: `#[...]` (outer) and `#![...]` (inner, ignored).
        if t == "#" and i + 1 < end and toks[i + 1][0] in ("[", "!"):
            j = i + 1
            inner = toks[j][0] == "!"
            if inner:
                j += 1
            close = skip_group(toks, j)
            if not inner:
                attrs.append(toks[j + 1 : close - 1])
            # Paths in an attribute (`#[serde(with = "crate::x")]`) are references too.
            k = j
            while k < close:
                after = path_ref(crate, toks, k, close, modpath, path)
                if after is None and crate.front:
                    after = door_ref(crate, toks, k, close, path)
                k = after if after is not None else k + 1
            i = close
            continue
        is_test = False
        path_attr = None
        for a in attrs:
            if a and a[0][0] == "cfg" and len(a) > 2 and a[1][0] == "(":
                v, _ = cfg_value(a, 2)
                if v is False:
                    is_test = True
            if a and a[0][0] == "path" and len(a) >= 3 and a[1][0] == "=":
                path_attr = a[2][1]
        if t in ("pub", "mod", "use", "fn", "struct", "enum", "impl", "trait", "const", "static", "type", "macro_rules", "async", "unsafe", "extern"):
            item_start = True
        else:
            item_start = False
        if is_test and item_start:
            attrs = []
            i = skip_item(toks, i)
            continue
        if item_start or t in (";", "}"):
            attrs = []
        # A module: `mod name;` (a file) or `mod name { ... }` (inline).
        if t == "mod" and i + 1 < end and re.match(r"[A-Za-z_]", toks[i + 1][0]):
            name = toks[i + 1][0].replace("r#", "")
            nxt = toks[i + 2][0] if i + 2 < end else ";"
            if nxt == ";":
                if not modpath:
                    crate.top.append(name)
                f = child_file(children_dir, name, path_attr, base_dir)
                if f is not None:
                    crate.pending.append((f, modpath + [name]))
                i += 3
                continue
            if nxt == "{":
                if not modpath:
                    crate.top.append(name)
                close = skip_group(toks, i + 2)
                walk(crate, toks, i + 3, close - 1, modpath + [name], os.path.join(children_dir, name), base_dir, path)
                i = close
                continue
        # A path starting at `crate`, `$crate` or `super`.
        after = path_ref(crate, toks, i, end, modpath, path)
        if after is None and crate.front:
            after = door_ref(crate, toks, i, end, path)
        i = after if after is not None else i + 1


def door_ref(crate, toks, i, end, path):
    """In a front end, when toks[i] starts a path into the engine (`cachewatch::...`) or the
    core (`cachewatch_core::...`): records it as a stray unless it goes through one of the
    engine's doors (`cachewatch::api`, `cachewatch::dto`), and returns the index after the path;
    else None. `use cachewatch;` or `use cachewatch as e;` (the whole engine under a name) is a
    stray too."""
    t = toks[i][0]
    # `x::cachewatch` is some other path; a leading `::cachewatch` is the crate itself.
    inner = i > 1 and toks[i - 1][0] == "::" and re.match(r"\w", toks[i - 2][0]) and toks[i - 2][0] != "use"
    if t not in (ENGINE, CORE) or inner:
        return None
    where = os.path.relpath(path, os.path.dirname(crate.src))
    line = toks[i][2]
    if not (i + 1 < end and toks[i + 1][0] == "::"):
        # `use cachewatch;`, `use cachewatch as e;`, `extern crate cachewatch as e;`.
        if i > 0 and (toks[i - 1][0] == "use" or (toks[i - 1][0] == "crate" and i > 1 and toks[i - 2][0] == "extern")):
            crate.strays.append((where, line, t))
        return None
    segs, after, group = path_at(toks, i)
    if group is None:
        heads = [segs[1:]]
        nxt = after
    else:
        heads = [segs[1:] + [h] for h in group_heads(toks, group)]
        nxt = skip_group(toks, group)
    for rest in heads:
        if t == CORE or not rest or rest[0] not in DOORS:
            crate.strays.append((where, line, "::".join([t] + rest[:2])))
    return nxt


def path_ref(crate, toks, i, end, modpath, path):
    """When toks[i] starts a path at `crate`, `$crate` or `super`: records its edge and returns
    the index after the path; else None."""
    if not (toks[i][0] in ("crate", "$crate", "super") and i + 1 < end and toks[i + 1][0] == "::"):
        return None
    top = modpath[0] if modpath else None
    segs, after, group = path_at(toks, i)
    where = os.path.relpath(path, crate.src)
    if group is None:
        crate.add_edge(top, resolve(crate, modpath, segs), where)
        return after
    for head in group_heads(toks, group):
        crate.add_edge(top, resolve(crate, modpath, segs + [head]), where)
    return skip_group(toks, group)


def root_reexports(crate, root_file):
    """`pub use module::Name;` and `pub use module::{A, B as C};` in the crate root."""
    toks = tokens(read(root_file))
    for i in range(len(toks) - 2):
        if toks[i][0] == "use" and toks[i + 1][0] in crate.top:
            module = toks[i + 1][0]
            j = i + 2
            names = []
            while j < len(toks) and toks[j][0] != ";":
                if toks[j][0] == "{" or toks[j][0] == "::":
                    j += 1
                    continue
                if re.match(r"[A-Za-z_]", toks[j][0]) and toks[j][0] not in ("as", "self"):
                    names.append(toks[j][0])
                j += 1
            # the last name of each element (after `as`) is what the root exports
            for name in names:
                crate.reexports.setdefault(name, module)


def load(crate_dir, front=False):
    src = os.path.join(crate_dir, "src")
    root_file = None
    for cand in ("lib.rs", "main.rs"):
        if os.path.exists(os.path.join(src, cand)):
            root_file = os.path.join(src, cand)
            break
    crate = Crate(src, front)
    crate.pending = []
    # First pass over the root alone: the top-level modules, then its re-exports.
    scan_file(crate, root_file, [], True)
    root_reexports(crate, root_file)
    # The root's own references were recorded with no source module: nothing to redo. Walk files.
    seen = set()
    while crate.pending:
        f, modpath = crate.pending.pop(0)
        if f in seen or not os.path.exists(f):
            continue
        seen.add(f)
        scan_file(crate, f, modpath, False)
    return crate


# --- Graph ----------------------------------------------------------------------------------------


def sccs(nodes, edges):
    """Tarjan's strongly connected components, each a sorted list."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def floors(nodes, edges):
    level = {}

    def lv(v):
        if v not in level:
            level[v] = 1 + max((lv(w) for w in edges.get(v, ())), default=-1)
        return level[v]

    for v in nodes:
        lv(v)
    return level


def floors_text(nodes, level):
    """The block the docs carry: one line per floor, top floor first."""
    top = max(level.values(), default=-1)
    return "".join(
        f"{f}  {', '.join(m for m in nodes if level[m] == f)}\n" for f in range(top, -1, -1)
    )


def block_re(crate_dir):
    return re.compile(
        r"(<!-- floors " + re.escape(crate_dir) + r" -->\n```\n)(.*?)(```\n<!-- /floors -->)",
        re.S,
    )


def check_docs(blocks, write):
    """Compare (or rewrite) the floors blocks of the docs with the computed ones."""
    path = os.path.join(ROOT, DOC)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    stale = []
    for crate_dir, want in blocks.items():
        pat = block_re(crate_dir)
        m = pat.search(text)
        if m is None:
            print(f"{DOC}: no floors block for {crate_dir} (<!-- floors {crate_dir} --> ... <!-- /floors -->)", file=sys.stderr)
            return False
        if m.group(2) != want:
            stale.append(crate_dir)
            text = text[: m.start(2)] + want + text[m.end(2) :]
    if stale and write:
        tmp = path + ".tmp"
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        print(f"{DOC}: rewrote the floors of {', '.join(stale)}")
        return True
    for c in stale:
        print(f"{DOC}: the floors block of {c} differs from the code; run python3 .ci/module-graph.py --write-docs", file=sys.stderr)
    return not stale


def report(crate_dir, blocks):
    crate = load(os.path.join(ROOT, crate_dir), crate_dir in FRONT_ENDS)
    nodes = sorted(set(crate.top))
    edges = {a: set(bs) for a, bs in crate.refs.items()}
    print(f"== {crate_dir}: {len(nodes)} top-level modules")
    print("modules: " + ", ".join(nodes))
    print("edges:")
    for a in nodes:
        if edges.get(a):
            print(f"  {a} -> {', '.join(sorted(edges[a]))}")
    cycles = [c for c in sccs(nodes, edges) if len(c) > 1]
    if not cycles:
        level = floors(nodes, edges)
        print("floors (0 imports no sibling):")
        for f in range(max(level.values(), default=-1) + 1):
            print(f"  {f}: {', '.join(m for m in nodes if level[m] == f)}")
        print()
        blocks[crate_dir] = floors_text(nodes, level)
        return door_report(crate_dir, crate)
    door_report(crate_dir, crate)
    for c in cycles:
        members = set(c)
        print(f"CYCLE in {crate_dir} between {len(c)} modules: {', '.join(c)}")
        for a in c:
            for b in sorted(edges.get(a, ()) & members):
                print(f"  {a} -> {b}   (e.g. in {crate.refs[a][b]})")
    print()
    return False


def door_report(crate_dir, crate):
    """A front end's paths into the engine past its doors, each with its file and line."""
    if not crate.strays:
        return True
    for where, line, p in crate.strays:
        print(f"{crate_dir}/{where}:{line}: `{p}` reaches into the engine past its doors; use `{ENGINE}::api` or `{ENGINE}::dto`")
    print()
    return False


SELF_TEST = {
    # file -> its text; the expected strays are (file, line, path)
    "src/lib.rs": """//! A front end. `cachewatch::scan` in a doc comment is text.
mod a;
mod b;
use cachewatch::api::{self, Session};
use cachewatch::dto::RootDto;
use cachewatch::{api::units, dto};
use cachewatch::scan::Tally;
""",
    "src/a.rs": """// cachewatch::history::History in a comment
fn f() -> u64 {
    let s = "see cachewatch::units";
    cachewatch::api::units::unix_secs(0) + cachewatch::units::unix_secs(1)
}
use cachewatch::{api, monitor::MonitorHandle};
#[cfg(test)]
mod tests {
    use cachewatch::history::History;
}
""",
    "src/b.rs": """use cachewatch_core::reclaim;
use cachewatch as engine;
#[serde(with = "cachewatch::bounds::every")]
struct S;
use ::cachewatch::history::History;
extern crate cachewatch as eng;
use other::cachewatch::x;
""",
}
SELF_TEST_STRAYS = [
    ("src/lib.rs", 7, "cachewatch::scan::Tally"),
    ("src/a.rs", 4, "cachewatch::units::unix_secs"),
    ("src/a.rs", 6, "cachewatch::monitor"),
    ("src/b.rs", 1, "cachewatch_core::reclaim"),
    ("src/b.rs", 2, "cachewatch"),
    ("src/b.rs", 3, "cachewatch::bounds::every"),
    ("src/b.rs", 5, "cachewatch::history::History"),
    ("src/b.rs", 6, "cachewatch"),
]


def self_test():
    """The door check on a small front end written to a temp dir: every path past the doors is
    found at its line; doors, comments, strings and test code are not."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for name, text in SELF_TEST.items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.write(text)
        crate = load(d, front=True)
        got = [(w, line, p) for w, line, p in crate.strays]
        back = load(d, front=False)
    ok = True
    if got != SELF_TEST_STRAYS:
        print(f"self-test: strays found {got}, expected {SELF_TEST_STRAYS}", file=sys.stderr)
        ok = False
    if back.strays:
        print(f"self-test: a crate that is no front end has strays {back.strays}", file=sys.stderr)
        ok = False
    print("module graph self-test: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    write = "--write-docs" in argv[1:]
    crates = [a for a in argv[1:] if a != "--write-docs"] or CRATES
    ok = True
    blocks = {}
    for c in crates:
        ok = report(c, blocks) and ok
    if ok and crates == CRATES and not check_docs({c: blocks[c] for c in DOC_BLOCKS}, write):
        return 1
    if not ok:
        print("module graph: a cycle between top-level modules, or a front end past the engine's doors (above); break the cycle so each crate's modules form floors, and import the engine only as `cachewatch::api` / `cachewatch::dto`", file=sys.stderr)
        return 1
    print("module graph: no cycle between the top-level modules of any crate; the front ends use only the engine's api and dto")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
