#!/usr/bin/env python3
"""Checks that the crate's modules stay in layers, and that no function is long.

1. Layers: every path a file of src/ names (`use crate::...`, `super::...`,
   `self::...`, a child module's name, or such a path inline in code) is
   resolved, through re-exports, to the module that defines the item. The
   top-level modules of the library must then only name modules below them in
   the layer list of src/lib.rs (a comment block above its modules).
   Within every directory module (the library's and the `zkq` binary's), its
   parts must not name each other in a circle (its own `mod.rs` is their
   face, and may name them all).
   Circles still standing are listed in CIRCLES_LEFT.
2. Length: no function in src/ or tests/ is longer than MAX_FN_LINES lines.

Exit status 1, naming the offending file:line, when either fails. Python 3
standard library only; run from anywhere: `python3 scripts/check-layers.py`.
"""

import os
import re
import sys
from collections import defaultdict

# The layers are listed once, in src/lib.rs: a `//` comment block that starts
# with LAYERS_MARK, one `// - a, b: what they are` line per layer, lowest
# first. A module may name only modules of layers before its own (and itself);
# modules of one layer name none of each other.
LAYERS_MARK = "// Layers, lowest first"

# Circles still standing, by directory module: the check fails on any other
# circle, and on one of these that grew. Each is to be broken and struck off.
CIRCLES_LEFT = {
}

MAX_FN_LINES = 150

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
ITEM_RE = re.compile(
    r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\s*\([^)]*\))?\s+)?(?:unsafe\s+|async\s+|const\s+|extern\s+\"C\"\s+)*"
    r"(struct|enum|fn|trait|type|const|static|union|mod|macro_rules!)\s+(" + IDENT + ")"
)


def strip(text):
    """The text with comments, strings and chars blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j]) + '"')
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|\\x..|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Module:
    def __init__(self, path, file, line):
        self.path = path  # tuple of segments below the crate root
        self.file = file
        self.line = line
        self.items = set()  # names defined here
        self.aliases = {}  # name -> absolute path (list), from `use`
        self.globs = []  # absolute paths of `use x::*`
        self.children = set()


class Crate:
    def __init__(self, name, root_file):
        self.name = name
        self.root_file = root_file
        self.modules = {}
        self.refs = []  # (file, line, from_module_path, abs_path, is_reexport)


def rel(path):
    return os.path.relpath(path, ROOT)


def load_crate(name, root_file):
    crate = Crate(name, root_file)
    parse_file(crate, root_file, ())
    return crate


def module_file(dir_of_children, name, attr_path):
    if attr_path:
        return os.path.join(dir_of_children, attr_path)
    a = os.path.join(dir_of_children, name + ".rs")
    b = os.path.join(dir_of_children, name, "mod.rs")
    return a if os.path.exists(a) else b


def parse_file(crate, file, mod_path):
    with open(file, encoding="utf-8") as f:
        raw = f.read()
    text = strip(raw)
    base = os.path.basename(file)
    if base in ("mod.rs", "lib.rs", "main.rs"):
        child_dir = os.path.dirname(file)
    else:
        child_dir = os.path.join(os.path.dirname(file), base[:-3])
    crate.modules[mod_path] = Module(mod_path, file, 1)
    # Stack of (module path, brace depth at which its body is, child dir).
    stack = [(mod_path, 0, child_dir)]
    depth = 0
    pending_path_attr = None
    lines = text.split("\n")
    raw_lines = raw.split("\n")
    stmt = None  # (start line, text, is_pub, module path) of a `use` being read
    for lineno, line in enumerate(lines, 1):
        cur_path, cur_depth, cur_dir = stack[-1]
        module = crate.modules[cur_path]
        m = re.search(r'#\[path\s*=\s*"([^"]+)"\]', raw_lines[lineno - 1])
        if m:
            pending_path_attr = m.group(1)
        if stmt is None:
            um = re.match(r"^\s*(pub(?:\s*\([^)]*\))?\s+)?use\s+(.*)$", line)
            if um and depth == cur_depth:
                stmt = [lineno, um.group(2), bool(um.group(1)), cur_path]
        else:
            stmt[1] += " " + line
        if stmt is not None:
            if ";" in stmt[1]:
                body = stmt[1][: stmt[1].index(";")]
                add_use(crate, file, stmt[0], stmt[3], body, stmt[2])
                stmt = None
            # a `use` line names nothing else
            track = line
        else:
            track = line
            if depth == cur_depth:
                im = ITEM_RE.match(line)
                if im:
                    kind, name = im.group(1), im.group(2)
                    module.items.add(name)
                    if kind == "mod":
                        child = cur_path + (name,)
                        module.children.add(name)
                        if re.search(r"\bmod\s+" + name + r"\s*;", line):
                            parse_file(crate, module_file(os.path.dirname(file) if pending_path_attr else cur_dir, name, pending_path_attr), child)
                        else:
                            crate.modules[child] = Module(child, file, lineno)
                            stack_push = (child, depth + 1, os.path.join(cur_dir, name))
                            # the `{` on this line opens it
                            depth += line.count("{") - line.count("}")
                            stack.append(stack_push)
                            pending_path_attr = None
                            continue
                        pending_path_attr = None
            for pm in re.finditer(r"(?<![A-Za-z0-9_:])((?:" + IDENT + r"::)+" + IDENT + r")", line):
                segs = pm.group(1).split("::")
                absolute = resolve_start(crate, cur_path, segs)
                if absolute is not None:
                    crate.refs.append((file, lineno, cur_path, absolute, False))
        depth += track.count("{") - track.count("}")
        while len(stack) > 1 and depth < stack[-1][1]:
            stack.pop()


def resolve_start(crate, cur_path, segs):
    """An absolute path for `segs` as written in module `cur_path`, or None when it is not the crate's."""
    head = segs[0]
    if head == "crate":
        return list(segs[1:])
    if head in ("super", "self"):
        path = list(cur_path)
        rest = list(segs)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                path = path[:-1]
            rest = rest[1:]
        return path + rest
    module = crate.modules.get(cur_path)
    if module is not None:
        if head in module.children:
            return list(cur_path) + list(segs)
        if head in module.aliases:
            return module.aliases[head] + list(segs[1:])
    return None


