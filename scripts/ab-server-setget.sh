#!/usr/bin/env bash
# A/B of the SET/GET bar runs between two orrery-server binaries (and redis-server), servers
# alternating within each round, same options as scripts/bench-server-setget.sh:
#   A=/path/to/base/orrery-server B=target/release/orrery-server scripts/ab-server-setget.sh
# Env: KEYS (keys loaded first, default 10000000), ROUNDS (default 3), REDIS=1 to include
# redis-server, OUT (CSV directory). Each server on core 0, loader and redis-benchmark on core 1.
set -euo pipefail
A=${A:?path of the base binary}; B=${B:-target/release/orrery-server}
KEYS=${KEYS:-10000000}; ROUNDS=${ROUNDS:-3}; OUT=${OUT:-target/ab-server}; mkdir -p "$OUT"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
servers="a b"; [ "${REDIS:-0}" = 1 ] && servers="redis a b"
for round in $(seq "$ROUNDS"); do for server in $servers; do
  PORT=$(free_port); WORK=$(mktemp -d)
  case $server in
    redis) taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >/dev/null 2>&1 & ;;
    a) taskset -c 0 "$A" --port "$PORT" --index wormhole --appendonly no >/dev/null 2>&1 & ;;
    b) taskset -c 0 "$B" --port "$PORT" --index wormhole --appendonly no >/dev/null 2>&1 & ;;
  esac
  PID=$!
  for _ in $(seq 600); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  python3 scripts/server_bench_load.py strings "$KEYS" | taskset -c 1 redis-cli -p "$PORT" --pipe >/dev/null
  for t in set get; do
    taskset -c 1 redis-benchmark -p "$PORT" --csv -c 50 -P 16 -n 2000000 -r 1000000 -d 16 -t $t > "$OUT/$server-$t-r$round.csv"
    echo "round $round $server $t: $(grep -v '^"test"' "$OUT/$server-$t-r$round.csv" | cut -d, -f1,2,7) load $(cut -d' ' -f1 /proc/loadavg)"
  done
  kill $PID; wait $PID 2>/dev/null || true; rm -rf "$WORK"
done; done
