#!/usr/bin/env bash
# The collection bars of issue 34, side by side with redis-server in one run:
#
#   1. throughput: redis-benchmark -c 50 -P 16 -r 1000000 -n N -t <each test>, against a
#      fresh redis-server and a fresh orrery-server (persistence off on both), each pinned
#      to one core with taskset and the benchmark on another, ROUNDS rounds alternating
#      which server goes first; each test is its own redis-benchmark run (in the order of
#      -t's list, so the keys carry over from one test to the next as in one run), and the
#      server's CPU time during each test is read from /proc (CPU microseconds per
#      request: a figure that other load on the machine disturbs less than requests/s);
#   2. memory: 1M hashes of 10 fields (16-byte names and values) and 1M sets of 10 16-byte
#      members loaded into each server (scripts/server_bench_load.py); RSS after the load
#      less RSS before, per field or member. The orrery side is run once per INDEXES entry.
#
#   flock /work/helpers/bench.lock scripts/bench-server-collections.sh
#
# Settings (recorded in $OUT/settings.txt): N=2000000 ROUNDS=3 SERVER_CPU=0 BENCH_CPU=1
# MEM_N=1000000 INDEXES="wormhole" OUT=docs/results/server/collections MODE=all|throughput|memory
# ORRERY_BIN (a prebuilt orrery-server: then nothing is built here, so the script can run
# under a lock without building inside it) BASE_BIN (a second orrery-server, "base", run
# in every throughput round beside the two: an A/B of a change) TESTS="lpush rpush …"
# (a subset) ROUND_FIRST=1 APPEND=0 (continue an earlier run's rounds and csv: rounds can
# then be run one lock at a time, the order still alternating)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-2000000}
ROUNDS=${ROUNDS:-3}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
MEM_N=${MEM_N:-1000000}
INDEXES=${INDEXES:-wormhole}
MODE=${MODE:-all}
OUT=${OUT:-docs/results/server/collections}
read -r -a TESTS <<< "${TESTS:-lpush rpush lpop rpop sadd hset spop zadd zpopmin lrange_100}"
ORRERY_BIN=${ORRERY_BIN:-}
BASE_BIN=${BASE_BIN:-}
ROUND_FIRST=${ROUND_FIRST:-1}
APPEND=${APPEND:-0}

for tool in redis-server redis-benchmark redis-cli taskset python3; do
  command -v $tool >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
if [ -z "$ORRERY_BIN" ]; then
  cargo build --release -q -p orrery-server
  ORRERY_BIN=target/release/orrery-server
fi
mkdir -p "$OUT"
[ "$APPEND" = 1 ] || : > "$OUT/settings.txt"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/orrery-bench-coll.XXXXXX")
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

start() { # server index
  PORT=$(free_port)
  if [ "$1" = redis ]; then
    taskset -c "$SERVER_CPU" redis-server --port "$PORT" --bind 127.0.0.1 --save '' \
      --appendonly no --dir "$WORK" >"$WORK/$1.log" 2>&1 &
  else
    bin=$ORRERY_BIN
    [ "$1" = base ] && bin=$BASE_BIN
    taskset -c "$SERVER_CPU" "$bin" --port "$PORT" --index "$2" \
      --appendonly no >"$WORK/$1.log" 2>&1 &
  fi
  PID=$!
  for _ in $(seq 600); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "redis-server: $(redis-server --version)"
  echo "N=$N ROUNDS=$ROUNDS SERVER_CPU=$SERVER_CPU BENCH_CPU=$BENCH_CPU MEM_N=$MEM_N INDEXES=$INDEXES"
  echo "ORRERY_BIN=$ORRERY_BIN BASE_BIN=$BASE_BIN TESTS=${TESTS[*]} ROUND_FIRST=$ROUND_FIRST"
  echo "options: -c 50 -P 16 -r 1000000 -n $N"
} >> "$OUT/settings.txt"

