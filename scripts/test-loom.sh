#!/usr/bin/env bash
# Runs the loom models (`RUSTFLAGS="--cfg loom"`): orrery-core's lock types (`sync/loom.rs`),
# the Cuckoo Trie's bucket version/lock word and migration hand-off (`bucket/loom.rs`) and
# Hyperion's per-trie version protocol (`seq/loom.rs`). Only the crates' library tests whose
# path has a `loom` module run (loom explores thousands of interleavings per model), in the
# test profile (opt-level 3, without the release profile's fat LTO), into
# `target/loom` so that the `--cfg loom` build does not invalidate the ordinary one.
# Each crate also has models marked `#[should_panic]` that break the protocol on purpose
# (a read not validated, a migration without freeze, ...): they pass only if loom finds the
# failure, so the run shows the models can fail.
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTFLAGS="--cfg loom${RUSTFLAGS:+ $RUSTFLAGS}"
export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"

for spec in orrery-core:sync::loom orrery-cuckoo-trie:bucket::loom orrery-hyperion:seq::loom; do
  crate=${spec%%:*}
  filter=${spec#*:}
  echo "== loom: $crate ($filter)"
  cargo test -p "$crate" --lib -- "$filter"
done
