//! The operating-system half of the asymmetric pin fence: Linux `membarrier(2)`.
//!
//! [`register`] asks the kernel (once per process) for the *private expedited* command;
//! [`heavy_barrier`] then makes every running thread of the process execute a full memory
//! barrier before it returns ("all running threads of the process execute a memory
//! barrier"; threads that are not running pass one when they are scheduled). This is what
//! lets a pin replace its full fence by a compiler fence: the rare epoch advancer pays for
//! the fence on behalf of every reader. The argument is in the [parent module's
//! docs](super).
//!
//! The asymmetric path exists only on Linux outside Miri and loom ([`SUPPORTED`]); elsewhere
//! [`register`] reports failure and the collector keeps the portable fenced pin.

/// Whether this build can use membarrier at all (Linux, not Miri, not loom). When false the
/// asymmetric path is compiled out of the pin.
pub(super) const SUPPORTED: bool = cfg!(all(target_os = "linux", not(miri), not(loom)));

/// The environment variable that asks for the asymmetric (membarrier) pin, read once per
/// process when the collector is first used: set and not `0` selects it where the kernel
/// allows. **The fenced pin is the default**: the asymmetric pin makes readers cheaper
/// but every grace period then costs heavy barriers (on this VM a membarrier interrupts the
/// other running thread with an IPI), and structures that wait for grace periods on their
/// write path pay for it; see the module docs and `docs/results/epoch-pin.md`.
pub const ASYMMETRIC_ENV: &str = "ORRERY_EPOCH_ASYMMETRIC";

/// The environment variable that forces the fenced (portable) pin even when
/// [`ASYMMETRIC_ENV`] asks for the asymmetric one: set and not `0` forces the fallback.
pub const FALLBACK_ENV: &str = "ORRERY_EPOCH_FALLBACK";

/// Whether the environment variable `name` is set and not `0`.
fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether the environment selects the fenced pin: [`FALLBACK_ENV`] set, or
/// [`ASYMMETRIC_ENV`] not set (the default).
pub(super) fn fallback_forced() -> bool {
    env_flag(FALLBACK_ENV) || !env_flag(ASYMMETRIC_ENV)
}

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
mod imp {
    use libc::{c_int, c_long};

    // Commands of `membarrier(2)` (linux/membarrier.h, kernel ABI).
    const CMD_QUERY: c_int = 0;
    const CMD_PRIVATE_EXPEDITED: c_int = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: c_int = 1 << 4;

    /// `membarrier(cmd, 0)`: the raw return value (negative on failure).
    fn membarrier(cmd: c_int) -> c_long {
        let flags: c_int = 0;
        // SAFETY: membarrier takes two integer arguments (command, flags) and touches no
        // user memory; an unsupported command or kernel only makes it return -1.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, flags) }
    }

    /// Whether the kernel offers both commands the asymmetric pin needs.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn supported() -> bool {
        let commands = membarrier(CMD_QUERY);
        let needed = c_long::from(CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED);
        commands >= 0 && commands & needed == needed
    }

    /// Registers the process for private expedited barriers; true on success.
    pub(crate) fn register() -> bool {
        supported() && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// Every running thread of the process executes a full memory barrier before this
    /// returns. False if the kernel refused (not registered: never after a successful
    /// [`register`], except perhaps in a child of `fork`, which gets a new address space;
    /// then it registers again and retries once).
    pub(crate) fn heavy_barrier() -> bool {
        membarrier(CMD_PRIVATE_EXPEDITED) == 0
            || (register() && membarrier(CMD_PRIVATE_EXPEDITED) == 0)
    }
}

#[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
mod imp {
    /// No membarrier in this build.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn supported() -> bool {
        false
    }

    /// No membarrier in this build: always fails.
    pub(crate) fn register() -> bool {
        false
    }

    /// Never called (registration fails); reports failure.
    pub(crate) fn heavy_barrier() -> bool {
        false
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) use imp::supported;
pub(crate) use imp::{heavy_barrier, register};
