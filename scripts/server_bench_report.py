"""Summarises the raw output of scripts/bench-server.sh: OUT/summary.md (the bars of issue 23,
orrery-server / redis-server in one run) and OUT/pipeline.svg (throughput against pipeline
depth for both servers). Usage: server_bench_report.py OUT"""

import csv
import os
import sys

OUT = sys.argv[1]


def row(server, name):
    """The (rps, p99 ms) of the first result in OUT/server-name.csv."""
    with open(os.path.join(OUT, f"{server}-{name}.csv")) as f:
        r = list(csv.DictReader(f))
    return float(r[0]["rps"]), float(r[0]["p99_latency_ms"])


def sweep(server, depth):
    with open(os.path.join(OUT, f"{server}-sweep-P{depth}.csv")) as f:
        return {r["test"]: float(r["rps"]) for r in csv.DictReader(f)}


def rss(server):
    with open(os.path.join(OUT, f"{server}-rss.txt")) as f:
        kv = dict(p.split("=") for p in f.read().split())
    return (int(kv["rss_kib_after"]) - int(kv["rss_kib_before"])) * 1024 / int(kv["keys"])


def main():
    lines = [
        "| bar | redis-server | orrery-server | orrery / redis | target | met |",
        "|---|---:|---:|---:|---|---|",
    ]
    for name, label, target in [
        ("set", "SET 16 B, ops/s", 1.0),
        ("get", "GET 16 B, ops/s", 1.0),
        ("mget", "MGET 16 keys, ops/s", 1.5),
        ("zadd", "ZADD one 10M set, ops/s", 1.2),
        ("zrangebylex", "ZRANGEBYLEX LIMIT 0 10, ops/s", 1.2),
    ]:
        r, o = row("redis", name)[0], row("orrery", name)[0]
        ratio = o / r
        lines.append(f"| {label} | {r:,.0f} | {o:,.0f} | {ratio:.2f}x | >= {target}x | "
                     f"{'yes' if ratio >= target else 'no'} |")
    r, o = row("redis", "get")[1], row("orrery", "get")[1]
    lines.append(f"| GET p99 latency, ms | {r:.3f} | {o:.3f} | {o / r:.2f}x | <= 1.0x | "
                 f"{'yes' if o <= r else 'no'} |")
    r, o = rss("redis"), rss("orrery")
    lines.append(f"| RSS per key (16 B values), bytes | {r:.1f} | {o:.1f} | {o / r:.2f}x | "
                 f"<= 0.6x | {'yes' if o / r <= 0.6 else 'no'} |")
    lines += ["", "Throughput (ops/s) against pipeline depth, `-c 50`:", "",
              "| P | redis SET | orrery SET | redis GET | orrery GET |", "|---:|---:|---:|---:|---:|"]
    depths = [1, 4, 16, 64]
    series = {}
    for d in depths:
        r, o = sweep("redis", d), sweep("orrery", d)
        lines.append(f"| {d} | {r['SET']:,.0f} | {o['SET']:,.0f} | {r['GET']:,.0f} | {o['GET']:,.0f} |")
        for s, v in [("redis SET", r["SET"]), ("orrery SET", o["SET"]),
                     ("redis GET", r["GET"]), ("orrery GET", o["GET"])]:
            series.setdefault(s, []).append(v)
    with open(os.path.join(OUT, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    svg(series, depths)


def svg(series, depths):
    w, h, left, bottom, top, right = 640, 400, 80, 50, 40, 150
    ymax = max(max(v) for v in series.values()) * 1.1
    x = lambda i: left + i * (w - left - right) / (len(depths) - 1)
    y = lambda v: h - bottom - v / ymax * (h - bottom - top)
    colours = {"redis SET": "#d62728", "redis GET": "#ff9896",
               "orrery SET": "#1f77b4", "orrery GET": "#aec7e8"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">'
           f'Throughput vs pipeline depth, -c 50, one server core (loaded machine)</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{(left + w - right) / 2}" y="{h - 10}" text-anchor="middle">pipeline depth (-P)</text>',
           f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">'
           f'requests/s</text>']
    for i, d in enumerate(depths):
        out.append(f'<text x="{x(i)}" y="{h - bottom + 18}" text-anchor="middle">{d}</text>')
    for k in range(5):
        v = ymax * k / 4
        out.append(f'<text x="{left - 6}" y="{y(v) + 4}" text-anchor="end">{v / 1e6:.1f}M</text>')
        out.append(f'<line x1="{left}" y1="{y(v)}" x2="{w - right}" y2="{y(v)}" stroke="#eee"/>')
    for n, (name, vals) in enumerate(series.items()):
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(vals))
        c = colours[name]
        dash = ' stroke-dasharray="5,3"' if "GET" in name else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for i, v in enumerate(vals):
            out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{c}"/>')
        ly = top + 20 + n * 20
        out.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 40}" y2="{ly}" '
                   f'stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{w - right + 45}" y="{ly + 4}">{name}</text>')
    out.append("</svg>")
    with open(os.path.join(OUT, "pipeline.svg"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
