"""orrery against dict and sortedcontainers.SortedDict, side by side in one run.

    python crates/python/bench/bench.py --n 10000000 --rounds 3 --json out.jsonl --plot out.png

Run it from a virtual environment holding the orrery wheel (a release build:
`pip install ./crates/python`), sortedcontainers, and matplotlib for --plot.

N random 16-byte keys (bytes, from a seeded generator) with 8-byte values.

Memory: every structure alone in a process of its own (once: it is not a throughput
figure). The process builds the empty map, takes its RSS, inserts the N pairs one at a time
(`m[k] = v`; keys and values are made a chunk at a time and freed), and reports the RSS
growth (and the insert rate, alone).

Throughput, side by side: two groups of structures, each loaded together in one process
from the same key stream, a chunk of 100,000 keys into each in turn (the order alternating
per chunk), one pair at a time; then every figure is measured in three alternating
repetitions:

- "ordered" (SortedDict, Wormhole, Hyperion): inserts one at a time; ranges of
  100 keys from random starts collected to a list (`list(islice(m.irange(k), 100))`;
  orrery also `m.items(k, None, limit=100)`);
- "lookup" (dict, Mercury, CuckooTrie): inserts; 1,000 present keys per batch, as fresh
  objects equal to stored keys (as read from a file or a socket: hash not cached) --
  orrery `get_many(keys)` and `[m[k] for k in keys]`, dict `[d[k] for k in keys]`, and
  dict also with its own stored key objects (its best case: cached hash, identity);
  orrery `get_many` from two threads at once against one thread.

Diagnosis ("scaling", at min(N, 2,000,000) keys): two processes, each with a map of its
own, against one (no GIL between them), and a pure-Python loop in two processes against
one (the cores the machine gives right now), beside two threads against one in one
process; so that a missed thread-scaling bar shows whether the GIL or the machine holds
it back.

Rounds (--rounds, each a fresh process per group) alternate the order of the groups and of
the structures. The summary gives medians over rounds with their spread and the ratios of
the bars of issue 36 (per round, both sides from the same process).
"""

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from itertools import islice

KEY_LEN = 16
VALUE_LEN = 8
SEED = 36
SAMPLE = 200_000  # present keys kept for queries
CHUNK = 100_000  # keys made per chunk of the insert loop
GET_BATCH = 1000
RANGE_LEN = 100

STRUCTURES = ["dict", "SortedDict", "Wormhole", "CuckooTrie", "Hyperion", "Mercury"]
# Side-by-side groups: loaded together in one process, measured alternating.
GROUPS = {
    "ordered": ["SortedDict", "Wormhole", "Hyperion"],
    "lookup": ["dict", "Mercury", "CuckooTrie"],
}
ORDERED = {"SortedDict", "Wormhole", "CuckooTrie", "Hyperion"}
ORRERY = {"Wormhole", "CuckooTrie", "Hyperion", "Mercury"}


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def key_chunks(n):
    """The key stream: chunks of distinct-with-high-probability random 16-byte keys."""
    rng = random.Random(SEED)
    done = 0
    while done < n:
        c = min(CHUNK, n - done)
        blob = rng.randbytes(KEY_LEN * c)
        yield [blob[i * KEY_LEN:(i + 1) * KEY_LEN] for i in range(c)]
        done += c


def value_of(k):
    return k[:VALUE_LEN]


def new_map(name):
    if name == "dict":
        return {}
    if name == "SortedDict":
        from sortedcontainers import SortedDict

        return SortedDict()
    import orrery

    return getattr(orrery, name)()


def sample_keys(n):
    """SAMPLE present keys (positions drawn uniformly), as their own bytes objects."""
    rng = random.Random(SEED + 1)
    want = sorted(rng.sample(range(n), min(SAMPLE, n)))
    out, i, pos = [], 0, 0
    for chunk in key_chunks(n):
        while i < len(want) and want[i] < pos + len(chunk):
            out.append(bytes(bytearray(chunk[want[i] - pos])))
            i += 1
        pos += len(chunk)
    random.Random(SEED + 2).shuffle(out)
    return out


