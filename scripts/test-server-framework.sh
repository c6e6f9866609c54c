#!/usr/bin/env bash
# Real application frameworks end to end on orrery-server, in a virtual environment under
# target/ with pinned versions from PyPI:
# - Celery with the Redis broker (kombu's Redis transport) and the Redis result backend, two
#   rounds: persistence off with a solo worker, then the append-only file on with a prefork
#   worker of 2 processes (and the server restarted on it: every stored result must come
#   back). 1,000 tasks: plain, chains, a chord, countdown and
#   ETA, retries (scripts/framework_celery.py).
# - Python's rq with its scheduler: 1,000 jobs: plain, dependencies, enqueue_in, retries
#   with an interval (scripts/framework_rq.py).
# Per round: start orrery-server on a free loopback port, start a worker, enqueue, check
# every result, stop the worker (warm shutdown, exit status 0, no error in its log), stop
# the server.
#
#   scripts/test-server-framework.sh [path/to/orrery-server]   (default: target/debug, built if absent)
#
# .ci/run calls it after the cargo tests. Versions: docs/server.md ("Tested clients and
# frameworks"). Why kombu's ack emulation is off: scripts/framework_celery.py.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ beside the scripts
cd "$(dirname "$0")/.."

BIN=${1:-target/debug/orrery-server}
if [ ! -x "$BIN" ]; then cargo build -q -p orrery-server; BIN=target/debug/orrery-server; fi
BIN=$(realpath "$BIN")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/orrery-framework.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Newer versions need commands orrery-server lacks (docs/server.md, "Tested clients and
# frameworks"); click 8.1 because rq 1.11's command line warns under click 8.2.
PINS=('celery[redis]==5.6.3' 'kombu==5.6.2' 'rq==1.11.1' 'redis==6.4.0' 'click==8.1.8')
VENV=target/framework-venv
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
if ! "$VENV/bin/python" -c 'import sys
from importlib.metadata import version
pins = [p.replace("[redis]", "").split("==") for p in sys.argv[1:]]
sys.exit(0 if all(version(n) == v for n, v in pins) else 1)' "${PINS[@]}" 2>/dev/null; then
  "$VENV/bin/pip" install -q "${PINS[@]}"
fi
PY="$PWD/$VENV/bin/python"   # not resolved: the symlink is what selects the venv

# wait_for FILE PATTERN WHAT PID: waits up to 60 s for PATTERN in FILE while PID lives.
wait_for() {
  for _ in $(seq 600); do
    grep -qs "$2" "$1" && return 0
    kill -0 "$4" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: $3 did not start:" >&2; cat "$1" >&2; exit 1
}

# start_server NAME ARGS... : starts orrery-server on a free port; sets PORT and SERVER.
start_server() {
  local name=$1; shift
  # A restart reuses NAME's log: remove it first, or the wait below can read the previous
  # server's "ready" line before the new process's redirection truncates the file (a race
  # that left PORT empty in CI).
  rm -f "$WORK/$name.log"
  "$BIN" --port 0 --dir "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 &
  SERVER=$!; PIDS+=("$SERVER")
  wait_for "$WORK/$name.log" 'ready to accept connections on' "orrery-server $name" "$SERVER"
  PORT=$(sed -n 's/.*ready to accept connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/$name.log")
}

# stop PID WHAT: SIGTERM, then waits up to 60 s for a clean exit (status 0).
stop() {
  kill -TERM "$1"
  for _ in $(seq 600); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then echo "FAIL: $2 did not stop within 60 s" >&2; exit 1; fi
  local rc=0; wait "$1" || rc=$?
  if [ "$rc" != 0 ]; then echo "FAIL: $2 exited with status $rc" >&2; exit 1; fi
}

# celery_round NAME POOL SERVER-ARGS...: one round on a fresh server, the worker's pool
# POOL (`solo`, or `prefork` with 2 processes: tasks run and store their results from
# child processes, each with its own connections); leaves its results in $WORK/NAME.metas
# and the server stopped.
celery_round() {
  local name=$1 pool=$2; shift 2
  start_server "$name" "$@"
  local log="$WORK/$name-worker.log"
  (cd scripts && ORRERY_PORT=$PORT exec "$PY" -m celery -A framework_celery worker \
     --pool "$pool" --concurrency 2 --loglevel INFO --hostname "w1@$name" >"$log" 2>&1) &
  local worker=$!; PIDS+=("$worker")
  wait_for "$log" 'w1@'"$name"' ready' "the Celery worker" "$worker"
  (cd scripts && ORRERY_PORT=$PORT "$PY" framework_celery.py run 1000 90)
  stop "$worker" "the Celery worker"
  # Errors the worker logged without failing a task (a refused command in a timer, a lost
  # connection, a consumer restart) fail the round too.
  if grep -E 'ERROR/|CRITICAL/|WARNING/|Traceback' "$log"; then
    echo "FAIL: the Celery worker logged errors ($name): see above" >&2; exit 1
  fi
  (cd scripts && ORRERY_PORT=$PORT "$PY" framework_celery.py metas) >"$WORK/$name.metas"
  local n; n=$(wc -l <"$WORK/$name.metas")
  if [ "$n" != 1000 ]; then echo "FAIL: $n stored results, want 1000 ($name)" >&2; exit 1; fi
  stop "$SERVER" "orrery-server ($name)"
}

# rq_round NAME SERVER-ARGS...: rq on a fresh server (worker with its scheduler).
rq_round() {
  local name=$1; shift
  start_server "$name" "$@"
  local log="$WORK/$name-worker.log"
  (cd scripts && ORRERY_PORT=$PORT exec "$VENV_ABS/bin/rq" worker --with-scheduler \
     --url "redis://127.0.0.1:$PORT/0" --worker-class rq.worker.SimpleWorker default >"$log" 2>&1) &
  local worker=$!; PIDS+=("$worker")
  wait_for "$log" 'Listening on default' "the rq worker" "$worker"
  (cd scripts && ORRERY_PORT=$PORT "$PY" framework_rq.py run 1000 90)
  stop "$worker" "the rq worker"
  # Every traceback in the log is a flaky job's planned first failure; no other error.
  "$PY" - "$log" <<'EOF'
import re, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1]) if not l.startswith(" ")]
expected = "RuntimeError: first run fails (expected)"
tb = "Traceback (most recent call last):"
bad = [l for i, l in enumerate(lines)
       if (l.endswith(tb) and (i + 1 >= len(lines) or lines[i + 1] != expected))
       or (l != expected and not l.endswith(tb)
           and re.search(r"error|warn|critical|exception", l, re.I))]
