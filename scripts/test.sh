#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: installs what is missing, then
# formatting, lints, docs with warnings denied, and every test (unit, doc and
# integration tests against real ZooKeeper servers the tests start).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

cargo fmt --all --check
cargo clippy --all-targets --all-features -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features
# Integration tests mostly wait on ZooKeeper, so run more of them at once than
# there are cores.
RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}" cargo test --all-features
# A short fuzzing pass over the item-frame decoder and the name parser
# (fuzz/, cargo-fuzz and libFuzzer). Without a sanitizer it builds on the
# stable toolchain; the crate has no unsafe code for one to watch.
command -v cargo-fuzz > /dev/null || cargo install --locked cargo-fuzz
for target in frame names; do
    cargo fuzz run --release --sanitizer none "$target" -- -max_total_time=20
done
# The benchmark, in miniature, so it keeps working (the figures mean nothing at this size).
cargo run --quiet --example bench -- --items 300 --drain-sizes 300 > /dev/null
