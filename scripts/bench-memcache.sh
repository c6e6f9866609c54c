#!/usr/bin/env bash
# Every "Against memcached" figure of docs/results/mercury.md in one run (see
# scripts/bench_memcache.py and scripts/memcache_zipf_hits.py for what each measures).
# Run under `flock /work/helpers/bench.lock` on a shared machine.
#
#   scripts/bench-memcache.sh OUTDIR [ITEMS] [ZIPF_KEYS]  (default 200000 items, 200000 keys)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?OUTDIR}
ITEMS=${2:-200000}
ZKEYS=${3:-200000}
mkdir -p "$OUT"
cargo build --release -q -p orrery-server
B="python3 scripts/bench_memcache.py --items $ITEMS --rounds 3 --measure 5"
ONLY=${ONLY:-all}   # all, or "rest": the parts after the Fig 5 100% GET
if [ "$ONLY" = all ]; then
echo "== Fig 4 set-up: GET, 16-byte keys (memaslap's shortest), 8-byte values"
$B --key 16 --value 8 --get 1.0 --out "$OUT/fig4-get.jsonl"
$B --key 16 --value 8 --get 1.0 --division 16 --out "$OUT/fig4-mget16.jsonl"
# A deeper multi-get window, to move the bottleneck from the generator to the servers.
$B --key 16 --value 8 --get 1.0 --division 64 --out "$OUT/fig4-mget64.jsonl"
echo "== Fig 5 mixes: 24-byte keys, 10-byte values (memaslap's keys are uniform, not Zipf)"
$B --key 24 --value 10 --get 1.0 --out "$OUT/fig5-get1.0.jsonl"
fi
# memaslap sets only what its mix draws: the mixes with writes are measured after 30 s.
for g in 0.95 0.5; do
  $B --key 24 --value 10 --get "$g" --warm 30 --out "$OUT/fig5-get$g.jsonl"
done
echo "== two worker threads each (both on core 0)"
$B --key 16 --value 8 --get 1.0 --division 16 --threads 2 --out "$OUT/fig4-mget16-t2.jsonl"
$B --key 16 --value 8 --get 1.0 --division 64 --threads 2 --out "$OUT/fig4-mget64-t2.jsonl"
# The limit is a tenth of the data (keys of 24 bytes and values of 100: 124 bytes a key).
ZMB=$(( ZKEYS * 124 / 10 / 1048576 ))
[ "$ZMB" -ge 1 ] || ZMB=1
echo "== hit ratio: Zipf 0.99 over $ZKEYS keys of 24 bytes, 100-byte values, limit $ZMB MiB (~1/10 of the data)"
VENV=target/memcache-venv
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
"$VENV/bin/python" -c 'import pymemcache' 2>/dev/null || "$VENV/bin/pip" install -q 'pymemcache>=4,<5'
"$VENV/bin/python" scripts/memcache_zipf_hits.py --keys "$ZKEYS" --requests $(( ZKEYS * 4 )) --value 100 \
  --mb "$ZMB" --rounds 3 --out "$OUT/zipf-hits.jsonl"