if bad:
    sys.exit("FAIL: the rq worker logged errors:\n" + "\n".join(bad[:20]))
EOF
  stop "$SERVER" "orrery-server ($name)"
}

VENV_ABS="$PWD/$VENV"
VERSIONS=$("$PY" -c 'import celery, kombu, redis; print(f"celery {celery.__version__}, kombu {kombu.__version__}, redis-py {redis.__version__}")')
echo "== Celery ($VERSIONS), persistence off, solo pool"
celery_round celery-plain solo
echo "== Celery, append-only file on (then the server restarted on it), prefork pool"
celery_round celery-aof prefork --appendonly yes
start_server celery-aof --appendonly yes
(cd scripts && ORRERY_PORT=$PORT "$PY" framework_celery.py metas) >"$WORK/celery-aof.reloaded"
if ! cmp -s "$WORK/celery-aof.metas" "$WORK/celery-aof.reloaded"; then
  echo "FAIL: the stored results differ after a restart on the append-only file:" >&2
  diff "$WORK/celery-aof.metas" "$WORK/celery-aof.reloaded" | head -20 >&2; exit 1
fi
stop "$SERVER" "orrery-server (celery-aof, reloaded)"
echo "== rq $("$PY" -c 'import rq; print(rq.__version__)'), persistence off"
rq_round rq-plain
echo "== frameworks: Celery and rq passed"
