#!/usr/bin/env python3
"""Checks that the docs say which cargo feature each item needs.

Usage: doc-features.py <docs without features> <docs with all features>

Both arguments are `target/doc/zk_queue` folders: the first built with the
default features, the second with `--all-features` and `--cfg docsrs` (as
docs.rs builds it, see Cargo.toml). Every page, method, variant and field
that exists only in the second must carry rustdoc's "Available on crate
feature ... only" note. Exits non-zero and names each one that does not.
"""

import pathlib
import re
import sys

NOTE = re.compile(r"Available on <strong>crate feature <code>[a-z_]+</code></strong> only")
ANCHOR = re.compile(r'<section id="((?:method|variant|structfield|tymethod|associatedconstant)\.[A-Za-z0-9_]+)"')


def pages(root):
    """Item pages under `root`, by their path relative to it."""
    return {
        str(p.relative_to(root)): p
        for p in root.rglob("*.html")
        if p.name != "all.html" and 'http-equiv="refresh"' not in p.read_text(errors="replace")[:300]
    }


def sections(html):
    """Each member anchor of a page with the text up to the next one, up to
    the blanket implementations: those are other crates' traits implemented
    for every type (a dependency a feature turns on may add one), not items
    of this crate."""
    html = html.split('id="blanket-implementations"', 1)[0]
    found = list(ANCHOR.finditer(html))
    return {
        m.group(1): html[m.start() : found[i + 1].start() if i + 1 < len(found) else len(html)]
        for i, m in enumerate(found)
    }


def main():
    plain, full = (pathlib.Path(a) for a in sys.argv[1:3])
    before, after = pages(plain), pages(full)
    if not after:
        sys.exit(f"no pages under {full}")
    missing = []
    gated = 0
    for name, path in sorted(after.items()):
        html = path.read_text(errors="replace")
        if name not in before:
            gated += 1
            if not NOTE.search(html):
                missing.append(name)
            continue
        old = sections(before[name].read_text(errors="replace"))
        for anchor, text in sections(html).items():
            if anchor not in old:
                gated += 1
                if not NOTE.search(text):
                    missing.append(f"{name}#{anchor}")
    if missing:
        print("items that need a feature without saying which:", file=sys.stderr)
        for item in missing:
            print(f"  {item}", file=sys.stderr)
        sys.exit(1)
    if gated == 0:
        sys.exit("no item needs a feature: the two builds are the same")
    print(f"{gated} items need a feature, and each says which")


if __name__ == "__main__":
    main()
