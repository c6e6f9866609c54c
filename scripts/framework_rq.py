"""Python's rq end to end on orrery-server: queues, a worker with its scheduler, job results.

Called by scripts/test-server-framework.sh, which starts the server and the worker
(`rq worker --with-scheduler`, ORRERY_PORT naming the server's port):
  python framework_rq.py run N [S]    enqueues N jobs of every kind, checks every result
                                      (S: deadline in seconds for all of them, default 90)
Exits non-zero (an AssertionError or a timeout) on any wrong or missing result.

rq 1.11 is the newest rq that runs here: from 1.12 on rq keeps job results in a stream
(XADD/XREVRANGE) whenever the server reports Redis 5 or later, and rq 3.0 also enqueues
and schedules with Lua scripts (EVALSHA); orrery-server has neither. What the jobs exercise:
job hashes (HSET/HGETALL), queue lists (RPUSH, the worker's BLPOP over its queues),
the started/finished/scheduled registries (sorted sets), dependencies (WATCH/MULTI/EXEC
on the parent's dependents set), enqueue_in (the scheduler's lock: SET NX EX, and its
ZRANGEBYSCORE over the scheduled registry), retries with an interval (rescheduled), and
the worker's pub/sub command channel and CLIENT SETNAME/LIST.
"""

import os
import sys
import time
from datetime import timedelta

from redis import Redis
from rq import Queue, Retry
from rq.job import Job

PORT = int(os.environ.get("ORRERY_PORT", "6379"))


def add(x, y):
    return x + y


def stamp(i):
    """Returns i with the time it ran, to check that enqueue_in was honoured."""
    return [i, time.time()]


def flaky(i, marker_prefix):
    """Fails on its first run and succeeds on the retry."""
    conn = Redis(port=PORT)
    if conn.incr(f"{marker_prefix}:{i}") == 1:
        raise RuntimeError("first run fails (expected)")
    return [i, "retried"]


def run(n, deadline_s):
    # Jobs name their function by module: not __main__.
    from framework_rq import add, flaky, stamp

    start = time.time()
    deadline = start + deadline_s
    conn = Redis(port=PORT)
    q = Queue("default", connection=conn)
    checks = []  # (job, expected value, or ("after", i, not_before))

    n_dep = 50       # pairs: a parent and a child that depends on it
    n_in = 40
    n_retry = 30
    n_plain = max(0, n - 2 * n_dep - n_in - n_retry)
    for i in range(n_plain):
        checks.append((q.enqueue(add, i, 2 * i, result_ttl=3600), 3 * i))
    for i in range(n_dep):
        parent = q.enqueue(add, i, 1, result_ttl=3600)
        child = q.enqueue(add, 10 * i, 5, depends_on=parent, result_ttl=3600)
        checks += [(parent, i + 1), (child, 10 * i + 5)]
    sent = time.time()
    for i in range(n_in):
        job = q.enqueue_in(timedelta(seconds=1), stamp, i, result_ttl=3600)
        # rq schedules in whole seconds (the registry's score is the time truncated).
        checks.append((job, ("after", i, int(sent + 1))))
    for i in range(n_retry):
        job = q.enqueue(flaky, i, "rq-flaky", retry=Retry(max=2, interval=1), result_ttl=3600)
        checks.append((job, [i, "retried"]))
    print(f"enqueued {len(checks)} jobs in {time.time() - start:.1f} s", flush=True)

    pending = {job.id: (job, want) for job, want in checks}
    while pending:
        assert time.time() < deadline, f"{len(pending)} jobs not finished by the deadline"
        ids = list(pending)
        for job in Job.fetch_many(ids, connection=conn):
            assert job is not None
            status = job.get_status()
            # A failed first run of a flaky job is "scheduled" until its retry.
            assert status != "failed", (job.id, job.exc_info)
            # rq 1.11 writes a finished job's status before its result (outside MULTI when
            # the job has no dependents: the worker's pipeline is WATCHing, not queuing),
            # on Redis too: a finished job without its result yet is looked at again.
            if status == "finished" and job.result is not None:
                _, want = pending.pop(job.id)
                check(job, job.result, want)
        if pending:
            time.sleep(0.2)
    assert conn.llen(q.key) == 0
    assert q.failed_job_registry.count == 0, q.failed_job_registry.get_job_ids()
    assert q.scheduled_job_registry.count == 0
    print(f"{len(checks)} results checked in {time.time() - start:.1f} s", flush=True)


def check(job, got, want):
    if isinstance(want, tuple) and want[0] == "after":
        _, i, not_before = want
        assert got[0] == i, (job.id, got, want)
        assert got[1] >= not_before - 0.05, (job.id, got, want)
    else:
        assert got == want, (job.id, got, want)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        run(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 90.0)
    else:
        sys.exit(__doc__)
