#!/usr/bin/env bash
# Issue 34's eviction bar, side by side with redis-server in one run: a Zipf GET/SET load
# (cache-aside: a GET, and a SET of the key after a miss) over KEYS keys with maxmemory set
# to a tenth of the data and allkeys-lru, against a fresh redis-server and a fresh
# orrery-server per round, each pinned to core SERVER_CPU with persistence off, the load
# (orrery-bench resp-zipf) on core BENCH_CPU; ROUNDS rounds alternating which server goes
# first, each round its own seed (the same trace for both servers in a round).
#
#   flock /work/helpers/bench.lock scripts/bench-server-eviction.sh
#
# The limit: each server is first filled with every key once without a limit (resp-zipf
# --fill), its used_memory read, and its maxmemory set to a tenth of that (each server's
# own counting, so each holds about a tenth of the keys; the keys held at the end are
# reported). Per round and server: hit ratio and ops/s of the counted part (the warm-up
# share is not counted), the server's CPU time over the load (/proc: utime + stime),
# used_memory, evicted_keys and the keys held at the end. Output: $OUT/rounds.jsonl,
# $OUT/calibration.txt, $OUT/settings.txt, $OUT/summary.md.
#
# Settings: KEYS=10000000 REQUESTS=30000000 WARMUP=0.5 VALUE=100 THETA=0.99 CONNS=50
# PIPELINE=16 ROUNDS=3 SHARE=10 INDEX=wormhole SAMPLES=5 SERVER_CPU=0 BENCH_CPU=1
# OUT=docs/results/server/eviction
set -euo pipefail
cd "$(dirname "$0")/.."

KEYS=${KEYS:-10000000}
REQUESTS=${REQUESTS:-30000000}
WARMUP=${WARMUP:-0.5}
VALUE=${VALUE:-100}
THETA=${THETA:-0.99}
CONNS=${CONNS:-50}
PIPELINE=${PIPELINE:-16}
ROUNDS=${ROUNDS:-3}
SHARE=${SHARE:-10}
INDEX=${INDEX:-wormhole}
SAMPLES=${SAMPLES:-5}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
OUT=${OUT:-docs/results/server/eviction}

for tool in redis-server redis-cli taskset python3; do
  command -v $tool >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
cargo build --release -q -p orrery-server -p orrery-bench
BENCH=target/release/orrery-bench
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/orrery-bench-evict.XXXXXX")
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
info() { # field
  redis-cli -p "$PORT" info all | tr -d '\r' | awk -F: -v f="$1" '$1 == f {print $2}'
}

start() { # server maxmemory
  PORT=$(free_port)
  if [ "$1" = redis ]; then
    taskset -c "$SERVER_CPU" redis-server --port "$PORT" --bind 127.0.0.1 --save '' \
      --appendonly no --dir "$WORK" --maxmemory "$2" --maxmemory-policy allkeys-lru \
      --maxmemory-samples "$SAMPLES" >"$WORK/$1.log" 2>&1 &
  else
    taskset -c "$SERVER_CPU" target/release/orrery-server --port "$PORT" --index "$INDEX" \
      --appendonly no --dir "$WORK" --maxmemory "$2" --maxmemory-policy allkeys-lru \
      --maxmemory-samples "$SAMPLES" >"$WORK/$1.log" 2>&1 &
  fi
  PID=$!
  for _ in $(seq 600); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }
load() { # extra resp-zipf arguments
  taskset -c "$BENCH_CPU" "$BENCH" --no-huge-malloc resp-zipf --addr "127.0.0.1:$PORT" \
    --keys "$KEYS" --theta "$THETA" --value "$VALUE" --conns "$CONNS" \
    --pipeline "$PIPELINE" --threads 1 "$@"
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "redis-server: $(redis-server --version)"
  echo "KEYS=$KEYS REQUESTS=$REQUESTS WARMUP=$WARMUP VALUE=$VALUE THETA=$THETA CONNS=$CONNS"
  echo "PIPELINE=$PIPELINE ROUNDS=$ROUNDS SHARE=$SHARE INDEX=$INDEX SAMPLES=$SAMPLES"
  echo "SERVER_CPU=$SERVER_CPU BENCH_CPU=$BENCH_CPU"
} > "$OUT/settings.txt"

