#!/bin/sh
# usage: ab.sh DATASET WORKLOAD OUTPREFIX [extra args]; 3 rounds of main, new, judy (judy only for load)
ds=$1; wl=$2; out=$3; shift 3
for r in 1 2 3; do
  for b in main new judy; do
    case $b in
      main) bin=bin-main/orrery-bench; idx=hyperion;;
      new) bin=bin-new/orrery-bench; idx=hyperion;;
      judy) [ "$wl" = load ] || continue; bin=bin-new/orrery-bench; idx=judy;;
    esac
    echo "round $r $b $(date +%T)"
    $bin run --index $idx --dataset $ds --keys 10M --value-size 8 --workload $wl --threads 1 --no-machine --json $out-$b.jsonl "$@" 2>&1 | grep -E "^(hyperion|judy) "
  done
done
