#!/usr/bin/env bash
# Installs what zk-queue's demo and tests need on Debian: ZooKeeper 3.8 and
# Curator (for the Java interop peers), a headless JDK, kazoo and tmux. Installs nothing
# that is already present. The Rust toolchain (cargo with rustfmt and clippy)
# must already be installed.
set -euo pipefail

missing=()
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
[ -f /usr/share/java/curator-recipes.jar ] || missing+=(libcurator-recipes-java)
command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
# kazoo (Python) for the kazoo interop peers (interop/python/kazoo_peer.py).
[ -f /usr/lib/python3/dist-packages/kazoo/recipe/queue.py ] || missing+=(python3-kazoo)
# tmux, the real terminal the test of `zkq top`'s full-screen view runs it in.
command -v tmux >/dev/null 2>&1 || missing+=(tmux)

if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install a Rust toolchain (1.85 or newer) with rustfmt and clippy" >&2
    exit 1
fi