def fresh(keys):
    """Copies of `keys` as new objects (equal bytes, no cached hash)."""
    return [bytes(bytearray(k)) for k in keys]


def memory_child(name, n):
    """One structure alone in this process: RSS growth over N one-at-a-time inserts."""
    rec = {"part": "memory", "structure": name, "n": n, "pid": os.getpid()}
    m = new_map(name)
    gc.collect()
    base = rss_bytes()
    insert_s = 0.0
    for chunk in key_chunks(n):
        vals = [value_of(k) for k in chunk]
        t0 = time.perf_counter()
        for k, v in zip(chunk, vals):
            m[k] = v
        insert_s += time.perf_counter() - t0
        del chunk, vals
    gc.collect()
    rec["rss_growth"] = rss_bytes() - base
    rec["len"] = len(m)
    rec["insert_alone_per_s"] = n / insert_s
    if name in ORRERY:
        rec["memory_usage"] = m.memory_usage()
    return [rec]


def load_lockstep(names, n):
    """Builds every map of `names` from the same key stream, one chunk at a time into each
    in turn (the order alternating per chunk), inserting one pair at a time; the seconds
    each spent inserting."""
    maps = {s: new_map(s) for s in names}
    spent = dict.fromkeys(names, 0.0)
    for c, chunk in enumerate(key_chunks(n)):
        vals = [value_of(k) for k in chunk]
        for s in names if c % 2 == 0 else names[::-1]:
            m = maps[s]
            t0 = time.perf_counter()
            for k, v in zip(chunk, vals):
                m[k] = v
            spent[s] += time.perf_counter() - t0
        del chunk, vals
    return maps, spent


def group_child(group, n, seconds, flip):
    """The structures of `group` loaded side by side in this process; every throughput
    figure measured alternating between them (the order reversed when `flip`)."""
    names = GROUPS[group][::-1] if flip else GROUPS[group]
    sample = sample_keys(n)
    maps, spent = load_lockstep(names, n)
    recs = {s: {"part": group, "structure": s, "n": n, "pid": os.getpid(),
                "insert_per_s": n / spent[s]} for s in names}
    reps = 3

    def alternate(field, make_f, names_here, scale=1):
        vals = {s: [] for s in names_here}
        for r in range(reps):
            for s in names_here if r % 2 == 0 else names_here[::-1]:
                vals[s].append(scale * rate(seconds / reps, *make_f(maps[s])))
        for s in names_here:
            recs[s][field] = statistics.median(vals[s])

    if group == "ordered":
        rng = random.Random(SEED + 3)
        starts = [rng.randbytes(KEY_LEN) for _ in range(20_000)]
        alternate("range_per_s", lambda m: (starts, lambda k: list(islice(m.irange(k), RANGE_LEN))), names)
        orr = [s for s in names if s in ORRERY]
        alternate("range_items_per_s", lambda m: (starts, lambda k: m.items(k, None, limit=RANGE_LEN)), orr)
    else:
        batches = [fresh(sample[i:i + GET_BATCH]) for i in range(0, len(sample) - GET_BATCH + 1, GET_BATCH)]
        d = maps["dict"]
        index = {k: None for k in sample}
        stored = [k for k in d if k in index]  # the dict's own key objects of the sample
        random.Random(SEED + 4).shuffle(stored)  # not in insertion (= memory) order
        del index
        best = [stored[i:i + GET_BATCH] for i in range(0, len(stored) - GET_BATCH + 1, GET_BATCH)]
        orr = [s for s in names if s in ORRERY]
        for r in range(reps):
            # dict (fresh and stored keys) and every orrery get_many, alternating.
            order = ["dict"] + orr if r % 2 == 0 else orr[::-1] + ["dict"]
            for s in order:
                m = maps[s]
                if s == "dict":
                    recs[s].setdefault("get_fresh", []).append(GET_BATCH * rate(seconds / reps, batches, lambda ks: [d[k] for k in ks]))
                    recs[s].setdefault("get_stored", []).append(GET_BATCH * rate(seconds / reps, best, lambda ks: [d[k] for k in ks]))
                else:
                    recs[s].setdefault("get_many", []).append(GET_BATCH * rate(seconds / reps, batches, m.get_many))
                    recs[s].setdefault("get_loop", []).append(GET_BATCH * rate(seconds / reps, batches, lambda ks, m=m: [m[k] for k in ks]))
        for s, field, name in [("dict", "get_fresh", "get_fresh_keys_per_s"), ("dict", "get_stored", "get_stored_keys_per_s")] + \
                [(s, "get_many", "get_many_keys_per_s") for s in orr] + [(s, "get_loop", "get_loop_keys_per_s") for s in orr]:
            recs[s][name] = statistics.median(recs[s].pop(field))
        for s in orr:  # one thread / two threads, alternating
            one, two = [], []
            for r in range(reps):
                if r % 2 == 0:
                    one.append(threaded(maps[s], batches, 1, seconds / reps))
                    two.append(threaded(maps[s], batches, 2, seconds / reps))
                else:
                    two.append(threaded(maps[s], batches, 2, seconds / reps))
                    one.append(threaded(maps[s], batches, 1, seconds / reps))
            recs[s]["get_many_1t_keys_per_s"] = statistics.median(one)
            recs[s]["get_many_2t_keys_per_s"] = statistics.median(two)
            recs[s]["get_many_2t_over_1t_each"] = [b / a for a, b in zip(one, two)]
    return list(recs.values())


