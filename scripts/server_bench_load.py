"""Writes a RESP command stream for `redis-cli --pipe` (the same loader for every server).

  server_bench_load.py strings N   SET key:%012d v%015d for 0 <= i < N (16-byte values),
                                   the keys redis-benchmark's `key:__rand_int__` names
  server_bench_load.py zset N      ZADD zs 0 m:%012d ... (N members, 100 per command, score 0
                                   so that ZRANGEBYLEX ranges are meaningful)
  server_bench_load.py hashes N    HSET h:%014d f:%014d <16 bytes> ... (N hashes of 10 fields:
                                   the same 10 16-byte field names in every hash, 16-byte
                                   values that differ everywhere)
  server_bench_load.py sets N      SADD s:%014d m:%014d ... (N sets of 10 distinct 16-byte
                                   members)
"""

import sys


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    out = sys.stdout.buffer
    chunk = []
    if mode == "strings":
        for i in range(n):
            chunk.append(b"*3\r\n$3\r\nSET\r\n" + bulk(b"key:%012d" % i) + bulk(b"v%015d" % i))
            if len(chunk) == 10000:
                out.write(b"".join(chunk))
                chunk.clear()
    elif mode == "zset":
        for start in range(0, n, 100):
            members = range(start, min(n, start + 100))
            parts = [b"*%d\r\n$4\r\nZADD\r\n$2\r\nzs\r\n" % (2 + 2 * len(members))]
            for i in members:
                parts.append(b"$1\r\n0\r\n" + bulk(b"m:%012d" % i))
            chunk.append(b"".join(parts))
            if len(chunk) == 1000:
                out.write(b"".join(chunk))
                chunk.clear()
    elif mode in ("hashes", "sets"):
        mask = (1 << 64) - 1
        for i in range(n):
            if mode == "hashes":
                parts = [b"*22\r\n$4\r\nHSET\r\n" + bulk(b"h:%014d" % i)]
                for f in range(10):
                    v = b"%016x" % (((i * 10 + f + 1) * 0x9E3779B97F4A7C15) & mask)
                    parts.append(bulk(b"f:%014d" % f) + bulk(v))
            else:
                parts = [b"*12\r\n$4\r\nSADD\r\n" + bulk(b"s:%014d" % i)]
                for f in range(10):
                    parts.append(bulk(b"m:%014d" % (i * 10 + f)))
            chunk.append(b"".join(parts))
            if len(chunk) == 10000:
                out.write(b"".join(chunk))
                chunk.clear()
    else:
        raise SystemExit(f"unknown mode {mode}")
    out.write(b"".join(chunk))


if __name__ == "__main__":
    main()
