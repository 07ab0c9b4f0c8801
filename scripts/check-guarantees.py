#!/usr/bin/env python3
"""Checks that every test the documents cite exists.

A citation is a code span (between backticks) in one of these forms:

  it::<module>::...::<test>     a test of the integration binary `it`
                                (tests/it): `cargo test --test it <module>::...::<test>`
  it::<module>::...::<prefix>*  every test of that module whose name starts with <prefix>
  it::<module>::*               every test of that module and its submodules
  lib::<module>::...::<test>    a unit test in src/: `cargo test --lib <module>::...::<test>`

The module path names a file: tests/it/<a>/<b>.rs or tests/it/<a>/<b>/mod.rs
(src/<a>/<b>.rs, ... for `lib::`; a trailing `tests` module may be inline in
its parent's file). The file must hold `fn <test>(` with `#[test]` a few lines
above it (for a wildcard: at least one such test whose name matches).

A code span that looks like a test path but is not in one of these forms
(a module of tests/it without `it::`, an elided `…` path, a wildcard
anywhere but at the end) is refused too, so
a citation cannot slip past the check by its spelling. The script prints every
missing or unreadable citation and exits 1; it also exits 1 when it found no
citation at all. Standard library only; run from anywhere.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ["README.md", "GUARANTEES.md"]
# How many lines above `fn name(` the `#[test]` may be (other attributes,
# `#[ignore]`, `#[cfg(...)]`, a comment).
ATTRIBUTE_REACH = 6

SPAN = re.compile(r"`([^`\n]+)`")
CITATION = re.compile(r"^(it|lib)((?:::[a-z0-9_]+)+)(\*)?$")
WILDCARD_MODULE = re.compile(r"^(it|lib)((?:::[a-z0-9_]+)+)::\*$")
TEST_FN = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?fn\s+([a-z0-9_]+)\s*\(")


def test_modules():
    """The top-level modules of tests/it, whose names start a test path."""
    names = set()
    for entry in (ROOT / "tests" / "it").iterdir():
        if entry.is_dir():
            names.add(entry.name)
        elif entry.suffix == ".rs" and entry.stem != "main":
            names.add(entry.stem)
    return names


def module_file(kind, modules):
    """The file that holds the module `modules` (a list of names), or None."""
    base = ROOT / "tests" / "it" if kind == "it" else ROOT / "src"
    candidates = [base.joinpath(*modules[:-1], modules[-1] + ".rs"), base.joinpath(*modules, "mod.rs")]
    if modules[-1] == "tests" and len(modules) > 1:
        # `mod tests { ... }` inline in its parent's file.
        parent = modules[:-1]
        candidates += [base.joinpath(*parent[:-1], parent[-1] + ".rs"), base.joinpath(*parent, "mod.rs")]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def tests_in(path):
    """The names of the functions in `path` marked `#[test]` a few lines above."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = set()
    for number, line in enumerate(lines):
        match = TEST_FN.match(line)
        if not match:
            continue
        above = lines[max(0, number - ATTRIBUTE_REACH) : number]
        if any(a.strip().startswith("#[test]") for a in above):
            found.add(match.group(1))
    return found


def check_citation(span):
    """None if the cited test(s) exist, else why not."""
    module_wildcard = WILDCARD_MODULE.match(span)
    if module_wildcard:
        kind, modules, prefix = module_wildcard.group(1), module_wildcard.group(2)[2:].split("::"), ""
    else:
        match = CITATION.match(span)
        kind, parts = match.group(1), match.group(2)[2:].split("::")
        if len(parts) < 2:
            return "a test path needs a module and a test name"
        modules, prefix = parts[:-1], parts[-1]
        if not match.group(3):
            path = module_file(kind, modules)
            if path is None:
                return "no file for module " + "::".join(modules)
            if prefix not in tests_in(path):
                return f"no #[test] fn {prefix} in {path.relative_to(ROOT)}"
            return None
    path = module_file(kind, modules)
    if path is None:
        return "no file for module " + "::".join(modules)
    files = [path]
    if module_wildcard and path.name == "mod.rs":
        # `module::*`: the module and its submodules.
        files = sorted(path.parent.rglob("*.rs"))
    if not any(name.startswith(prefix) for file in files for name in tests_in(file)):
        return f"no #[test] fn {prefix}* in {path.relative_to(ROOT)}"
    return None


def looks_like_a_test_path(span, modules):
    """A span that reads like a test path but is in none of the forms above."""
    if ("…" in span and "::" in span) or re.fullmatch(r"…[a-z0-9_]+", span):
        return True
    if span.startswith(("it::", "lib::")):
        return True
    first = span.split("::")[0]
    return first in modules and re.fullmatch(r"[a-z0-9_]+(::[a-z0-9_*]+)+", span) is not None


def main():
    modules = test_modules()
    checked, problems = 0, []
    for document in DOCUMENTS:
        path = ROOT / document
        if not path.is_file():
            problems.append(f"{document}: missing")
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for span in SPAN.findall(line):
                if CITATION.match(span) or WILDCARD_MODULE.match(span):
                    checked += 1
                    why = check_citation(span)
                    if why:
                        problems.append(f"{document}:{number}: `{span}`: {why}")
                elif looks_like_a_test_path(span, modules):
                    problems.append(
                        f"{document}:{number}: `{span}`: not a test path this check reads (write it it::module::test)"
                    )
    for problem in problems:
        print(problem)
    if checked == 0:
        print("no test citations found in " + ", ".join(DOCUMENTS))
        return 1
    print(f"{checked} test citations checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