SCALING_N = 2_000_000  # keys per map in the scaling diagnosis (far beyond the caches)


def scaling_worker(name, n, seconds, reps, barrier, results, idx):
    """One process of the scaling diagnosis: its own map; solo and duo phases on cue."""
    import orrery

    rng = random.Random(SEED + 10)
    if name == "cpu":
        work = lambda: sum(i * i for i in range(1000))  # noqa: E731 - pure Python, no memory
        unit = 1
    else:
        keys = [rng.randbytes(KEY_LEN) for _ in range(n)]
        m = getattr(orrery, name)()
        m.set_many((k, value_of(k)) for k in keys)
        sample = rng.sample(keys, 100_000)
        batches = [fresh(sample[i:i + GET_BATCH]) for i in range(0, len(sample), GET_BATCH)]
        it = iter(range(10**12))
        work = lambda: m.get_many(batches[next(it) % len(batches)])  # noqa: E731
        unit = GET_BATCH
    for r in range(reps):
        for phase in ("solo", "duo") if r % 2 == 0 else ("duo", "solo"):
            barrier.wait()
            if phase == "duo" or idx == 0:
                done = 0
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < seconds:
                    work()
                    done += unit
                results.put((phase, r, idx, done / (time.perf_counter() - t0)))
            barrier.wait()


