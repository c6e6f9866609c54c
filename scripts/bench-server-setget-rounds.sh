#!/usr/bin/env bash
# SET/GET bars of issue 23 in ROUNDS rounds (default 5): redis-server and orrery-server
# --index wormhole both up at once (persistence off), each pinned to core 0, redis-benchmark
# on core 1, both loaded with the same 10M keys first; ORDER=alt (default) runs redis SET,
# orrery SET, redis GET, orrery GET per round; ORDER=seq runs redis SET, GET, orrery SET, GET.
# Run from the repo root after `cargo build --release -p orrery-server`.
set -euo pipefail
KEYS=${KEYS:-10000000}; ROUNDS=${ROUNDS:-5}; OUT=${OUT:-docs/results/server/setget-alt}; mkdir -p $OUT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RP=$(free_port); OP=$(free_port); W=$(mktemp -d)
taskset -c 0 redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no --dir "$W" >/dev/null 2>&1 & RPID=$!
taskset -c 0 target/release/orrery-server --port "$OP" --index wormhole --appendonly no >/dev/null 2>&1 & OPID=$!
trap 'kill $RPID $OPID 2>/dev/null; rm -rf $W' EXIT
for p in $RP $OP; do for _ in $(seq 600); do redis-cli -p $p ping >/dev/null 2>&1 && break; sleep 0.1; done; done
for p in $RP $OP; do python3 scripts/server_bench_load.py strings "$KEYS" | taskset -c 1 redis-cli -p "$p" --pipe >/dev/null; done
echo "loaded; rss redis $(ps -o rss= $RPID) kB orrery $(ps -o rss= $OPID) kB"
if [ "${ORDER:-alt}" = alt ]; then L1="set get"; L2="redis orrery"; else L1="redis orrery"; L2="set get"; fi
for round in $(seq $ROUNDS); do for a in $L1; do for b in $L2; do
  if [ "${ORDER:-alt}" = alt ]; then t=$a; s=$b; else s=$a; t=$b; fi
  p=$RP; [ $s = orrery ] && p=$OP
  taskset -c 1 redis-benchmark -p "$p" --csv -c 50 -P 16 -n 2000000 -r 1000000 -d 16 -t $t > $OUT/$s-$t-r$round.csv
  echo "round $round $s $t: $(grep -v '^"test"' $OUT/$s-$t-r$round.csv | cut -d, -f1,2,7) load $(cut -d' ' -f1 /proc/loadavg)"
done; done; done