def add_use(crate, file, lineno, cur_path, body, is_pub):
    body = re.sub(r"\s+", " ", body).strip()
    if body.startswith("::"):
        return
    for segs, _ in expand_use_with_alias(body):
        if not segs:
            continue
        absolute = resolve_start(crate, cur_path, segs)
        module = crate.modules[cur_path]
        name = segs[-1]
        alias = name
        if isinstance(segs[-1], tuple):
            name, alias = segs[-1]
            segs = segs[:-1] + [name]
            absolute = resolve_start(crate, cur_path, segs)
        if absolute is None:
            continue
        if name == "*":
            module.globs.append(absolute[:-1])
        elif name == "self":
            module.aliases[alias if alias != "self" else absolute[-2]] = absolute[:-1]
            absolute = absolute[:-1]
        else:
            module.aliases[alias] = absolute
        crate.refs.append((file, lineno, cur_path, absolute, is_pub))


def expand_use_with_alias(body):
    """Like expand_use, keeping `x as y` as a final segment ("x", "y")."""
    out = []

    def split_top(s):
        depth, parts, start = 0, [], 0
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:k])
                start = k + 1
        parts.append(s[start:])
        return [p.strip() for p in parts if p.strip()]

    def walk(prefix, s):
        for part in split_top(s):
            brace = part.find("{")
            if brace >= 0:
                head = [seg.strip() for seg in part[:brace].split("::") if seg.strip()]
                walk(prefix + head, part[brace + 1:part.rindex("}")])
                continue
            m = re.match(r"^(.*?)\s+as\s+(" + IDENT + r")$", part)
            if m:
                segs = [seg.strip() for seg in m.group(1).split("::")]
                out.append(prefix + segs[:-1] + [(segs[-1], m.group(2))])
            else:
                out.append(prefix + [seg.strip() for seg in part.split("::")])

    walk([], body)
    return [(segs, None) for segs in out]


def defining_module(crate, absolute, seen=None):
    """The path of the module that defines the item `absolute` names (through re-exports)."""
    seen = seen or set()
    key = tuple(absolute)
    if key in seen or len(seen) > 20:
        return None
    seen.add(key)
    # the longest prefix that is a module
    k = len(absolute)
    while k > 0 and tuple(absolute[:k]) not in crate.modules:
        k -= 1
    module = crate.modules[tuple(absolute[:k])]
    if k == len(absolute):
        return module.path
    name = absolute[k]
    if name in module.items:
        return module.path
    if name in module.aliases:
        target = module.aliases[name] + list(absolute[k + 1:])
        found = defining_module(crate, target, seen)
        return found if found is not None else module.path
    for glob in module.globs:
        found = defining_module(crate, glob + list(absolute[k:]), seen)
        if found is not None and found != tuple(glob):
            return found
    return module.path


def edges(crate):
    """(file, line, from module path, to module path, is_reexport) for every reference."""
    out = []
    for file, line, src, absolute, is_pub in crate.refs:
        dst = defining_module(crate, absolute)
        if dst is None or dst == src:
            continue
        out.append((file, line, src, dst, is_pub))
    return out


