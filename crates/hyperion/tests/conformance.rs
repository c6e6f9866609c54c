//! The shared conformance suite on the default configuration, on one arena with a small
//! ejection threshold (so that ejection happens within every check), and with key
//! pre-processing; iterator parts included.
//!
//! Only the default configuration runs by default: the other two are opt-in with the
//! crate's feature `long-tests` (`cargo test -p orrery-hyperion --features long-tests`),
//! because the three together take minutes on the shared 2-core machine.

use std::ops::Bound;

use orrery_core::testing::{Cursor, CursorUnderTest};
use orrery_hyperion::{Hyperion, Iter};

/// The concrete iterator over `[lo, hi]`, for the iterator parts.
fn open<'a>(h: &'a Hyperion, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Box<dyn CursorUnderTest + 'a> {
    Box::new(Cursor::new(
        h.range::<[u8], _>((lo, hi)),
        |it: &mut Iter<'_>, b| it.seek(b),
    ))
}

mod default {
    use orrery_hyperion::Hyperion;
    orrery_core::conformance_tests!(ordered, Hyperion::new, iter = super::open);
}

#[cfg(feature = "long-tests")]
mod one_arena_small_eject {
    use orrery_hyperion::{Config, Hyperion};
    orrery_core::conformance_tests!(
        ordered,
        || Hyperion::with_config(
            Config::builder()
                .arenas(1)
                .eject_threshold(256)
                .build()
                .unwrap()
        )
        .unwrap(),
        iter = super::open
    );
}

#[cfg(feature = "long-tests")]
mod preprocess {
    use orrery_hyperion::{Config, Hyperion};
    orrery_core::conformance_tests!(
        ordered,
        || Hyperion::with_config(Config::builder().preprocess(true).build().unwrap()).unwrap(),
        iter = super::open
    );
}
