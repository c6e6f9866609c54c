"""RSS per item after a bulk load: orrery-server's memcached port against memcached.

Each server is started alone (pinned to core 0, one worker thread, a memory limit large
enough that nothing is evicted), its RSS read when empty, then ITEMS items are stored
with a pipelined stream of `set KEY 0 0 V noreply` (the same stream for both servers:
keys are the decimal item number, zero-padded to KEY bytes; values are V bytes), ended by
a `version` round trip; RSS is read again, and (RSS after - RSS empty) / ITEMS printed
with `curr_items` as a check. memaslap refuses keys under 16 bytes, hence this loader.

    python3 scripts/memcache_fill.py --items 24000000 --key 24 --value 10 [--server both]
"""
import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_memcache import free_port, rss_bytes, start, stats  # noqa: E402

CHUNK = 50_000


def load(port, items, klen, vlen):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    value = b"v" * vlen
    head = b" 0 0 %d noreply\r\n" % vlen
    kfmt = "%0" + str(klen) + "d"
    if len(kfmt % (items - 1)) > klen:
        raise SystemExit("keys too short for that many items")
    for lo in range(0, items, CHUNK):
        hi = min(items, lo + CHUNK)
        parts = [b"set " + (kfmt % i).encode() + head + value + b"\r\n" for i in range(lo, hi)]
        s.sendall(b"".join(parts))
    s.sendall(b"version\r\n")
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("connection closed during the load")
        data += chunk
    s.close()
    return data.decode().strip()


def one(server, a):
    port = free_port()
    p = start(server, port, 1, a.mb)
    try:
        time.sleep(1)
        empty = rss_bytes(p.pid)
        t0 = time.time()
        ver = load(port, a.items, a.key, a.value)
        secs = time.time() - t0
        time.sleep(2)
        full = rss_bytes(p.pid)
        st = stats(port)
        rec = {
            "server": server, "items": a.items, "key": a.key, "value": a.value,
            "curr_items": int(st.get("curr_items", 0)), "evictions": int(st.get("evictions", 0)),
            "rss_empty": empty, "rss_full": full,
            "rss_per_item": round((full - empty) / a.items, 2),
            "load_secs": round(secs, 1), "version": ver,
        }
        print(json.dumps(rec), flush=True)
        return rec
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=24_000_000)
    ap.add_argument("--key", type=int, default=24)
    ap.add_argument("--value", type=int, default=10)
    ap.add_argument("--mb", type=int, default=8192)
    ap.add_argument("--server", default="both", choices=["both", "memcached", "orrery"])
    ap.add_argument("--out")
    a = ap.parse_args()
    servers = ["memcached", "orrery"] if a.server == "both" else [a.server]
    recs = [one(s, a) for s in servers]
    if a.out:
        with open(a.out, "a") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
