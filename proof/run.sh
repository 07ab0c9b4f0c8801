#!/usr/bin/env bash
# Runs the random-fault test for a number of rounds on one commit and keeps its
# full log here, named for the commit, the servers, the seed and the rounds:
#
#   proof/run.sh one|ensemble SEED [ROUNDS] [COMMIT]
#
# ROUNDS defaults to 1000, COMMIT to HEAD. The run builds and tests a clean
# checkout of COMMIT (a temporary git worktree), so the log belongs to that
# commit whatever the working tree holds; its build goes to
# target/proof-build. The log starts with the commit, the command and the
# machine, and ends with the test's report and its exit status.
set -euo pipefail
cd "$(dirname "$0")/.."

servers="${1:?one or ensemble}"
seed="${2:?a seed}"
rounds="${3:-1000}"
commit="$(git rev-parse "${4:-HEAD}")"
case "$servers" in
    one) ensemble=0 ;;
    ensemble) ensemble=1 ;;
    *) echo "one or ensemble, not $servers" >&2; exit 2 ;;
esac

root="$(pwd)"
log="$root/proof/$(date -u +%Y%m%d-%H%M%S)-${commit:0:10}-$servers-seed$seed-$rounds-rounds.log"
checkout="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$checkout" >/dev/null 2>&1 || true' EXIT
git worktree add --detach "$checkout" "$commit" >/dev/null

{
    echo "commit:   $commit"
    echo "command:  ZKQ_FAULT_SEED=$seed ZKQ_FAULT_ROUNDS=$rounds ZKQ_FAULT_ENSEMBLE=$ensemble cargo test --all-features --test it faults::random_faults::long -- --exact --ignored --nocapture"
    echo "started:  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine:  $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "rustc:    $(rustc --version)"
    echo "java:     $(java -version 2>&1 | head -1)"
    echo
} > "$log"
status=0
(
    cd "$checkout"
    CARGO_TARGET_DIR="$root/target/proof-build" ZKQ_FAULT_SEED="$seed" ZKQ_FAULT_ROUNDS="$rounds" \
        ZKQ_FAULT_ENSEMBLE="$ensemble" \
        cargo test --all-features --test it faults::random_faults::long -- --exact --ignored --nocapture
) >> "$log" 2>&1 || status=$?
{
    echo
    echo "finished: $(date -u +%Y-%m-%dT%H:%M:%SZ), exit status $status"
} >> "$log"
echo "$log"
exit "$status"
