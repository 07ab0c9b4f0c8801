#!/usr/bin/env bash
# Runs the quickstart demo: installs what is missing, then runs a producer and
# two consumers on one queue. Uses the ZooKeeper named by ZK_CONNECT, or starts
# an embedded local server when it is unset.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cargo run --quiet --example quickstart
