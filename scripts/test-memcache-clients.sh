#!/usr/bin/env bash
# orrery-server's memcached protocol against real clients outside cargo: pymemcache (PyPI, in a
# virtual environment under target/) and the libmemcached-tools programs (memccp, memccat,
# memcrm, memcflush, memcstat; Debian libmemcached-tools). The server runs on free loopback
# ports and is stopped on exit.
#
#   scripts/test-memcache-clients.sh [path/to/orrery-server]   (default: target/debug, built if absent)
#
# .ci/run installs libmemcached-tools (need libmemcached-tools command -v memccp) and calls this
# after the cargo tests.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${1:-target/debug/orrery-server}
if [ ! -x "$BIN" ]; then cargo build -q -p orrery-server; BIN=target/debug/orrery-server; fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/orrery-memcache-clients.XXXXXX")
PID=
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

: >"$WORK/server.log"   # created before the wait reads it (the background job opens it later)
"$BIN" --port 0 --memcache-port 0 >>"$WORK/server.log" 2>&1 &
PID=$!
PORT=
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
  PORT=$(sed -n 's/.*memcached protocol .* on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/server.log")
  [ -n "$PORT" ] && grep -q "ready to accept" "$WORK/server.log" && break
  sleep 0.1
done
if [ -z "$PORT" ]; then echo "orrery-server did not start:" >&2; cat "$WORK/server.log" >&2; exit 1; fi
SERVERS="127.0.0.1:$PORT"

expect() {  # expect WANT CMD... : runs CMD and compares its output
  local want=$1; shift
  local got; got=$("$@")
  if [ "$got" != "$want" ]; then echo "FAIL: $* gave '$got', want '$want'" >&2; exit 1; fi
}

echo "== pymemcache"
VENV=target/memcache-venv
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
"$VENV/bin/python" -c 'import pymemcache' 2>/dev/null || "$VENV/bin/pip" install -q 'pymemcache>=4,<5'
"$VENV/bin/python" - "$PORT" <<'PY'
import sys
from pymemcache.client.base import Client
from pymemcache import serde

port = int(sys.argv[1])
c = Client(("127.0.0.1", port), serde=serde.pickle_serde, connect_timeout=10, timeout=10,
           default_noreply=False)
assert c.version().startswith(b"1.6"), c.version()
assert c.set("greeting", "hello") is True
assert c.get("greeting") == "hello"
assert c.set("obj", {"a": [1, 2, 3]}) is True          # pickled, with client flags
assert c.get("obj") == {"a": [1, 2, 3]}
assert c.add("greeting", "other") is False
assert c.replace("greeting", "hi") is True
assert c.append("greeting", "!") is True
assert c.prepend("greeting", "oh ") is True
assert c.get("greeting") == "oh hi!"
assert c.set("n", 10) is True
assert c.incr("n", 5) == 15
assert c.decr("n", 20) == 0
value, cas = c.gets("greeting")
assert c.cas("greeting", "changed", cas) is True
assert c.cas("greeting", "again", cas) is False        # stale CAS
assert c.get_many(["greeting", "n", "missing"]) == {"greeting": "changed", "n": 0}
assert c.set_many({"a": 1, "b": 2}) == []
assert c.delete_many(["a", "b"]) is True
assert c.touch("greeting", 100) is True
assert c.raw_command(b"gat 100 greeting").startswith(b"VALUE greeting")
assert c.delete("greeting") is True
assert c.get("greeting") is None
assert c.set("quiet", "x", noreply=True) is True
assert c.get("quiet") == "x"
big = "x" * (2 << 20)
try:
    c.set("big", big, noreply=False)
    raise SystemExit("an item over 1 MiB was stored")
except Exception as e:
    assert "too large" in str(e), e
stats = c.stats()
assert stats[b"curr_items"] >= 1 and b"get_hits" in stats, stats
assert c.flush_all() is True
assert c.get("quiet") is None
c.close()
print("pymemcache: all checks passed")
PY

echo "== libmemcached-tools"
if ! command -v memccp >/dev/null 2>&1; then
  echo "SKIPPED: libmemcached-tools is not installed (Debian package libmemcached-tools)"
  exit 0
fi
printf 'file body\n' > "$WORK/hello.txt"
memccp --servers="$SERVERS" "$WORK/hello.txt"
expect "file body" memccat --servers="$SERVERS" hello.txt
memcrm --servers="$SERVERS" hello.txt
if memccat --servers="$SERVERS" hello.txt >/dev/null 2>&1; then echo "FAIL: memcrm left the key" >&2; exit 1; fi
memccp --servers="$SERVERS" "$WORK/hello.txt"
memcflush --servers="$SERVERS"
if memccat --servers="$SERVERS" hello.txt >/dev/null 2>&1; then echo "FAIL: memcflush left the key" >&2; exit 1; fi
memcstat --servers="$SERVERS" | grep -q "curr_items" || { echo "FAIL: memcstat shows no curr_items" >&2; exit 1; }
echo "libmemcached-tools: all checks passed"
