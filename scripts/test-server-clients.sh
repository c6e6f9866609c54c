#!/usr/bin/env bash
# orrery-server against real clients outside cargo: redis-py (in a virtual environment under
# target/), redis-cli (Debian redis-tools), and twemproxy (Debian nutcracker) sharding keys
# over two servers. Every server runs on a free loopback port and is stopped on exit.
#
#   scripts/test-server-clients.sh [path/to/orrery-server]   (default: target/debug, built if absent)
#
# .ci/run calls it after the cargo tests. nutcracker missing: that part is skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${1:-target/debug/orrery-server}
if [ ! -x "$BIN" ]; then cargo build -q -p orrery-server; BIN=target/debug/orrery-server; fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/orrery-clients.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_server NAME ARGS... : starts orrery-server on a free port; sets PORT.
start_server() {
  local name=$1; shift
  # Emptied (a restart must not read the previous server's "ready" line) and created here,
  # before the server starts: the background job opens it later, and the wait reads it now.
  : >"$WORK/$name.log"
  "$BIN" --port 0 --dir "$WORK/$name" "$@" >>"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  local deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ]; do
    PORT=$(sed -n 's/.*ready to accept connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/$name.log")
    [ -n "$PORT" ] && return 0
    sleep 0.1
  done
  echo "orrery-server $name did not start:" >&2; cat "$WORK/$name.log" >&2; exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

expect() {  # expect WANT CMD... : runs CMD and compares its output
  local want=$1; shift
  local got; got=$("$@")
  if [ "$got" != "$want" ]; then echo "FAIL: $* gave '$got', want '$want'" >&2; exit 1; fi
}

echo "== redis-py"
VENV=target/server-venv
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
"$VENV/bin/python" -c 'import redis' 2>/dev/null || "$VENV/bin/pip" install -q 'redis>=5,<9'
mkdir -p "$WORK/py"
start_server py --appendonly yes
"$VENV/bin/python" scripts/server_clients.py direct "$PORT"

echo "== redis-cli"
CLI=(redis-cli -p "$PORT")
expect OK "${CLI[@]}" set greeting hello
expect hello "${CLI[@]}" get greeting
expect PONG "${CLI[@]}" ping
expect 3 "${CLI[@]}" zadd board 1 a 2 b 3 c
expect "$(printf 'a\nb')" "${CLI[@]}" zrangebylex board - '[b'
expect "$(printf 'user:000\nuser:001')" bash -c "${CLI[*]} --scan --pattern 'user:00[01]' | sort"
expect "aof_enabled:1" bash -c "${CLI[*]} info persistence | tr -d '\r' | grep aof_enabled"
expect "hello" bash -c "printf 'GET greeting\r\n' | ${CLI[*]}"        # commands from stdin
expect "hello" "${CLI[@]}" -3 get greeting                              # RESP3
expect "Background append only file rewriting started" "${CLI[@]}" bgrewriteaof
expect "ERR unknown command 'nope', with args beginning with: 'x' " "${CLI[@]}" nope x
echo "redis-cli $(redis-cli --version | awk '{print $2}'): checks passed"

echo "== twemproxy (nutcracker)"
NUT=$(command -v nutcracker || ls /usr/sbin/nutcracker 2>/dev/null || true)
if [ -z "$NUT" ]; then
  echo "SKIPPED: nutcracker is not installed (Debian package nutcracker; .ci/run installs it)"
  exit 0
fi
start_server s1; P1=$PORT
start_server s2; P2=$PORT
PP=$(free_port)
cat >"$WORK/nutcracker.yml" <<EOF
orrery:
  listen: 127.0.0.1:$PP
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  timeout: 5000
  servers:
    - 127.0.0.1:$P1:1 s1
    - 127.0.0.1:$P2:1 s2
EOF
"$NUT" -t -c "$WORK/nutcracker.yml" >/dev/null
"$NUT" -c "$WORK/nutcracker.yml" -s "$(free_port)" -o "$WORK/nutcracker.log" &
PIDS+=($!)
deadline=$((SECONDS + 60))
until redis-cli -p "$PP" ping >/dev/null 2>&1; do
  [ "$SECONDS" -lt "$deadline" ] || { echo "nutcracker did not answer in 60 s:" >&2; cat "$WORK/nutcracker.log" >&2; exit 1; }
  sleep 0.1
done
"$VENV/bin/python" scripts/server_clients.py proxy "$PP" "$P1" "$P2"
echo "== server clients: all checks passed"
