#!/usr/bin/env bash
# Memory per list element: 1M elements of 3 and of 16 bytes RPUSHed onto one list (100 per
# command, redis-cli --pipe) into a fresh server; prints used_memory and RSS growth per element.
#
#   flock /work/helpers/bench.lock scripts/bench-server-list-memory.sh BIN|redis LABEL
set -e
BIN=$1; LABEL=$2
for w in 3 16; do
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [ "$BIN" = redis ]; then taskset -c 0 redis-server --port $PORT --save '' --appendonly no >/dev/null 2>&1 &
else taskset -c 0 $BIN --port $PORT --appendonly no >/dev/null 2>&1 & fi
PID=$!
for _ in $(seq 300); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
u0=$(redis-cli -p $PORT info memory | awk -F: '/^used_memory:/ {print $2+0}')
r0=$(awk '/^VmRSS/ {print $2}' /proc/$PID/status)
python3 -c "
import sys
w=$w
out=[]
for c in range(10000):
    args=[b'RPUSH', b'biglist'] + [(b'%0*d' % (w, (c*100+i) % (10**w if w<16 else 10**16))) for i in range(100)]
    out.append(b'*%d\r\n' % len(args) + b''.join(b'\$%d\r\n%s\r\n' % (len(a), a) for a in args))
sys.stdout.buffer.write(b''.join(out))
" | redis-cli -p $PORT --pipe >/dev/null
n=$(redis-cli -p $PORT llen biglist)
u1=$(redis-cli -p $PORT info memory | awk -F: '/^used_memory:/ {print $2+0}')
r1=$(awk '/^VmRSS/ {print $2}' /proc/$PID/status)
echo "$LABEL,width=$w,elements=$n,used_memory_per_elem=$(python3 -c "print(round(($u1-$u0)/$n,2))"),rss_per_elem=$(python3 -c "print(round(($r1-$r0)*1024/$n,2))")"
kill $PID; wait $PID 2>/dev/null || true
done
