#!/usr/bin/env bash
# Large string values (issue 34): does storing values over 1 MiB out of line slow small
# values, and how do large values compare with redis-server?
#
#   OLD=path/to/orrery-server-before NEW=path/to/orrery-server-after scripts/bench-server-large.sh
#
# Part 1: `redis-benchmark -t get,set -d 100 -P 16 -c 50 -n $N -r 1000000` against OLD and
# NEW, alternating, $ROUNDS rounds, each server pinned to core $SERVER_CPU, the benchmark
# on $BENCH_CPU. Part 2: `-t set,get -d $BIG -n $BIG_N -c 4 -r 16` against NEW and
# redis-server, alternating. Prints CSV lines: round,server,test,rps.
set -euo pipefail
OLD=${OLD:?} NEW=${NEW:?}
N=${N:-2000000} ROUNDS=${ROUNDS:-3} BIG=${BIG:-4000000} BIG_N=${BIG_N:-400}
SERVER_CPU=${SERVER_CPU:-0} BENCH_CPU=${BENCH_CPU:-1}
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # name binary
  PORT=$(free_port)
  if [ "$1" = redis ]; then
    taskset -c "$SERVER_CPU" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
  else
    taskset -c "$SERVER_CPU" "$2" --port "$PORT" --appendonly no >/dev/null 2>&1 &
  fi
  PID=$!
  for _ in $(seq 600); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server $1 did not start" >&2; exit 1
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }
run() { # round name args...
  local round=$1 name=$2; shift 2
  taskset -c "$BENCH_CPU" redis-benchmark -p "$PORT" --csv "$@" | tail -n +2 | tr -d '"' |
    awk -F, -v r="$round" -v s="$name" '{print r "," s "," $1 "," $2}'
}
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for side in old new; do
    bin=$OLD; [ $side = new ] && bin=$NEW
    start orrery "$bin"
    run "$round" "$side" -t set,get -d 100 -P 16 -c 50 -n "$N" -r 1000000
    stop
  done
done
for round in $(seq "$ROUNDS"); do
  for side in redis new; do
    start $side "$NEW"
    run "$round" "$side-big" -t set,get -d "$BIG" -n "$BIG_N" -c 4 -r 16
    stop
  done
done
echo "# end $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
