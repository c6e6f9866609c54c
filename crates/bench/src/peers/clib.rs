//! Opening a C library at run time and looking its functions up: the plumbing the opt-in C
//! peers share (`wormhole_c`, `cuckoo_trie_c`; `judy` uses [`sym`]).
//!
//! A library named by an environment variable ([`Opened::from_env`]) is opened once with
//! `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)` (libloading's `os::unix::Library::open`,
//! which takes the flags as they are) and never closed (the handle is leaked, so function
//! pointers taken from it stay valid for the life of the process). `RTLD_DEEPBIND` makes the
//! C code's own `malloc`/`free` resolve to the jemalloc it is linked against while the Rust
//! harness keeps its allocator. Debian's `libjemalloc.so.2` uses the initial-exec TLS model,
//! and glibc leaves only 512 bytes of static TLS for libraries opened after start-up, so
//! opening fails with "cannot allocate memory in static TLS block" unless the process starts
//! with `GLIBC_TUNABLES=`[`TLS_TUNABLE`]; the error then says so (`orrery-bench` adds the
//! tunable itself when a C peer's variable is set: `machine::malloc`).
//!
//! Every failure is an `Err` naming the variable and what to do (unset, unopenable, a
//! missing or null symbol), never a panic: the registry refuses the index name with it.

use std::ffi::{CStr, OsStr, c_void};

use libloading::os::unix::Library;

/// The glibc tunable that leaves room for jemalloc's initial-exec TLS block (2.6 KiB) when
/// a library is opened after start-up (glibc reserves 512 bytes by default).
pub(crate) const TLS_TUNABLE: &str = "glibc.rtld.optional_static_tls=16384";

/// A loader error with the system's message (`dlerror()`), which libloading keeps as the
/// error's source.
pub(crate) fn dl_error(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(why) => format!("{e}: {why}"),
        None => e.to_string(),
    }
}

/// Looks `name` up in `lib` and returns it as the function pointer type `T`.
///
/// # Safety
///
/// `T` is an `extern "C"` function pointer type matching the symbol's real signature, and
/// `lib` is never unloaded while the pointer is in use (the peers leak their libraries:
/// never).
pub(crate) unsafe fn sym<T: Copy>(lib: &Library, name: &CStr) -> Result<T, String> {
    let missing = |why: String| format!("symbol {} missing: {why}", name.to_string_lossy());
    // SAFETY: the caller guarantees that `T` is the symbol's type; libloading checks that it
    // is one pointer wide.
    let s = unsafe { lib.get::<T>(name) }.map_err(|e| missing(dl_error(&e)))?;
    let p = s.into_raw();
    if p.is_null() {
        return Err(missing("its address is null".into()));
    }
    // SAFETY: a non-null symbol address reinterpreted as the function pointer type the
    // caller guarantees it has; both are one pointer wide (libloading checked).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

/// A library opened from the path in an environment variable, for the process's lifetime.
pub(crate) struct Opened {
    /// The library (leaked: never unloaded).
    pub(crate) lib: &'static Library,
    /// `VAR=path`, prefixed to every later error.
    origin: String,
}

impl Opened {
    /// Opens the library named by the variable `env` (module docs: flags, leak); `unset`
    /// says how to build it when the variable is not set.
    pub(crate) fn from_env(env: &str, unset: &str) -> Result<Opened, String> {
        let path = std::env::var_os(env).ok_or_else(|| format!("{env} is not set: {unset}"))?;
        Opened::from_path(env, &path)
    }

    /// Opens the library at `path` (the value of the variable `env`).
    pub(crate) fn from_path(env: &str, path: &OsStr) -> Result<Opened, String> {
        let origin = format!("{env}={}", path.to_string_lossy());
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
        // SAFETY: loading runs the library's constructors, which only initialise its own
        // statics; it is never unloaded (leaked below), so its destructors never run.
        let opened = unsafe { Library::open(Some(path), flags) };
        match opened {
            Ok(lib) => Ok(Opened {
                lib: Box::leak(Box::new(lib)),
                origin,
            }),
            Err(e) => {
                let e = dl_error(&e);
                let hint = if e.contains("static TLS") {
                    format!(
                        " (jemalloc uses initial-exec TLS: start the process with \
                         GLIBC_TUNABLES={TLS_TUNABLE})"
                    )
                } else {
                    String::new()
                };
                Err(format!("{origin}: cannot open: {e}{hint}"))
            }
        }
    }

    /// An error about this library: `VAR=path: e`.
    pub(crate) fn named(&self, e: impl std::fmt::Display) -> String {
        format!("{}: {e}", self.origin)
    }

    /// [`sym`] in this library, its error naming the library.
    ///
    /// # Safety
    ///
    /// `T` is an `extern "C"` function pointer type matching the symbol's real signature
    /// (the library is never unloaded).
    pub(crate) unsafe fn sym<T: Copy>(&self, name: &CStr) -> Result<T, String> {
        // SAFETY: the caller guarantees the type; `self.lib` is leaked.
        unsafe { sym(self.lib, name) }.map_err(|e| self.named(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Absent variables, unopenable paths and missing symbols are errors naming the
    /// variable and the cause; symbols of a real library resolve.
    #[test]
    fn errors_name_the_library_and_symbols_resolve() {
        let var = "ORRERY_CLIB_TEST_NEVER_SET";
        let e = Opened::from_env(var, "build it").err().unwrap();
        assert!(e.contains(var) && e.contains("not set: build it"), "{e}");
        let e = Opened::from_path(var, OsStr::new("/nonexistent/libnope.so"))
            .err()
            .unwrap();
        assert!(
            e.starts_with(&format!("{var}=/nonexistent/libnope.so: cannot open")),
            "{e}"
        );
        // The C library every process has.
        let libc_so = OsStr::new("libc.so.6");
        let l = Opened::from_path(var, libc_so).unwrap();
        // SAFETY: `strlen`'s C declaration.
        let strlen: unsafe extern "C" fn(*const std::ffi::c_char) -> usize =
            unsafe { l.sym(c"strlen") }.unwrap();
        // SAFETY: a NUL-terminated string.
        assert_eq!(unsafe { strlen(c"four".as_ptr()) }, 4);
        // SAFETY: never called.
        let e = unsafe { l.sym::<unsafe extern "C" fn()>(c"orrery_no_such_symbol") }
            .err()
            .unwrap();
        assert!(
            e.starts_with(&format!(
                "{var}=libc.so.6: symbol orrery_no_such_symbol missing"
            )),
            "{e}"
        );
    }
}
