//! The pin barrier: the asymmetric (membarrier) path and the fenced fallback. The mode is
//! the one the environment and kernel allow; readers never see a retired object destroyed;
//! every epoch test passes again in a child process on the asymmetric path; the heavy
//! barrier forbids store buffering.

use super::{ALIVE, DEAD, flush_until};
use crate::sync::epoch;
use crate::sync::*;
use crate::testing::wait::Progress;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::thread;

/// Whether the environment variable `name` is set and not `0`.
fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether this process was started on the fenced path: the default, unless
/// `epoch::ASYMMETRIC_ENV` asks for the asymmetric one (and `epoch::FALLBACK_ENV` does not
/// override it).
fn fallback_forced() -> bool {
    env_flag(epoch::FALLBACK_ENV) || !env_flag(epoch::ASYMMETRIC_ENV)
}

/// The mode is the one the environment and the kernel allow: membarrier whenever it was
/// asked for and the kernel offers it (so the fast path is really taken), the fence
/// otherwise (and always under Miri).
#[test]
fn epoch_pin_barrier_matches_environment() {
    let expected = if !cfg!(miri) && !fallback_forced() && epoch::membarrier_supported() {
        epoch::PinBarrier::Membarrier
    } else {
        epoch::PinBarrier::Fence
    };
    assert_eq!(epoch::pin_barrier(), expected);
    // Fixed for the life of the process.
    drop(pin());
    assert_eq!(epoch::pin_barrier(), expected);
}

