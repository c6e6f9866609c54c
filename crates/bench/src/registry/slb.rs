//! The SLB hook: wraps an index in the Search Lookaside Buffer (default configuration:
//! 16 MiB Cache Table, 64 MiB Log Table, as in the paper's Table 2; `slbN:` sets the Cache
//! Table to N MiB, the Log Table staying four times as large).

use orrery::slb::{Config, Slb};

use super::index::AnyIndex;

/// The default Cache Table size (`slb:`), MiB.
const DEFAULT_MIB: usize = 16;

/// Splits `slb:<rest>` / `slbN:<rest>` into (Cache Table MiB, rest); `None` for names
/// without an SLB prefix.
pub(super) fn parse_prefix(name: &str) -> Result<Option<(usize, &str)>, String> {
    let Some((head, rest)) = name.split_once(':') else {
        return Ok(None);
    };
    let Some(size) = head.strip_prefix("slb") else {
        return Ok(None);
    };
    if size.is_empty() {
        return Ok(Some((DEFAULT_MIB, rest)));
    }
    match size.parse::<usize>() {
        Ok(mib) if mib.is_power_of_two() && mib <= 1024 => Ok(Some((mib, rest))),
        _ => Err(format!(
            "in {name:?}: the SLB size must be a power of two of MiB from 1 to 1024, as in \
             slb16:, slb32:, slb64:"
        )),
    }
}

/// Wraps `index` in an SLB with a `mib` MiB Cache Table; a boxed index is an index
/// itself, so any entry works.
pub(super) fn wrap(index: AnyIndex, mib: usize) -> AnyIndex {
    const VALID: &str = "parse_prefix admits only valid SLB sizes";
    let config = || Config::with_cache_mib(mib);
    match index {
        AnyIndex::Ordered(i) => {
            AnyIndex::Ordered(Box::new(Slb::with_config(i, config()).expect(VALID)))
        }
        AnyIndex::Point(i) => {
            AnyIndex::Point(Box::new(Slb::with_config(i, config()).expect(VALID)))
        }
    }
}
