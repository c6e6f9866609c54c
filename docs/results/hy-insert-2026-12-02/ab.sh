#!/bin/sh
# Alternating rounds at 10M keys, 1 thread, load only: main's Hyperion (f8eae6c, BASE),
# this branch's (50e509a, NEW), Judy (from NEW; the same code in both binaries).
# One locked command per dataset, cut at 10 minutes (`timeout 600`): the rounds that
# finished are the ones in the JSON files.
BASE=/tmp/hy-insert-base/orrery-bench
NEW=/tmp/hy-insert-new/orrery-bench
for ds in rand-int ngram; do
  flock /work/helpers/bench.lock timeout 600 sh -c "
    for r in 1 2 3; do
      $BASE run --index hyperion --dataset $ds --keys 10M --value-size 8 --workload load --threads 1 --no-machine --json ab-base.jsonl
      $NEW  run --index hyperion --dataset $ds --keys 10M --value-size 8 --workload load --threads 1 --no-machine --json ab-new.jsonl
      $NEW  run --index judy     --dataset $ds --keys 10M --value-size 8 --workload load --threads 1 --no-machine --json ab-judy.jsonl
      echo round \$r $ds done \$(date -u +%T)
    done"
done
