#!/usr/bin/env bash
# The docs say which cargo feature each item needs (docs.rs builds them with
# `--cfg docsrs`, see Cargo.toml): builds them without features, then with all
# of them as docs.rs does, and checks every item only the second has
# (scripts/doc-features.py). `doc(cfg)` is not stable yet, hence
# RUSTC_BOOTSTRAP for this one build, as docs.rs's nightly has it.
set -euo pipefail
cd "$(dirname "$0")/.."
docs="${CARGO_TARGET_DIR:-target}/doc"
plain="$(mktemp -d)"
trap 'rm -rf "$plain"' EXIT
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib
cp -r "$docs/zk_queue" "$plain/"
RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" cargo doc --no-deps --lib --all-features
python3 scripts/doc-features.py "$plain/zk_queue" "$docs/zk_queue"
