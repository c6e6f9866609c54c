#!/usr/bin/env python3
"""orrery-server's memcached port against the real memcached, side by side.

Both servers run pinned to core 0 (`taskset -c 0`), the load generator (memaslap, Debian's
`memcaslap` from libmemcached-tools) on core 1. Each round starts each server fresh, lets
memaslap load its key window (memaslap sets every key of its window before its mix), then
measures the server's own counters for MEASURE seconds: operations per second from `stats`
(cmd_get + cmd_set deltas) and the server process's CPU use from /proc (utime + stime), so
that a generator-bound run shows as a server below 100% CPU. Also reported: RSS per item
after the load. Rounds alternate the servers; the summary gives medians and spread.

ORRERY_BIN overrides the orrery-server binary (default target/release/orrery-server);
ORRERY_BASE_BIN, if set, adds a third server, "orrery-base", run from that binary in the
same rounds (an A/B of two builds beside memcached).

usage: scripts/bench_memcache.py --items N --key K --value V --get P [--division D]
                                 [--threads T] [--rounds R] [--measure S] [--warm S] --out FILE.jsonl
Run it under `flock /work/helpers/bench.lock` on a shared machine.
"""
import argparse, json, os, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINS = {"orrery": os.environ.get("ORRERY_BIN") or os.path.join(ROOT, "target/release/orrery-server")}
if os.environ.get("ORRERY_BASE_BIN"):
    BINS["orrery-base"] = os.environ["ORRERY_BASE_BIN"]
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def stats(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"stats\r\n")
    data = b""
    while not data.endswith(b"END\r\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    out = {}
    for line in data.decode().split("\r\n"):
        w = line.split(" ")
        if len(w) == 3 and w[0] == "STAT":
            out[w[1]] = w[2]
    return out


def cpu_seconds(pid):
    """The process's CPU time so far: (user, system) seconds."""
    with open(f"/proc/{pid}/stat") as f:
        w = f.read().rsplit(")", 1)[1].split()
    return int(w[11]) / TICK, int(w[12]) / TICK


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def start(server, port, threads, mb):
    if server == "memcached":
        cmd = ["taskset", "-c", "0", "memcached", "-p", str(port), "-l", "127.0.0.1", "-U", "0",
               "-t", str(threads), "-m", str(mb), "-c", "4096", "-u", "root"]
    else:
        cmd = ["taskset", "-c", "0", BINS[server], "--port", "0", "--memcache-port", str(port),
               "--threads", str(threads), "--memcache-memory", str(mb),
               "--memcache-max-conns", "4096"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while True:
        try:
            stats(port)
            return p
        except OSError:
            if time.time() > deadline:
                p.kill()
                raise SystemExit(f"{server} did not start")
            time.sleep(0.05)


def one(server, a, cfg):
    port = free_port()
    p = start(server, port, a.threads, a.mb)
    try:
        base_rss = rss_bytes(p.pid)
        conc = a.concurrency
        # memaslap takes its window in thousands of keys.
        window_k = max(1, a.items // conc // 1000)
        window = window_k * 1000
        gen = ["taskset", "-c", "1", "memcaslap", "-s", f"127.0.0.1:{port}", "-F", cfg,
               "-T", "1", "-c", str(conc), "-w", f"{window_k}k", "-t", f"{a.limit}s"]
        if a.division > 1:
            gen += ["-d", str(a.division)]
        g = subprocess.Popen(gen, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.time()
        loaded = conc * window
        # A mix with few sets fills memaslap's window slowly (it sets only what its mix
        # draws): with --warm the measurement starts after that many seconds instead.
        while int(stats(port).get("curr_items", 0)) < loaded * 0.999 and not (
                a.warm and time.time() - t0 >= a.warm):
            if g.poll() is not None or time.time() - t0 > a.limit:
                g.kill()
                raise SystemExit(f"{server}: the load did not finish ({stats(port).get('curr_items')} of {loaded})")
            time.sleep(0.2)
        load_s = time.time() - t0
        time.sleep(1.0)
        s1, c1, w1 = stats(port), cpu_seconds(p.pid), time.time()
        time.sleep(a.measure)
        s2, c2, w2 = stats(port), cpu_seconds(p.pid), time.time()
        rss = rss_bytes(p.pid)
        g.kill()
        g.wait()
        ops = lambda s: int(s["cmd_get"]) + int(s["cmd_set"])
        hits = int(s2["get_hits"]) - int(s1["get_hits"])
        gets = int(s2["cmd_get"]) - int(s1["cmd_get"])
        return {
            "server": server, "bin": BINS.get(server, "memcached"),
            "items": loaded, "key": a.key, "value": a.value, "get": a.get,
            "division": a.division, "threads": a.threads, "concurrency": conc,
            "ops_per_s": (ops(s2) - ops(s1)) / (w2 - w1),
            "cpu": (sum(c2) - sum(c1)) / (w2 - w1),
            "cpu_user": (c2[0] - c1[0]) / (w2 - w1), "cpu_sys": (c2[1] - c1[1]) / (w2 - w1),
            "load_s": load_s,
            "items_stored": int(s2["curr_items"]), "warm_s": a.warm,
            "rss_bytes": rss, "rss_per_item": rss / int(s2["curr_items"]),
            "rss_per_item_above_empty": (rss - base_rss) / int(s2["curr_items"]),
            "get_hit_ratio": hits / gets if gets else None,
        }
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, required=True)
    ap.add_argument("--key", type=int, required=True)
    ap.add_argument("--value", type=int, required=True)
    ap.add_argument("--get", type=float, required=True, help="proportion of gets")
    ap.add_argument("--division", type=int, default=1, help="keys per multi-get")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--measure", type=float, default=10)
    ap.add_argument("--limit", type=int, default=600)
    ap.add_argument("--mb", type=int, default=8192)
    ap.add_argument("--warm", type=float, default=0, help="seconds of mix before measuring, if the window is not full by then")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cfg = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
    cfg.write(f"key\n{a.key} {a.key} 1\nvalue\n{a.value} {a.value} 1\ncmd\n0 {1 - a.get:.2f}\n1 {a.get:.2f}\n")
    cfg.close()
    rows = []
    for r in range(a.rounds):
        servers = ["memcached"] + list(BINS)
        # Rotated each round, so that no server always runs first.
        order = servers[r % len(servers):] + servers[:r % len(servers)]
        for server in order:
            row = one(server, a, cfg.name)
            row["round"] = r
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    base = statistics.median(x["ops_per_s"] for x in rows if x["server"] == "memcached")
    for server in ["memcached"] + list(BINS):
        mine = [x for x in rows if x["server"] == server]
        ops = [x["ops_per_s"] for x in mine]
        # Server CPU time per operation, in microseconds (the CPU use over the ops rate).
        us = [x["cpu"] / x["ops_per_s"] * 1e6 for x in mine]
        user = [x["cpu_user"] / x["ops_per_s"] * 1e6 for x in mine]
        print(f"{server:11} ops/s median {statistics.median(ops):10.0f} (min {min(ops):.0f}, max {max(ops):.0f})"
              f"  {statistics.median(ops) / base:.2f}x memcached"
              f"  cpu median {statistics.median(x['cpu'] for x in mine):.2f}"
              f"  {statistics.median(us):.2f} us/op ({statistics.median(user):.2f} in user space)"
              f"  rss/item {statistics.median(x['rss_per_item'] for x in mine):.1f}")


if __name__ == "__main__":
    main()