# The limit of each server: a SHAREth of its used_memory with every key stored once.
: > "$OUT/calibration.txt"
declare -A LIMIT
for server in redis orrery; do
  start "$server" 0
  empty=$(info used_memory)
  load --fill --requests 1 > "$WORK/fill.json"
  full=$(info used_memory)
  LIMIT[$server]=$((full / SHARE))
  echo "$server: used_memory empty $empty, with $KEYS keys $full ($(redis-cli -p "$PORT" dbsize) keys), maxmemory ${LIMIT[$server]}" \
    | tee -a "$OUT/calibration.txt"
  stop
done

: > "$OUT/rounds.jsonl"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="redis orrery"; else order="orrery redis"; fi
  for server in $order; do
    start "$server" "${LIMIT[$server]}"
    c0=$(cpu_ticks "$PID")
    load --requests "$REQUESTS" --warmup "$WARMUP" --seed "$round" > "$WORK/load.json"
    c1=$(cpu_ticks "$PID")
    python3 - "$WORK/load.json" "$server" "$round" "$(( (c1 - c0) * 1000 / TICK ))" \
      "$(info used_memory)" "$(info maxmemory)" "$(info evicted_keys)" \
      "$(redis-cli -p "$PORT" dbsize)" >> "$OUT/rounds.jsonl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r.update(server=sys.argv[2], round=int(sys.argv[3]), cpu_ms=int(sys.argv[4]),
         used_memory=int(sys.argv[5]), maxmemory=int(sys.argv[6]),
         evicted_keys=int(sys.argv[7]), keys_held=int(sys.argv[8]))
print(json.dumps(r))
PY
    tail -1 "$OUT/rounds.jsonl"
    stop
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/settings.txt"

python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import json, os, statistics, sys
rows = [json.loads(l) for l in open(os.path.join(sys.argv[1], "rounds.jsonl"))]
def col(server, f):
    return [r[f] for r in rows if r["server"] == server]
def cpu_us(r):
    return r["cpu_ms"] * 1000 / max(1, r["requests"])
print("| figure | redis-server | orrery-server | orrery / redis, median (per round) |")
print("|---|---:|---:|---|")
rounds = sorted({r["round"] for r in rows})
def pair(f, fmt, per=None):
    get = per or (lambda r: r[f])
    red = {r["round"]: get(r) for r in rows if r["server"] == "redis"}
    orr = {r["round"]: get(r) for r in rows if r["server"] == "orrery"}
    ratios = [orr[k] / red[k] for k in rounds if red.get(k)]
    mr, mo = statistics.median(red.values()), statistics.median(orr.values())
    spread = lambda v: f"{min(v):{fmt}}–{max(v):{fmt}}"
    return (f"{mr:{fmt}} ({spread(list(red.values()))})", f"{mo:{fmt}} ({spread(list(orr.values()))})",
            f"{statistics.median(ratios):.3f}× ({' '.join(f'{x:.3f}' for x in ratios)})")
for name, f, fmt, per in [
    ("hit ratio", "hit_ratio", ".4f", None),
    ("ops/s (GET + SET)", "ops_per_sec", ",.0f", None),
    ("server CPU µs per request (whole load)", None, ".3f", cpu_us),
    ("used_memory at the end", "used_memory", ",d", None),
    ("maxmemory", "maxmemory", ",d", None),
    ("keys held at the end", "keys_held", ",d", None),
    ("evicted_keys", "evicted_keys", ",d", None),
]:
    a, b, c = pair(f, fmt, per)
    print(f"| {name} | {a} | {b} | {c} |")
PY
