//! The shared conformance suite, on the default configuration and on 8-key leaves (so that
//! splits and merges happen within every check) with all optimizations off (BaseWormhole),
//! iterator parts included.

use std::ops::Bound;

use orrery_core::testing::{Cursor, CursorUnderTest};
use orrery_wormhole::{Iter, WormholeWith};

/// The concrete iterator over `[lo, hi]`, for the iterator parts.
fn open<'a, const OPTS: u32>(
    wh: &'a WormholeWith<OPTS>,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Box<dyn CursorUnderTest + 'a> {
    Box::new(Cursor::new(
        wh.range::<[u8], _>((lo, hi)),
        |it: &mut Iter<'_, OPTS>, b| it.seek(b),
    ))
}

mod default {
    use orrery_wormhole::Wormhole;
    orrery_core::conformance_tests!(ordered, Wormhole::new, iter = super::open);
}

mod small_leaves {
    use orrery_wormhole::{Config, Wormhole};
    orrery_core::conformance_tests!(
        ordered,
        || Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap(),
        iter = super::open
    );
}

mod base_wormhole {
    use orrery_wormhole::ablation::BASE;
    use orrery_wormhole::{Config, WormholeWith};
    orrery_core::conformance_tests!(
        ordered,
        || WormholeWith::<BASE>::with_config(Config::builder().leaf_capacity(8).build().unwrap())
            .unwrap(),
        iter = super::open
    );
}