/// An object with a canary and a self-check, poisoned by its destructor before it is freed.
struct Payload {
    canary: AtomicU64,
    generation: u64,
    check: AtomicU64,
    destroyed: Arc<AtomicUsize>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        assert_eq!(
            self.canary.swap(DEAD, Ordering::Relaxed),
            ALIVE,
            "double drop"
        );
        self.check.store(DEAD, Ordering::Relaxed);
        self.destroyed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Readers pin, load the one shared pointer and read the object it points to for a while;
/// a writer keeps replacing it and retiring the old one, flushing after every retirement
/// so that each one is sealed at once and the epoch is pushed forward as fast as the
/// collector allows (on the membarrier path: a heavy barrier per advance). A reader that
/// finds its object poisoned while still pinned caught a destruction inside its critical
/// section. Every object is destroyed exactly once. The readers are running before the
/// first replacement and make progress between every few hundred of them.
#[test]
fn epoch_reader_never_sees_a_retired_object_destroyed() {
    let replacements: u64 = if cfg!(miri) { 30 } else { 20_000 };
    let min_reads: u64 = if cfg!(miri) { 10 } else { 100 };
    let readers = 2;
    let destroyed = Arc::new(AtomicUsize::new(0));
    let make = |generation: u64| {
        Box::into_raw(Box::new(Payload {
            canary: AtomicU64::new(ALIVE),
            generation,
            check: AtomicU64::new(!generation),
            destroyed: destroyed.clone(),
        }))
    };
    let shared = Arc::new(AtomicPtr::new(make(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Progress::new(readers);
    let reader_threads: Vec<_> = (0..readers)
        .map(|r| {
            let (shared, stop, progress) = (shared.clone(), stop.clone(), progress.clone());
            thread::spawn(move || {
                let local = Handle::register();
                let mut reads = 0u64;
                let mut last = 0;
                while !stop.load(Ordering::Relaxed) || reads < min_reads {
                    // Both pin entry points.
                    let guard = if (reads + r as u64).is_multiple_of(2) {
                        local.pin()
                    } else {
                        pin()
                    };
                    let p = shared.load(Ordering::Acquire);
                    // SAFETY: loaded under `guard`: not destroyed before the guard drops.
                    let obj = unsafe { &*p };
                    assert_eq!(obj.canary.load(Ordering::Relaxed), ALIVE, "use after free");
                    let generation = obj.generation;
                    assert!(generation >= last, "went back to an older object");
                    last = generation;
                    for _ in 0..reads % 32 {
                        std::hint::spin_loop();
                    }
                    if reads.is_multiple_of(64) {
                        thread::yield_now();
                    }
                    assert_eq!(
                        obj.canary.load(Ordering::Relaxed),
                        ALIVE,
                        "destroyed while pinned"
                    );
                    assert_eq!(
                        obj.check.load(Ordering::Relaxed),
                        !generation,
                        "poisoned while pinned"
                    );
                    drop(guard);
                    reads += 1;
                    progress.bump(r);
                }
                reads
            })
        })
        .collect();
    // The readers run before the first replacement, and read between every
    // `REPLACEMENTS_PER_CHECK` of them.
    const REPLACEMENTS_PER_CHECK: u64 = if cfg!(miri) { 5 } else { 500 };
    let mut last = vec![0; readers];
    progress.wait_all_moved(&mut last);
    for generation in 1..=replacements {
        let guard = pin();
        let old = shared.swap(make(generation), Ordering::AcqRel);
        // SAFETY: `old` is unlinked (readers that pin from now on load the new object) and
        // retired once; `Payload` is `Send`.
        unsafe { guard.defer_destroy(old) };
        guard.flush();
        drop(guard);
        if generation % REPLACEMENTS_PER_CHECK == 0 {
            progress.wait_all_moved(&mut last);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in reader_threads {
        assert!(t.join().unwrap() >= min_reads);
    }
    // SAFETY: the readers are gone: the last object is ours alone.
    drop(unsafe { Box::from_raw(shared.load(Ordering::Relaxed)) });
    flush_until(|| destroyed.load(Ordering::Relaxed) == replacements as usize + 1);
    for _ in 0..10 {
        pin().flush();
    }
    assert_eq!(destroyed.load(Ordering::Relaxed), replacements as usize + 1);
}

/// Runs every epoch test of this module again in a child process with the asymmetric
/// (membarrier) pin asked for through the environment, so that both pin barriers are
/// exercised by the same tests (the mode is fixed per process; the fenced one is the
/// default). The child's copy of this test sees the variable and returns at once.
#[test]
#[cfg(not(miri))]
fn epoch_tests_pass_on_the_asymmetric_path() {
    if env_flag(epoch::ASYMMETRIC_ENV) || env_flag(epoch::FALLBACK_ENV) {
        // We are the child (or the whole run chose its mode through the environment).
        return;
    }
    assert_eq!(epoch::pin_barrier(), epoch::PinBarrier::Fence);
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args(["sync::tests::epoch::", "--test-threads", "2"])
        .env(epoch::ASYMMETRIC_ENV, "1")
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "epoch tests failed on the asymmetric path:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The child really ran the epoch tests (not an empty filter).
    let passed: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= 12,
        "only {passed} epoch tests ran in the child:\n{stdout}"
    );
}

/// Store buffering, the reordering the asymmetric pin relies on the heavy barrier to
/// forbid: `X: x = 1; compiler fence; r1 = y` against `Y: y = 1; heavy barrier; r2 = x`.
/// `r1 == 0 && r2 == 0` is forbidden (and happens hundreds of times in 20 000 rounds on x86 if
/// the heavy barrier is replaced by a compiler fence). Each round both threads meet at a
/// rendezvous (spinning, then yielding), then wait a varying number of spins before their store, so that the
/// two windows keep overlapping.
#[test]
#[cfg(not(miri))]
fn epoch_heavy_barrier_forbids_store_buffering() {
    use std::sync::atomic::compiler_fence;
    if epoch::pin_barrier() != epoch::PinBarrier::Membarrier {
        return; // nothing to test: the heavy barrier is not used
    }
    let rounds: u64 = 10_000;
    let x = Arc::new(AtomicU64::new(0));
    let y = Arc::new(AtomicU64::new(0));
    // Per-thread "arrived at round n" counters and X's result.
    let arrived = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let r1s = Arc::new(AtomicU64::new(0));
    // Spins while the other thread is running on another core, then yields: with one core
    // (or a busy machine) a pure spin would wait out a whole time slice at every meeting.
    let meet = |arrived: &[AtomicU64; 2], me: usize, round: u64| {
        arrived[me].store(round, Ordering::Release);
        let backoff = Backoff::new();
        while arrived[1 - me].load(Ordering::Acquire) < round {
            backoff.snooze();
        }
    };
    let other = {
        let (x, y, arrived, r1s) = (x.clone(), y.clone(), arrived.clone(), r1s.clone());
        thread::spawn(move || {
            for round in 1..=rounds {
                // Round start: the variables were reset by Y.
                meet(&arrived, 0, 3 * round);
                for _ in 0..(round * 7) % 23 {
                    std::hint::spin_loop();
                }
                x.store(1, Ordering::Relaxed);
                compiler_fence(Ordering::SeqCst);
                let r1 = y.load(Ordering::Relaxed);
                r1s.store(r1, Ordering::Relaxed);
                meet(&arrived, 0, 3 * round + 1);
                meet(&arrived, 0, 3 * round + 2);
            }
        })
    };
    let mut both_zero = 0;
    for round in 1..=rounds {
        meet(&arrived, 1, 3 * round);
        for _ in 0..(round * 5) % 19 {
            std::hint::spin_loop();
        }
        y.store(1, Ordering::Relaxed);
        assert!(
            epoch::heavy_barrier(),
            "membarrier refused after registration"
        );
        let r2 = x.load(Ordering::Relaxed);
        meet(&arrived, 1, 3 * round + 1);
        if r1s.load(Ordering::Relaxed) == 0 && r2 == 0 {
            both_zero += 1;
        }
        x.store(0, Ordering::Relaxed);
        y.store(0, Ordering::Relaxed);
        meet(&arrived, 1, 3 * round + 2);
    }
    other.join().unwrap();
    assert_eq!(
        both_zero, 0,
        "store buffering seen across the heavy barrier"
    );
}
