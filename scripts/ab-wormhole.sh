#!/usr/bin/env bash
# Same-sitting A/B of Wormhole's lookups and inserts between two commits: builds
# orrery-bench in release mode at BASE and at NEW (each from `git archive` into its own
# directory with its own target dir, so no worktree is made and the checkout is not
# touched), then runs the two binaries alternately, base then new, REPEATS rounds, on
# every dataset and thread count, and prints the median Mops/s of each side and the
# ratio new/base per cell.
#
# Usage: scripts/ab-wormhole.sh BASE [NEW] [REPEATS]
#
#   BASE     commit to compare against (e.g. the main commit before a change)
#   NEW      commit to measure (default HEAD)
#   REPEATS  rounds (default 5); each round runs every cell once per side
#
# Environment (defaults in brackets):
#   DATASETS   datasets, space-separated                     [rand-8 az]
#   THREADS    thread counts, space-separated                [1 2]
#   KEYS       keys loaded per run                           [10M]
#   OPS        lookups per thread                            [2M]
#   WORKLOADS  orrery-bench workloads, comma-separated       [load,c]
#   INDEX      registry name to measure                      [wormhole]
#   WORK       where sources, builds and JSON records go     [/tmp/ab-wormhole]
#   BASE_BIN, NEW_BIN  use these orrery-bench binaries instead of building
#   EXTRA      further `orrery-bench run` options (e.g. "--epoch-pin fenced")
#
# Every run writes JSON records (they carry the machine's load average, the git revision
# and the run's settings) to $WORK/json/; the summary is recomputed from this sitting's.
# SUMMARY=STAMP only prints the summary of an earlier sitting (its JSON file prefix).
# Figures are only comparable within one sitting on a quiet machine: check `loadavg`.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,27p' "$0" >&2
    exit 2
fi
base=$(git rev-parse --short=12 "$1")
new=$(git rev-parse --short=12 "${2:-HEAD}")
repeats=${3:-5}
datasets=${DATASETS:-rand-8 az}
threads=${THREADS:-1 2}
keys=${KEYS:-10M}
ops=${OPS:-2M}
workloads=${WORKLOADS:-load,c}
index=${INDEX:-wormhole}
work=${WORK:-/tmp/ab-wormhole}
mkdir -p "$work/json"

# Builds orrery-bench at commit $1 under $work/src-$1 (once) and prints the binary's path.
build() {
    local rev=$1 dir="$work/src-$1"
    if [[ ! -x "$dir/target/release/orrery-bench" ]]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        git archive "$rev" | tar -x -C "$dir"
        (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --release -q -p orrery-bench) >&2
    fi
    echo "$dir/target/release/orrery-bench"
}

if [[ -z ${SUMMARY:-} ]]; then
    base_bin=${BASE_BIN:-$(build "$base")}
    new_bin=${NEW_BIN:-$(build "$new")}
    echo "base $base: $base_bin" >&2
    echo "new  $new: $new_bin" >&2
fi

stamp=${SUMMARY:-$(date -u +%Y%m%dT%H%M%S)}
[[ -n ${SUMMARY:-} ]] && repeats=0
for r in $(seq 1 "$repeats"); do
    for d in $datasets; do
        for t in $threads; do
            for side in base new; do
                bin=$base_bin
                [[ $side == new ]] && bin=$new_bin
                out="$work/json/$stamp-$side-$d-t$t-r$r.jsonl"
                echo "round $r/$repeats: $side $d threads $t" >&2
                # shellcheck disable=SC2086
                "$bin" run --index "$index" --dataset "$d" --keys "$keys" --workload "$workloads" \
                    --threads "$t" --ops "$ops" --json "$out" ${EXTRA:-} >/dev/null
            done
        done
    done
done

python3 - "$work/json" "$stamp" <<'EOF'
import glob, json, os, statistics, sys
from collections import defaultdict

root, stamp = sys.argv[1], sys.argv[2]
# Per cell and side: wall-clock Mops/s, and Mops/s over the measuring threads' CPU time
# (less sensitive to other processes taking the cores, but blind to waits).
runs = defaultdict(lambda: ([], []))
loads = []
for path in sorted(glob.glob(os.path.join(root, f"{stamp}-*.jsonl"))):
    side = os.path.basename(path).split("-")[1]
    for line in open(path):
        rec = json.loads(line)
        wall, cpu = runs[(side, rec["dataset"], rec["threads"], rec["workload"])]
        wall.append(rec["mops"])
        cpu.append(rec.get("mops_cpu", float("nan")))
        loads.append(rec.get("loadavg", float("nan")))
cells = sorted({k[1:] for k in runs})
med = statistics.median
print("medians; wall: Mops/s by wall clock; cpu: by the measuring threads' CPU time")
print(f"{'dataset':8} {'thr':>3} {'workload':8} {'base wall':>9} {'new wall':>9} {'new/base':>8}"
      f" {'base cpu':>9} {'new cpu':>9} {'new/base':>8}  runs")
for d, t, w in cells:
    (bw, bc), (nw, nc) = runs[("base", d, t, w)], runs[("new", d, t, w)]
    if not bw or not nw:
        continue
    print(f"{d:8} {t:>3} {w:8} {med(bw):9.3f} {med(nw):9.3f} {med(nw) / med(bw):8.3f}"
          f" {med(bc):9.3f} {med(nc):9.3f} {med(nc) / med(bc):8.3f}  {len(bw)}+{len(nw)}")
if loads:
    print(f"load average during the runs: min {min(loads):.2f}, max {max(loads):.2f}")
EOF
