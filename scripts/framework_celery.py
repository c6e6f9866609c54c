"""Celery end to end on orrery-server: the Redis broker (kombu) and the Redis result backend.

Called by scripts/test-server-framework.sh, which starts the server and the worker:
  celery -A framework_celery worker ...   the worker (ORRERY_PORT names the server's port)
  python framework_celery.py run N [S]    enqueues N tasks of every kind, checks every result
                                          (S: deadline in seconds for all of them, default 90)
  python framework_celery.py metas        prints every stored task result, sorted by key
Exits non-zero (an AssertionError or a timeout) on any wrong or missing result.

What the tasks exercise on the server: plain tasks (LPUSH to the queue list, BRPOP by the
worker, MULTI/EXEC pipelines), a chain (each step enqueued by the worker), a chord (a group
whose results the backend counts with ZADD/ZCOUNT/EXPIRE in a transaction, then the
callback), countdown and ETA tasks (held by the worker until due), a retry (re-enqueued
with a countdown), the result backend's SETEX/GET and its pub/sub notifications of ready
results (SUBSCRIBE per task), and the worker's fanout (PSUBSCRIBE/PUBLISH: mingle, remote
control).
"""

import os
import sys
import time
from datetime import datetime, timedelta, timezone

from celery import Celery, chain, chord, group
from celery.result import ResultSet

PORT = int(os.environ.get("ORRERY_PORT", "6379"))
URL = f"redis://127.0.0.1:{PORT}/0"

app = Celery("framework_celery", broker=URL, backend=URL)
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    result_expires=3600,
    broker_connection_retry_on_startup=True,
    task_acks_late=True,  # matters with ack emulation only
    worker_prefetch_multiplier=4,
    # kombu's ack emulation (the default) keeps delivered messages in an "unacked" hash and
    # sorted set and restores overdue ones under a redis-py Lock, whose release is a Lua
    # script (EVALSHA), which orrery-server does not run: the worker dies at start with
    # "unknown command 'EVALSHA'". Without it a delivered message is the worker's alone
    # (at most once, as with BRPOP alone).
    # ORRERY_CELERY_ACK_EMULATION=1 turns it back on, to see that failure.
    broker_transport_options={
        "ack_emulation": os.environ.get("ORRERY_CELERY_ACK_EMULATION") == "1"},
)


@app.task
def add(x, y):
    return x + y


@app.task
def mul(x, y):
    return x * y


@app.task
def total(values):
    return sum(values)


@app.task
def stamp(i):
    """Returns i with the time it ran, to check that a countdown or ETA was honoured."""
    return [i, time.time()]


@app.task(bind=True, max_retries=3)
def flaky(self, i):
    """Fails on its first run and succeeds on the retry (re-enqueued with a countdown)."""
    if self.request.retries == 0:
        raise self.retry(countdown=0.2)
    return [i, self.request.retries]


def run(n, deadline_s):
    start = time.time()
    deadline = start + deadline_s
    checks = []  # (AsyncResult, expected value or a check function)

    n_chain = 50      # each: 3 tasks
    n_chord = 100     # header tasks, plus one callback
    n_countdown = 40
    n_eta = 40
    n_retry = 30      # each runs twice
    n_plain = max(0, n - 3 * n_chain - (n_chord + 1) - n_countdown - n_eta - n_retry)

    for i in range(n_plain):
        checks.append((add.delay(i, 2 * i), 3 * i))
    for i in range(n_chain):
        r = chain(add.s(i, 1), mul.s(3), add.s(-1))()
        checks.append((r, (i + 1) * 3 - 1))
    header = group(add.s(i, i) for i in range(n_chord))
    checks.append((chord(header)(total.s()), sum(2 * i for i in range(n_chord))))
    sent = time.time()
    for i in range(n_countdown):
        checks.append((stamp.apply_async((i,), countdown=1), ("after", i, sent + 1)))
    eta = datetime.now(timezone.utc) + timedelta(seconds=2)
    for i in range(n_eta):
        checks.append((stamp.apply_async((i,), eta=eta), ("after", i, eta.timestamp())))
    for i in range(n_retry):
        checks.append((flaky.delay(i), [i, 1]))
    enqueued = n_plain + 3 * n_chain + n_chord + 1 + n_countdown + n_eta + n_retry
    print(f"enqueued {enqueued} tasks in {time.time() - start:.1f} s", flush=True)

    # Every result through the backend's pub/sub notifications (ResultSet.join_native
    # subscribes to every task's channel), then a few again one by one (AsyncResult.get).
    rs = ResultSet([r for r, _ in checks])
    values = rs.join_native(timeout=max(1.0, deadline - time.time()))
    print(f"joined {len(values)} results at {time.time() - start:.1f} s", flush=True)
    for (r, want), got in zip(checks, values):
        check(r, got, want)
    for r, want in checks[::50]:
        check(r, r.get(timeout=max(1.0, deadline - time.time())), want)
    for r, _ in checks:
        assert r.successful(), (r.id, r.state)
    # Every message was taken off the queue list.
    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        assert client.llen("celery") == 0, client.llen("celery")
    print(f"{len(checks)} results checked ({enqueued} tasks) in {time.time() - start:.1f} s",
          flush=True)


def metas():
    """Prints every task's stored result, sorted: compared across a restart of the server."""
    client = app.backend.client
    keys = sorted(client.scan_iter(match="celery-task-meta-*", count=500))
    for k, v in zip(keys, client.mget(keys)):
        print(k.decode(), v.decode())


def check(r, got, want):
    if isinstance(want, tuple) and want[0] == "after":
        _, i, not_before = want
        assert got[0] == i, (r.id, got, want)
        # The worker ran it no earlier than asked (clocks are the same machine's).
        assert got[1] >= not_before - 0.05, (r.id, got, want)
    else:
        assert got == want, (r.id, got, want)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        run(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 90.0)
    elif sys.argv[1:] == ["metas"]:
        metas()
    else:
        sys.exit(__doc__)