if [ "$MODE" != memory ]; then
  [ "$APPEND" = 1 ] || : > "$OUT/throughput.csv"
  servers="redis orrery${BASE_BIN:+ base}"
  for round in $(seq "$ROUND_FIRST" $((ROUND_FIRST + ROUNDS - 1))); do
    order=$servers
    [ $((round % 2)) = 1 ] || order=$(echo "$servers" | tr ' ' '\n' | tac | xargs)
    for server in $order; do
      start "$server" wormhole
      for t in "${TESTS[@]}"; do
        c0=$(cpu_ticks "$PID")
        line=$(taskset -c "$BENCH_CPU" redis-benchmark -p "$PORT" -c 50 -P 16 -r 1000000 \
          -n "$N" -t "$t" --csv | grep -v '^"test"' | tail -1)
        c1=$(cpu_ticks "$PID")
        rps=$(echo "$line" | cut -d, -f2 | tr -d '"')
        echo "$round,$server,$t,$rps,$(( (c1 - c0) * 1000 / TICK ))" | tee -a "$OUT/throughput.csv"
      done
      stop
    done
  done
fi

if [ "$MODE" != throughput ]; then
  : > "$OUT/memory.csv"
  for kind in hashes sets; do
    for server in redis $INDEXES; do
      if [ "$server" = redis ]; then start redis; else start orrery "$server"; fi
      sleep 1
      r0=$(rss_kib "$PID")
      python3 scripts/server_bench_load.py "$kind" "$MEM_N" \
        | taskset -c "$BENCH_CPU" redis-cli -p "$PORT" --pipe > "$WORK/load.txt"
      r1=$(rss_kib "$PID")
      keys=$(redis-cli -p "$PORT" dbsize)
      enc=$(redis-cli -p "$PORT" object encoding "${kind:0:1}:00000000000000")
      echo "$kind,$server,$r0,$r1,$keys,$enc" | tee -a "$OUT/memory.csv"
      stop
    done
  done
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/settings.txt"
python3 - "$OUT" <<'PY'
import csv, statistics, sys, os
out = sys.argv[1]
p = os.path.join(out, "throughput.csv")
lines = []
if os.path.exists(p) and os.path.getsize(p):
    rows = list(csv.reader(open(p)))
    tests = []
    for r in rows:
        if r[2] not in tests:
            tests.append(r[2])
    base = any(r[1] == "base" for r in rows)
    head = "| test | redis req/s (median) | orrery req/s (median) | orrery/redis | per round | redis CPU µs/req | orrery CPU µs/req |"
    rule = "|---|---:|---:|---:|---|---:|---:|"
    if base:
        head += " base req/s (median) | orrery/base | per round | base CPU µs/req |"
        rule += "---:|---:|---|---:|"
    lines.append(head)
    lines.append(rule)
    n = int(os.environ.get("N", "2000000"))
    for t in tests:
        def col(server, i):
            return [float(r[i]) for r in rows if r[1] == server and r[2] == t]
        rr, oo = col("redis", 3), col("orrery", 3)
        rc, oc = col("redis", 4), col("orrery", 4)
        rounds = " ".join(f"{o / r:.2f}" for r, o in zip(rr, oo))
        line = (f"| {t} | {statistics.median(rr):,.0f} | {statistics.median(oo):,.0f} | "
                f"{statistics.median(oo) / statistics.median(rr):.2f}x | {rounds} | "
                f"{statistics.median(rc) * 1000 / n:.2f} | {statistics.median(oc) * 1000 / n:.2f} |")
        if base:
            bb, bc = col("base", 3), col("base", 4)
            brounds = " ".join(f"{o / b:.2f}" for b, o in zip(bb, oo))
            line += (f" {statistics.median(bb):,.0f} | {statistics.median(oo) / statistics.median(bb):.2f}x | "
                     f"{brounds} | {statistics.median(bc) * 1000 / n:.2f} |")
        lines.append(line)
p = os.path.join(out, "memory.csv")
if os.path.exists(p) and os.path.getsize(p):
    rows = list(csv.reader(open(p)))
    lines.append("")
    lines.append("| load | server | RSS MB after | keys | encoding | RSS bytes per field/member | vs redis |")
    lines.append("|---|---|---:|---:|---|---:|---:|")
    base = {}
    for kind, server, r0, r1, keys, enc in rows:
        per = (int(r1) - int(r0)) * 1024 / (int(keys) * 10)
        if server == "redis":
            base[kind] = per
        ratio = f"{per / base[kind]:.2f}x" if kind in base else ""
        lines.append(f"| {kind} | {server} | {int(r1) / 1024:,.0f} | {keys} | {enc} | {per:.1f} | {ratio} |")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "summary.md"), "w").write(text)
print(text)
PY
