#!/usr/bin/env bash
# Re-run of only the SET/GET bars of scripts/bench-server.sh (same options), alternating
# servers, 2 rounds; run from the repo root after `cargo build --release -p orrery-server`.
set -euo pipefail
KEYS=10000000; OUT=${OUT:-docs/results/server/setget-rerun}; mkdir -p $OUT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for round in 1 2; do for server in redis orrery; do
  PORT=$(free_port); WORK=$(mktemp -d)
  if [ $server = redis ]; then
    taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >/dev/null 2>&1 &
  else
    taskset -c 0 target/release/orrery-server --port "$PORT" --index wormhole --appendonly no >/dev/null 2>&1 &
  fi
  PID=$!
  for _ in $(seq 600); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  python3 scripts/server_bench_load.py strings "$KEYS" | taskset -c 1 redis-cli -p "$PORT" --pipe >/dev/null
  for t in set get; do
    taskset -c 1 redis-benchmark -p "$PORT" --csv -c 50 -P 16 -n 2000000 -r 1000000 -d 16 -t $t > $OUT/$server-$t-r$round.csv
    echo "round $round $server $t: $(grep -v '^"test"' $OUT/$server-$t-r$round.csv | cut -d, -f1,2,7) load $(cut -d' ' -f1 /proc/loadavg)"
  done
  kill $PID; wait $PID 2>/dev/null || true; rm -rf "$WORK"
done; done
