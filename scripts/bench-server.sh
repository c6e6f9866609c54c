#!/usr/bin/env bash
# The orrery-server bars of issue 23, side by side with redis-server in one run:
# redis-benchmark against `orrery-server --index wormhole` and `redis-server` (persistence
# off on both), each server pinned to one core with taskset and the benchmark on another.
#
#   scripts/bench-server.sh            (writes docs/results/server/: raw output, summary, plot)
#
# Settings (recorded in docs/results/server/settings.txt):
#   KEYS=10000000   keyspace of the MGET run, keys loaded for RSS/key, sorted-set members
#   SERVER_CPU=0 BENCH_CPU=1   cores for the server and for redis-benchmark / the loader
#   SWEEP_N=300000  requests per point of the pipeline-depth sweep
#   BENCH_N=2000000 requests per bar run (-n)
set -euo pipefail
cd "$(dirname "$0")/.."

KEYS=${KEYS:-10000000}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
SWEEP_N=${SWEEP_N:-300000}
OUT=docs/results/server
BENCH_N=${BENCH_N:-2000000}
BASE=(-c 50 -P 16 -n "$BENCH_N")

for tool in redis-server redis-benchmark redis-cli taskset python3; do
  command -v $tool >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
cargo build --release -q -p orrery-server
mkdir -p "$OUT"
rm -f "$OUT"/*.csv "$OUT"/*.txt
WORK=$(mktemp -d "${TMPDIR:-/tmp}/orrery-bench-server.XXXXXX")
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
B() { taskset -c "$BENCH_CPU" redis-benchmark -p "$PORT" --csv "$@"; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "redis-server: $(redis-server --version)"
  echo "redis-benchmark: $(redis-benchmark --version 2>/dev/null || true)"
  echo "KEYS=$KEYS BENCH_N=$BENCH_N SERVER_CPU=$SERVER_CPU BENCH_CPU=$BENCH_CPU SWEEP_N=$SWEEP_N"
  echo "base options: ${BASE[*]}"
} > "$OUT/settings.txt"

for server in redis orrery; do
  PORT=$(free_port)
  if [ $server = redis ]; then
    taskset -c "$SERVER_CPU" redis-server --port "$PORT" --bind 127.0.0.1 --save '' \
      --appendonly no --dir "$WORK" >"$WORK/$server.log" 2>&1 &
  else
    taskset -c "$SERVER_CPU" target/release/orrery-server --port "$PORT" --index wormhole \
      --appendonly no >"$WORK/$server.log" 2>&1 &
  fi
  PID=$!
  for _ in $(seq 600); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "== $server (pid $PID, port $PORT)"
  sleep 1
  rss0=$(rss_kib "$PID")
  python3 scripts/server_bench_load.py strings "$KEYS" \
    | taskset -c "$BENCH_CPU" redis-cli -p "$PORT" --pipe > "$OUT/$server-load-strings.txt"
  rss1=$(rss_kib "$PID")
  dbsize=$(redis-cli -p "$PORT" dbsize)
  echo "rss_kib_before=$rss0 rss_kib_after=$rss1 keys=$dbsize" > "$OUT/$server-rss.txt"
  cat "$OUT/$server-rss.txt"
  B "${BASE[@]}" -r 1000000 -d 16 -t set > "$OUT/$server-set.csv"
  B "${BASE[@]}" -r 1000000 -d 16 -t get > "$OUT/$server-get.csv"
  B "${BASE[@]}" -r "$KEYS" MGET $(for _ in $(seq 16); do printf 'key:__rand_int__ '; done) \
    > "$OUT/$server-mget.csv"
  python3 scripts/server_bench_load.py zset "$KEYS" \
    | taskset -c "$BENCH_CPU" redis-cli -p "$PORT" --pipe > "$OUT/$server-load-zset.txt"
  echo "zcard=$(redis-cli -p "$PORT" zcard zs)" >> "$OUT/$server-rss.txt"
  # ZRANGEBYLEX while every score is 0, then ZADD as redis-benchmark's own zadd test does
  # with -r (a random score for a random member: real updates of the score order).
  B "${BASE[@]}" -r "$KEYS" ZRANGEBYLEX zs '[m:__rand_int__' + LIMIT 0 10 \
    > "$OUT/$server-zrangebylex.csv"
  B "${BASE[@]}" -r "$KEYS" ZADD zs __rand_int__ 'm:__rand_int__' > "$OUT/$server-zadd.csv"
  for p in 1 4 16 64; do
    B -c 50 -P "$p" -n "$SWEEP_N" -r 1000000 -d 16 -t set,get > "$OUT/$server-sweep-P$p.csv"
  done
  grep -h -v '^"test"' "$OUT/$server"-*.csv | cut -d, -f1,2,7 | sed "s/^/$server: /"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/settings.txt"
python3 scripts/server_bench_report.py "$OUT"
