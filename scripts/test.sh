#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: installs what is missing, then
# formatting, lints, docs with warnings denied, and every test (unit, doc and
# integration tests against real ZooKeeper servers the tests start).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

cargo fmt --all --check
# Modules in the layers lib.rs lists, no circles among a directory's files, no long functions.
python3 scripts/check-layers.py
# Every test README.md and GUARANTEES.md cite exists (scripts/check-guarantees.py).
python3 scripts/check-guarantees.py
cargo clippy --all-targets --all-features -- -D warnings
# The application test (tests/app, see below) is a workspace of its own, which
# the two commands above do not reach.
cargo fmt --manifest-path tests/app/Cargo.toml --check
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}" \
    cargo clippy --manifest-path tests/app/Cargo.toml --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features
# The docs say which feature each item needs, as docs.rs shows them.
bash scripts/doc-features.sh
# Integration tests mostly wait on ZooKeeper, so run more of them at once than
# there are cores.
RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}" cargo test --all-features
# 100 rounds of random faults on one server, then on a 3-member ensemble
# (tests/it/faults/random_faults.rs): every kind of fault, each counted only
# once its effect is seen; no item lost, every duplicate charged to one fault.
# Fixed seeds, so a failure reruns as it ran; 2.1–2.5 minutes each on a
# 2-core machine with a second copy of the suite beside it. The 1,000-round
# runs and their logs: proof/README.md.
random_faults="cargo test --all-features --test it faults::random_faults::long -- --exact --ignored"
ZKQ_FAULT_ROUNDS=100 ZKQ_FAULT_ENSEMBLE=0 ZKQ_FAULT_SEED="${ZKQ_FAULT_SEED:-20240601}" $random_faults
ZKQ_FAULT_ROUNDS=100 ZKQ_FAULT_ENSEMBLE=1 ZKQ_FAULT_SEED="${ZKQ_FAULT_SEED:-20261157}" $random_faults
# The outage scenario, built as a user's application builds zk-queue:
# tests/app is a crate of its own (its own workspace and Cargo.lock) that
# depends on zk-queue by path from its own manifest. Cargo applies `[patch]`
# sections only from the root manifest of the workspace it builds, so none of
# ours applies there: it gets exactly the dependencies an application gets.
# It runs ten server outages as long as the session timeout and fails if the
# client loses its session or serves its first request late after a restart.
# Its build shares the root's target directory (one directory to cache and
# clean; the dependencies it has in common with the lint pass above are
# checked once).
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}" \
    cargo run --release --manifest-path tests/app/Cargo.toml
# A short fuzzing pass over the item-frame decoder and the name parser
# (fuzz/, cargo-fuzz and libFuzzer). Without a sanitizer it builds on the
# stable toolchain; the crate has no unsafe code for one to watch.
command -v cargo-fuzz > /dev/null || cargo install --locked cargo-fuzz
for target in frame names reply; do
    cargo fuzz run --release --sanitizer none "$target" -- -max_total_time=20
done
# The benchmark, in miniature, so it keeps working (the figures mean nothing at this size). Its
# work is bounded by the sizes; its parts' deadlines are made generous, since a loaded machine
# says nothing about the code's speed. The table is printed, so a failed part shows why. The
# coordination recipes run 100 cycles each (ours and Curator's, beside the floor). The open-loop
# runs are two seconds at two rates: Curator's queue at half the ceiling falls far behind (about
# 500 items/s), and on a loaded machine would outlast its peer's timeout.
cargo run --quiet --example bench -- --items 300 --drain-sizes 300 --deadline-factor 100 \
    --latency-rates 500,10% --latency-secs 2 --recipes --recipe-cycles 100