def read_layers(lib_rs):
    """[(line, [module, ...]), ...] from the layer list in `lib_rs`, lowest first."""
    layers, inside = [], False
    with open(lib_rs, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith(LAYERS_MARK):
                inside = True
            elif inside and not line.startswith("//"):
                break
            elif inside:
                m = re.match(r"^//\s+-\s+([^:]+):", line)
                if m:
                    layers.append((lineno, [name.strip(" `") for name in m.group(1).split(",")]))
    return layers


def check_layers(crate, all_edges):
    rank = {}
    for k, (_, names) in enumerate(read_layers(crate.root_file)):
        for name in names:
            rank[name] = k
    failures = []
    if not rank:
        return [f"{rel(crate.root_file)}: no layer list (a comment block starting `{LAYERS_MARK}`)"]
    tops = sorted(name for name in crate.modules[()].children if name != "fuzzing")
    for name in tops:
        if name not in rank:
            failures.append(f"{rel(crate.root_file)}: module `{name}` is in no layer of its layer list")
    for file, line, src, dst, _ in all_edges:
        if not src or not dst or src[0] == dst[0]:
            continue
        a, b = src[0], dst[0]
        if a not in rank or b not in rank:
            continue
        if rank[b] >= rank[a]:
            failures.append(
                f"{rel(file)}:{line}: `{a}` names `{'::'.join(dst)}`, but `{b}` is not below `{a}` in the layers"
            )
    return failures


def find_cycles(nodes, graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_siblings(crate, all_edges, layered):
    """Circles among the parts of each directory module (the crate root's too, unless `layered`)."""
    failures = []
    for dpath, module in sorted(crate.modules.items()):
        if not module.children or (layered and not dpath):
            continue
        d = len(dpath)
        graph = defaultdict(set)
        where = {}
        for file, line, src, dst, _ in all_edges:
            # Only what the directory's parts name of each other: its own
            # file (`mod.rs`) is their face, and may name them all.
            if len(src) <= d or len(dst) <= d or src[:d] != dpath or dst[:d] != dpath:
                continue
            a, b = src[d], dst[d]
            if a == b:
                continue
            graph[a].add(b)
            where.setdefault((a, b), (file, line))
        name = "::".join((crate.name,) + dpath)
        for comp in find_cycles(set(graph), graph):
            if any(set(comp) <= left for left in CIRCLES_LEFT.get(name, [])):
                continue
            steps = [
                f"{a} -> {b} ({rel(where[(a, b)][0])}:{where[(a, b)][1]})"
                for a in comp
                for b in sorted(graph[a])
                if b in comp
            ]
            failures.append(f"{name}: its modules {', '.join(comp)} name each other in a circle:\n    " + "\n    ".join(steps))
    return failures


FN_RE = re.compile(r"^\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+|extern\s+\"[^\"]*\"\s+)*fn\s+(" + IDENT + ")")


def fn_lengths(files):
    out = []
    for file in files:
        with open(file, encoding="utf-8") as f:
            lines = strip(f.read()).split("\n")
        for k, line in enumerate(lines):
            m = FN_RE.match(line)
            if not m:
                continue
            depth, started, j = 0, False, k
            while j < len(lines):
                segment = lines[j]
                if not started and ";" in segment and "{" not in segment[: segment.index(";")]:
                    break  # a declaration without a body
                depth += segment.count("{") - segment.count("}")
                started = started or "{" in segment
                if started and depth <= 0:
                    out.append((j - k + 1, f"{rel(file)}:{k + 1}", m.group(1)))
                    break
                j += 1
    return sorted(out, reverse=True)


def rust_files(top):
    for base, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [d for d in dirs if d != "target"]
        for name in files:
            if name.endswith(".rs"):
                yield os.path.join(base, name)


def main():
    verbose = "--graph" in sys.argv
    lib = load_crate("zk_queue", os.path.join(ROOT, "src", "lib.rs"))
    crates = [lib]
    bins = os.path.join(ROOT, "src", "bin")
    for name in sorted(os.listdir(bins)) if os.path.isdir(bins) else []:
        main_rs = os.path.join(bins, name, "main.rs")
        if os.path.exists(main_rs):
            crates.append(load_crate(name, main_rs))
    failures = []
    for crate in crates:
        all_edges = edges(crate)
        if verbose:
            top = defaultdict(set)
            for _, _, src, dst, _ in all_edges:
                if src and dst and src[0] != dst[0]:
                    top[src[0]].add(dst[0])
            for a in sorted(top):
                print(f"{crate.name}: {a} -> {', '.join(sorted(top[a]))}")
        if crate is lib:
            failures += check_layers(crate, all_edges)
        failures += check_siblings(crate, all_edges, crate is lib)
    lengths = fn_lengths(sorted(set(rust_files("src")) | set(rust_files("tests"))))
    longest = ", ".join(f"{name} {n} ({where})" for n, where, name in lengths[:5])
    for n, where, name in lengths:
        if n > MAX_FN_LINES:
            failures.append(f"{where}: fn `{name}` is {n} lines long, over {MAX_FN_LINES}")
    failures = list(dict.fromkeys(failures))
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures:
        print(f"check-layers: {len(failures)} failure(s)", file=sys.stderr)
        return 1
    left = sum(len(circles) for circles in CIRCLES_LEFT.values())
    print(f"check-layers: modules in layers, no new circles ({left} left); longest functions: {longest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
