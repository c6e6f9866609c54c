//! Targeted interleaving and stress tests of the sync module (sizes scaled down under Miri),
//! one file per primitive.
//!
//! | module | what it tests |
//! |---|---|
//! | `epoch` | epoch reclamation: deferral, pinning, exiting threads, grace periods, both pin barriers |
//! | `version` | `VersionLock`: validated optimistic readers never see a torn record |
//! | `locks` | `SpinLock`, `BitLock`, `RwSpinLock`: mutual exclusion, reader consistency, writer preference |

mod epoch;
mod locks;
mod version;