def scaling_child(n, seconds):
    """Why two threads do (not) double get_many: the same lookups from two processes (no
    GIL between them) and a pure-Python loop from two processes (the cores this machine
    gives right now), each against one process, alternating; and two threads against one
    in one process at the same size."""
    import multiprocessing as mp

    n = min(n, SCALING_N)
    recs = []
    reps = 3
    for name in ("cpu", "Mercury", "CuckooTrie"):
        barrier = mp.Barrier(2)
        results = mp.Queue()
        ps = [mp.Process(target=scaling_worker, args=(name, n, seconds / reps, reps, barrier, results, i)) for i in range(2)]
        for p in ps:
            p.start()
        got = [results.get() for _ in range(3 * reps)]
        for p in ps:
            p.join()
        solo = [x for ph, r, i, x in got if ph == "solo"]
        duo = {}
        for ph, r, i, x in got:
            if ph == "duo":
                duo[r] = duo.get(r, 0.0) + x
        ratios = [duo[r] / x for ph, r, i, x in got if ph == "solo"]
        rec = {"part": "scaling", "structure": name, "n": n, "pid": os.getpid(),
               "procs_1_per_s": statistics.median(solo), "procs_2_per_s": statistics.median(list(duo.values())),
               "procs_2_over_1_each": ratios}
        if name != "cpu":
            import orrery

            rng = random.Random(SEED + 10)
            keys = [rng.randbytes(KEY_LEN) for _ in range(n)]
            m = getattr(orrery, name)()
            m.set_many((k, value_of(k)) for k in keys)
            sample = rng.sample(keys, 100_000)
            batches = [fresh(sample[i:i + GET_BATCH]) for i in range(0, len(sample), GET_BATCH)]
            one, two = [], []
            for r in range(reps):
                for t in (1, 2) if r % 2 == 0 else (2, 1):
                    (one if t == 1 else two).append(threaded(m, batches, t, seconds / reps))
            rec["threads_2_over_1_each"] = [b / a for a, b in zip(one, two)]
            del m, keys
        recs.append(rec)
    return recs


def rate(seconds, inputs, f):
    """Calls per second of f over inputs (cycled) for about `seconds`."""
    calls, i, n = 0, 0, len(inputs)
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(100):
            f(inputs[i])
            i += 1
            if i == n:
                i = 0
        calls += 100
        t = time.perf_counter()
        if t >= deadline:
            return calls / (t - t0)


def threaded(m, batches, threads, seconds):
    """Keys per second of get_many batches from `threads` threads at once (wall time)."""
    barrier = threading.Barrier(threads + 1)
    counts = [0] * threads
    stop = threading.Event()

    def work(i):
        mine = batches[i::threads]
        barrier.wait()
        j = 0
        while not stop.is_set():
            m.get_many(mine[j % len(mine)])
            counts[i] += GET_BATCH
            j += 1

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def run_child(spec, n, seconds, flip=False):
    cmd = [sys.executable, __file__, "--child", spec, "--n", str(n), "--seconds", str(seconds)]
    if flip:
        cmd.append("--flip")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def index_records(recs):
    """{(part, structure): [records in round order]}; the memory part under "memory"."""
    by = {}
    for r in sorted(recs, key=lambda x: x.get("round", -1)):
        by.setdefault((r["part"], r["structure"]), []).append(r)
    return by


# Where each figure of a structure is measured.
def part_of(field, structure):
    if field in ("rss_growth", "insert_alone_per_s"):
        return "memory"
    if field == "insert_per_s":
        return "ordered" if structure in GROUPS["ordered"] else "lookup"
    if field.startswith("range"):
        return "ordered"
    return "lookup"


def values(by, structure, field):
    return [r[field] for r in by.get((part_of(field, structure), structure), []) if field in r]


def summarize(recs):
    by = index_records(recs)
    n = recs[0]["n"]
    fields = [
        ("rss_growth", "RSS growth, bytes/key", 1.0 / n),
        ("insert_alone_per_s", "inserts one at a time, alone, K/s", 1e-3),
        ("insert_per_s", "inserts one at a time, side by side, K/s", 1e-3),
        ("range_per_s", "irange 100 to list, K ranges/s", 1e-3),
        ("range_items_per_s", "items(k, limit=100), K ranges/s", 1e-3),
        ("get_fresh_keys_per_s", "[d[k] for k in keys], fresh keys, M keys/s", 1e-6),
        ("get_stored_keys_per_s", "[d[k] for k in keys], stored keys, M keys/s", 1e-6),
        ("get_many_keys_per_s", "get_many(1000 keys), M keys/s", 1e-6),
        ("get_loop_keys_per_s", "[m[k] for k in keys], M keys/s", 1e-6),
        ("get_many_1t_keys_per_s", "get_many, 1 thread, M keys/s", 1e-6),
        ("get_many_2t_keys_per_s", "get_many, 2 threads, M keys/s", 1e-6),
    ]
    lines = ["| measurement | " + " | ".join(STRUCTURES) + " |", "|---|" + "---:|" * len(STRUCTURES)]
    for field, label, scale in fields:
        cells = []
        for st in STRUCTURES:
            v = values(by, st, field)
            if not v:
                cells.append("")
            elif len(v) == 1:
                cells.append(f"{v[0] * scale:.3g}")
            else:
                cells.append(f"{statistics.median(v) * scale:.3g} ({min(v) * scale:.3g}–{max(v) * scale:.3g})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Medians over rounds (min–max in brackets). Bars (medians of per-round ratios):"]
    lines += ["- " + t for t in bars(by)]
    return "\n".join(lines)


