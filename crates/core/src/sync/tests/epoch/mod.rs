//! Epoch reclamation tests.
//!
//! Epoch tests share the process's one collector with each other (and with whatever other
//! test of this binary runs at the same time), so they can only delay each other's
//! reclamation: every "eventually" is a wait bounded by a generous deadline in time
//! (`testing::wait::DEADLINE`), never by a count of iterations, and threads that must
//! overlap are shown to be running (a barrier, progress counters) before the work they
//! overlap with starts.
//!
//! | module | what it tests |
//! |---|---|
//! | `basic` | single-threaded deferral, pinning, handles (run under Miri) |
//! | `threads` | many threads: thread-local destruction, exiting threads, a Treiber stack, liveness |
//! | `grace` | `synchronize` and `GracePeriod` (RCU-style reuse) |
//! | `barrier` | the pin barrier: asymmetric membarrier path and fenced fallback |
//!
//! `barrier` runs every test under `sync::tests::epoch::` again in a child process on the
//! asymmetric path.

mod barrier;
mod basic;
mod grace;
mod threads;

use crate::sync::epoch;
use crate::testing::wait::DEADLINE;

/// A live object's canary (stored until its destructor runs).
const ALIVE: u64 = 0xA11C_E5A1_1CE5_A11C;
/// A destroyed object's canary (stored by its destructor before it is freed).
const DEAD: u64 = 0xDEAD_DEAD_DEAD_DEAD;

/// What the collector looks like now, for failure messages.
fn collector_state() -> String {
    format!(
        "global epoch {}, {} deferred functions pending, records pinned in epochs {:?}",
        epoch::global_epoch(),
        epoch::pending_deferred(),
        epoch::pinned_epochs()
    )
}

/// Pins and flushes until `done()` holds, failing after [`DEADLINE`] (a collector that never
/// reclaims fails the test instead of hanging it).
fn flush_until(mut done: impl FnMut() -> bool) {
    let epoch0 = epoch::global_epoch();
    assert!(
        epoch::flush_until(DEADLINE, &mut done),
        "deferred functions were not run within {DEADLINE:?} (epoch {epoch0} at the start; \
         now {})",
        collector_state()
    );
}
