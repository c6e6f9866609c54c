//! The facade as a user meets it: the prelude, one API across structures, iterators through
//! the SLB (needs the default features).
#![cfg(all(feature = "wormhole", feature = "mercury", feature = "slb"))]

use orrery::prelude::*;
use orrery::slb::Config;

#[test]
fn prelude_and_shared_names() {
    let wh: Wormhole = [(b"b", b"2"), (b"a", b"1"), (b"c", b"3")]
        .into_iter()
        .collect();
    let m: Mercury = [(b"b", b"2"), (b"a", b"1")].into_iter().collect();
    // The same calls, the same meanings.
    for (name, get_len, update) in [
        (
            "wormhole",
            wh.get_with(b"a", |v| v.len()),
            wh.update(b"a", |old| [old, b"!"].concat()),
        ),
        (
            "mercury",
            m.get_with(b"a", |v| v.len()),
            m.update(b"a", |old| [old, b"!"].concat()),
        ),
    ] {
        assert_eq!(get_len, Some(1), "{name}");
        assert_eq!(update, Ok(true), "{name}");
    }
    assert_eq!(wh.update_in_place(b"zz", |_| ()), Ok(false));
    assert_eq!(m.update_in_place(b"zz", |_| ()), Ok(false));
    let keys: Vec<Vec<u8>> = wh
        .range(&b"b"[..]..)
        .rev()
        .map(|e| e.key().to_vec())
        .collect();
    assert_eq!(keys, [b"c".to_vec(), b"b".to_vec()]);
    assert_eq!(m.iter().count(), 2);
}

#[test]
fn slb_over_wormhole_iterates_the_index() {
    let config = Config::builder().cache_table_bytes(4096).build().unwrap();
    let mut slb = Slb::with_config(Wormhole::new(), config).unwrap();
    slb.extend((0u32..100).map(|i| (i.to_be_bytes(), [i as u8])));
    assert_eq!(slb.update(&7u32.to_be_bytes(), |_| vec![70]), Ok(true));
    let mut n = 0;
    for e in &slb {
        if e.key() == 7u32.to_be_bytes() {
            assert_eq!(e.value(), [70]);
        }
        n += 1;
    }
    assert_eq!(n, 100);
    let dyn_index: Box<dyn OrderedKvIndex> = Box::new(slb);
    assert_eq!(
        dyn_index
            .range_collect(&b""[..]..&[0, 0, 0, 2][..], 10)
            .len(),
        2
    );
}