def ratios(by, a, fa, b, fb):
    """Per-round ratios a.fa / b.fb, both sides from the same process."""
    xs, ys = values(by, a, fa), values(by, b, fb)
    return [x / y for x, y in zip(xs, ys)]


def bars(by):
    def show(label, rs, op, limit):
        if not rs:
            return f"{label}: not measured"
        m = statistics.median(rs)
        ok = m <= limit if op == "<=" else m >= limit
        spread = f" (rounds {min(rs):.3f}–{max(rs):.3f})" if len(rs) > 1 else ""
        return f"{label}: {m:.3f}×{spread}; bar {op} {limit}: {'met' if ok else 'MISSED'}"

    out = [
        show("Hyperion RSS / dict", ratios(by, "Hyperion", "rss_growth", "dict", "rss_growth"), "<=", 0.25),
        show("Hyperion RSS / SortedDict", ratios(by, "Hyperion", "rss_growth", "SortedDict", "rss_growth"), "<=", 0.15),
        show("Wormhole RSS / dict", ratios(by, "Wormhole", "rss_growth", "dict", "rss_growth"), "<=", 0.5),
        show("Wormhole inserts / SortedDict", ratios(by, "Wormhole", "insert_per_s", "SortedDict", "insert_per_s"), ">=", 1.0),
        show("Wormhole irange(100) / SortedDict.irange", ratios(by, "Wormhole", "range_per_s", "SortedDict", "range_per_s"), ">=", 1.0),
    ]
    for st in ("Mercury", "CuckooTrie"):
        out.append(show(f"{st} get_many / dict loop, fresh keys", ratios(by, st, "get_many_keys_per_s", "dict", "get_fresh_keys_per_s"), ">=", 1.0))
        out.append(show(f"{st} get_many / dict loop, stored keys", ratios(by, st, "get_many_keys_per_s", "dict", "get_stored_keys_per_s"), ">=", 1.0))
        each = [x for r in by.get(("lookup", st), []) for x in r.get("get_many_2t_over_1t_each", [])]
        out.append(show(f"{st} get_many 2 threads / 1 thread", each, ">=", 1.7))
    for st in ("cpu", "Mercury", "CuckooTrie"):
        recs = by.get(("scaling", st), [])
        procs = [x for r in recs for x in r["procs_2_over_1_each"]]
        threads = [x for r in recs for x in r.get("threads_2_over_1_each", [])]
        what = "a pure-Python loop" if st == "cpu" else f"{st} get_many ({recs[0]['n']:,} keys)" if recs else st
        if procs:
            line = f"diagnosis, {what}: 2 processes / 1 = {statistics.median(procs):.2f}× ({min(procs):.2f}–{max(procs):.2f})"
            if threads:
                line += f"; 2 threads / 1 = {statistics.median(threads):.2f}× ({min(threads):.2f}–{max(threads):.2f})"
            out.append(line)
    return out


COLORS = {"dict": "#7f7f7f", "SortedDict": "#c7c7c7", "Wormhole": "#1f77b4", "CuckooTrie": "#ff7f0e",
          "Hyperion": "#2ca02c", "Mercury": "#d62728"}


