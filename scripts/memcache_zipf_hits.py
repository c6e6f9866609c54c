#!/usr/bin/env python3
"""Hit ratio of orrery-server's memcached port and of memcached under a memory limit, with a
Zipf-distributed key trace replayed through pymemcache (no packaged memcached load generator
draws Zipf keys: memaslap's are uniform). The generator is this small client; the caches are
the servers'. Cache-aside: every request is a get, and each miss is followed by a set of the
key, as an application in front of a database does. Requests go in batches (one multi-get,
then the misses' sets with noreply), the same trace for both servers, fresh servers, pinned
to core 0 with the replay on core 1; the first third of the trace warms the cache and is not
counted.

usage: scripts/memcache_zipf_hits.py --keys N --requests M --value V --mb MiB [--theta 0.99]
       [--rounds R] --out FILE.jsonl      (needs pymemcache: target/memcache-venv)
"""
import argparse, bisect, json, os, random, socket, statistics, subprocess, time

from pymemcache.client.base import Client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ORRERY_BIN: another orrery-server build (an A/B of two builds).
BIN = os.environ.get("ORRERY_BIN") or os.path.join(ROOT, "target/release/orrery-server")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(server, port, mb):
    if server == "memcached":
        cmd = ["taskset", "-c", "0", "memcached", "-p", str(port), "-l", "127.0.0.1", "-U", "0",
               "-t", "1", "-m", str(mb), "-u", "root"]
    else:
        cmd = ["taskset", "-c", "0", BIN, "--port", "0", "--memcache-port", str(port),
               "--threads", "1", "--memcache-memory", str(mb)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            if time.time() > deadline:
                raise SystemExit(f"{server} did not start")
            time.sleep(0.05)


def trace(keys, requests, theta, seed):
    cdf, total = [], 0.0
    for r in range(1, keys + 1):
        total += 1.0 / r ** theta
        cdf.append(total)
    rng = random.Random(seed)
    # Rank r's key: a scramble of r, so that hot keys are spread over the hash space.
    return [bisect.bisect_left(cdf, rng.random() * total) for _ in range(requests)]


def key(rank):
    return "%024d" % ((rank * 2654435761) % (1 << 61))


def replay(server, ranks, value, mb, batch):
    port = free_port()
    p = start(server, port, mb)
    try:
        c = Client(("127.0.0.1", port), connect_timeout=10, timeout=30, no_delay=True)
        warm = len(ranks) // 3
        hits = total = 0
        for at in range(0, len(ranks), batch):
            ks = [key(r) for r in ranks[at:at + batch]]
            got = c.get_many(ks)
            misses = {k: value for k in ks if k not in got}
            if at >= warm:
                total += len(ks)
                hits += sum(1 for k in ks if k in got)
            if misses:
                c.set_many(misses, noreply=True)
        st = c.stats()
        c.close()
        return {"server": server, "hit_ratio": hits / total, "requests": total,
                "curr_items": int(st[b"curr_items"]), "evictions": int(st[b"evictions"])}
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, required=True)
    ap.add_argument("--requests", type=int, required=True)
    ap.add_argument("--value", type=int, required=True)
    ap.add_argument("--mb", type=int, required=True)
    ap.add_argument("--theta", type=float, default=0.99)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    value = b"v" * a.value
    rows = []
    for r in range(a.rounds):
        ranks = trace(a.keys, a.requests, a.theta, seed=r)
        for server in (["memcached", "orrery"] if r % 2 == 0 else ["orrery", "memcached"]):
            row = replay(server, ranks, value, a.mb, a.batch)
            row.update(round=r, keys=a.keys, theta=a.theta, value=a.value, mb=a.mb)
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    for server in ["memcached", "orrery"]:
        hr = [x["hit_ratio"] for x in rows if x["server"] == server]
        print(f"{server:10} hit ratio median {statistics.median(hr):.4f} (min {min(hr):.4f}, max {max(hr):.4f})")


if __name__ == "__main__":
    main()
