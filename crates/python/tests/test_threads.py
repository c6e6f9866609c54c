"""Threads: many Python threads writing and iterating at once (with the structures'
guarantees checked), no deadlock between the GIL and the structures' locks, and bulk calls
from two threads that overlap in time, shown from timestamps taken inside the calls.

Threads that must run together start at a barrier; waits are bounded by generous
deadlines (a stuck thread fails the test instead of hanging it), never by sleeps."""

import random
import sys
import threading
import time

import pytest

from conftest import is_ordered

DEADLINE = 120.0  # seconds: generous, a hang fails instead of blocking CI
STABLE = [b"s%05d" % i for i in range(2000)]


def run_threads(targets):
    """Runs every target in its own thread from a common start; re-raises the first error."""
    barrier = threading.Barrier(len(targets))
    errors = []

    def wrap(f):
        def run():
            try:
                barrier.wait(timeout=DEADLINE)
                f()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(f), daemon=True) for f in targets]
    for t in threads:
        t.start()
    end = time.monotonic() + DEADLINE
    for t in threads:
        t.join(timeout=max(0.0, end - time.monotonic()))
    stuck = [t for t in threads if t.is_alive()]
    assert not stuck, f"{len(stuck)} threads still running after {DEADLINE} s (deadlock?)"
    if errors:
        raise errors[0]


def writer(m, tag, seed, ops, model):
    """Random point and bulk writes on keys of its own; `model` ends as what it wrote."""
    rng = random.Random(seed)
    mine = [b"w%s-%04d" % (tag, i) for i in range(600)]

    def run():
        for n in range(ops):
            k = rng.choice(mine)
            r = rng.random()
            if r < 0.4:
                v = b"v%d" % n
                m[k] = v
                model[k] = v
            elif r < 0.55:
                assert m.pop(k, None) == model.pop(k, None)
            elif r < 0.65:
                v = b"d%d" % n
                assert m.setdefault(k, v) == model.setdefault(k, v)
            elif r < 0.8:
                batch = rng.sample(mine, 50)
                v = b"b%d" % n
                m.set_many((x, v) for x in batch)
                model.update((x, v) for x in batch)
            elif r < 0.9:
                batch = rng.sample(mine, 50)
                assert m.delete_many(batch) == sum(model.pop(x, None) is not None for x in batch)
            else:
                assert m.get_many(mine[:100]) == [model.get(x) for x in mine[:100]]

    return run


def reader(m, done, ordered, checks):
    """Iterates while the writers run; checks the iteration guarantees every pass."""

    def run():
        while not done.is_set():
            for reverse in (False, True) if ordered else (False,):
                it = m._iter(2, reverse)
                seen = []
                for k, v in it:
                    seen.append(k)
                    if k.startswith(b"s"):
                        assert v == b"stable", (k, v)
                    else:
                        assert v[:1] in b"vdb", (k, v)  # a value some writer stored
                if ordered:
                    want = sorted(seen, reverse=reverse)
                    assert seen == want and len(set(seen)) == len(seen), "not strictly monotonic"
                else:
                    assert len(set(seen)) == len(seen), "a key yielded twice"
                stable = [k for k in seen if k.startswith(b"s")]
                assert len(stable) == len(STABLE), "a key present throughout was missed"
            assert m.get_many(STABLE[::50]) == [b"stable"] * len(STABLE[::50])
            checks.append(1)

    return run


def test_many_threads_write_and_iterate(make):
    m = make()
    m.set_many((k, b"stable") for k in STABLE)
    models = [{} for _ in range(4)]
    done = threading.Event()
    checks = []
    writers = [writer(m, b"%d" % t, t, 3000, models[t]) for t in range(4)]

    remaining = [len(writers)]
    lock = threading.Lock()

    def writers_then_done(w):
        def run():
            try:
                w()
            finally:
                with lock:
                    remaining[0] -= 1
                    if remaining[0] == 0:
                        done.set()

        return run

    readers = [reader(m, done, is_ordered(m), checks) for _ in range(4)]
    run_threads([writers_then_done(w) for w in writers] + readers)
    assert checks, "the readers never completed a pass"
    want = {k: b"stable" for k in STABLE}
    for model in models:
        want.update(model)
    assert dict(m.items()) == want
    assert len(m) == len(want)


def test_point_writes_against_bulk_writes_do_not_deadlock(make):
    """Mercury expands during the bulk loads (small initial table) while other threads write
    single keys holding the GIL: nobody may wait for the GIL while holding a structure lock."""
    m = make()
    n = 30_000

    def bulk(tag):
        return lambda: m.set_many((b"%s%06d" % (tag, i), b"x") for i in range(n))

    def points(tag):
        def run():
            for i in range(n // 3):
                m[b"%s%06d" % (tag, i)] = b"y"
                m.get(b"a%06d" % i)
        return run

    run_threads([bulk(b"a"), bulk(b"b"), points(b"c"), points(b"d")])
    assert len(m) == 2 * n + 2 * (n // 3)


def timed_keys(keys, stamps):
    """The keys, recording the time each is handed over: inside the call consuming them."""
    for k in keys:
        stamps.append(time.perf_counter_ns())
        yield k


BULK_CALLS = {
    "get_many": lambda m, ks, stamps: m.get_many(timed_keys(ks, stamps)),
    "set_many": lambda m, ks, stamps: m.set_many((k, b"v") for k in timed_keys(ks, stamps)),
    "load": lambda m, ks, stamps: m.load((k, b"w") for k in timed_keys(ks, stamps)),
    "delete_many": lambda m, ks, stamps: m.delete_many(timed_keys(ks, stamps)),
}


@pytest.mark.parametrize("call", list(BULK_CALLS))
def test_bulk_calls_from_two_threads_overlap(make, call):
    """With the switch interval raised out of reach, the GIL changes hands only when a
    thread gives it up itself. Thread B then pulls keys (Python code, inside its own call)
    between thread A's first and last pulled key only if A gave the GIL up inside its call
    (the structure work releases it); and the same the other way. Both directions seen =
    both calls were in progress at once and each released the GIL while the other ran."""
    m = make()
    n = 80_000  # several chunks of 16 Ki keys per call
    key_sets = [[b"%c%07d" % (c, i) for i in range(n)] for c in (ord("a"), ord("b"))]
    for ks in key_sets:
        m.set_many((k, b"v") for k in ks)
    f = BULK_CALLS[call]
    old = sys.getswitchinterval()
    deadline = time.monotonic() + DEADLINE
    attempts = 0
    try:
        sys.setswitchinterval(1000.0)
        while True:
            attempts += 1
            stamps = [[], []]
            around = [[0, 0], [0, 0]]

            def side(i):
                def run():
                    around[i][0] = time.perf_counter_ns()
                    f(m, key_sets[i], stamps[i])
                    around[i][1] = time.perf_counter_ns()

                return run

            run_threads([side(0), side(1)])
            a, b = stamps
            assert len(a) == len(b) == n
            b_inside_a = sum(a[0] < t < a[-1] for t in b)
            a_inside_b = sum(b[0] < t < b[-1] for t in a)
            if b_inside_a and a_inside_b:
                break
            assert time.monotonic() < deadline, (
                f"{attempts} attempts without overlap: B inside A {b_inside_a}, "
                f"A inside B {a_inside_b}"
            )
            if call == "delete_many":  # put the keys back for the next attempt
                for ks in key_sets:
                    m.set_many((k, b"v") for k in ks)
    finally:
        sys.setswitchinterval(old)
    # The calls' own spans overlap too (outer timestamps).
    assert around[0][0] < around[1][1] and around[1][0] < around[0][1]