def plot(recs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = index_records(recs)
    n = recs[0]["n"]

    def med(st, f):
        v = values(by, st, f)
        return statistics.median(v) if v else 0.0

    fig, axes = plt.subplots(1, 4, figsize=(13, 3.3))
    panels = [
        ("RSS growth, bytes per key", [(s, med(s, "rss_growth") / n, None) for s in STRUCTURES]),
        ("inserts one at a time, K/s", [(s, med(s, "insert_per_s") / 1e3, None) for s in STRUCTURES]),
        ("irange(100) to a list, K/s", [(s, med(s, "range_per_s") / 1e3, None) for s in GROUPS["ordered"]]),
        ("1,000 lookups: M keys/s (hatched: 2 threads)",
         [("dict", med("dict", "get_fresh_keys_per_s") / 1e6, None)]
         + [(s, med(s, "get_many_1t_keys_per_s") / 1e6, med(s, "get_many_2t_keys_per_s") / 1e6) for s in ("Mercury", "CuckooTrie")]),
    ]
    for ax, (title, bars_) in zip(axes, panels):
        for i, (st, v, two) in enumerate(bars_):
            if two is None:
                ax.bar(i, v, 0.7, color=COLORS[st])
            else:
                ax.bar(i - 0.18, v, 0.36, color=COLORS[st])
                ax.bar(i + 0.18, two, 0.36, color=COLORS[st], alpha=0.55, hatch="//")
            ax.text(i, v, f"{v:.3g}", ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(bars_)))
        ax.set_xticklabels([b[0] for b in bars_], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(f"orrery vs dict / SortedDict: {n:,} random 16-byte keys, 8-byte values (medians of rounds)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=72)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="per throughput figure and structure, split over 3 alternating repetitions")
    ap.add_argument("--json", help="append one JSON record per structure and part")
    ap.add_argument("--plot", help="write a PNG plot of the medians")
    ap.add_argument("--parts", default="memory,ordered,lookup,scaling", help="which parts to run (comma-separated)")
    ap.add_argument("--from-json", help="no run: the summary (and --plot) of records written by --json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--flip", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.child.startswith("memory:"):
            out = memory_child(args.child.split(":", 1)[1], args.n)
        elif args.child == "scaling":
            out = scaling_child(args.n, args.seconds)
        else:
            out = group_child(args.child, args.n, args.seconds, args.flip)
        print(json.dumps(out), flush=True)
        return 0
    if args.from_json:
        with open(args.from_json) as f:
            recs = [json.loads(line) for line in f if line.strip()]
        print(summarize(recs))
        if args.plot:
            plot(recs, args.plot)
        return 0
    import platform

    import orrery

    print(f"# orrery {orrery.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"n={args.n:,}, rounds={args.rounds}, seconds={args.seconds}", flush=True)
    recs = []

    def record(out, rnd):
        for rec in out:
            rec["round"] = rnd
            recs.append(rec)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(rec) + "\n")

    # Memory: each structure alone in a process of its own (RSS is not a throughput figure:
    # one round).
    parts = args.parts.split(",")
    for st in STRUCTURES if "memory" in parts else []:
        t0 = time.time()
        record(run_child(f"memory:{st}", args.n, args.seconds), -1)
        print(f"memory {st}: {time.time() - t0:.0f} s", flush=True)
    # Throughput: side by side per group, rounds alternating the groups and the orders.
    for r in range(args.rounds):
        groups = [g for g in ("ordered", "lookup", "scaling") if g in parts]
        for g in groups if r % 2 == 0 else groups[::-1]:
            t0 = time.time()
            record(run_child(g, args.n, args.seconds, flip=r % 2 == 1), r)
            print(f"round {r} {g}: {time.time() - t0:.0f} s", flush=True)
    print()
    print(summarize(recs))
    if args.plot:
        plot(recs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
