//! `az` / `az2`: Amazon-review-like tuples (Wormhole's Az1 item-user-time and Az2
//! user-item-time, ~40 B).
//!
//! The real keysets concatenate an item id (10-character ASIN such as `B000F83SZQ`, or an
//! ISBN-10), a reviewer id (`A` + 13 or 20 base-36 characters) and a review time (Unix
//! seconds at day granularity). What matters to an index is their prefix structure: popular
//! items and prolific reviewers appear in many keys, so sorted neighbours share the whole
//! leading id. Item and user ranks are therefore drawn zipfian over catalogues sized to the
//! dataset (θ = 0.9 for items, 0.7 for users), then mapped to ids by hashing the rank.

use super::KeyGen;
use super::words::base36;
use crate::dist::Zipf;
use crate::rng::{Rng, mix64};

/// Field order of the tuple.
#[derive(Clone, Copy, Debug)]
pub(super) enum Order {
    /// Az1: item, user, time.
    ItemUserTime,
    /// Az2: user, item, time.
    UserItemTime,
}

/// First and last review day (days since 1970-01-01): 1999-01-01 to 2014-07-23.
const DAYS: (u64, u64) = (10_592, 16_274);

fn item_id(rank: u64, out: &mut Vec<u8>) {
    let h = mix64(rank ^ 0x17E5);
    if h % 10 < 7 {
        // ASIN: B0 + a generation digit + 7 base-36 characters.
        out.extend_from_slice(b"B0");
        out.push([b'0', b'0', b'0', b'1', b'7'][(h >> 8) as usize % 5]);
        base36(h >> 16, 7, out);
    } else {
        // ISBN-10: 9 digits and a check character.
        let mut x = h >> 4;
        out.push(b'0' + (x % 2) as u8);
        for _ in 0..8 {
            x /= 10;
            out.push(b'0' + (x % 10) as u8);
        }
        out.push(if x % 11 == 10 {
            b'X'
        } else {
            b'0' + (x % 10) as u8
        });
    }
}

fn user_id(rank: u64, out: &mut Vec<u8>) {
    let h = mix64(rank ^ 0x05E8);
    out.push(b'A');
    let len = if h % 10 < 7 { 13 } else { 20 };
    base36(h >> 8, len, out);
}

/// A generator of `az` (or `az2`) keys for a dataset of about `n` keys.
pub(super) fn generator(n: usize, order: Order, rng: &mut Rng) -> KeyGen {
    let items = Zipf::new((n as u64 / 6).max(100), 0.9);
    let users = Zipf::new((n as u64 / 3).max(100), 0.7);
    // Catalogue ranks are scrambled per seed so two seeds give different popular items.
    let salt = rng.next_u64();
    Box::new(move |rng, out| {
        let item = items.sample(rng.f64()) ^ salt;
        let user = users.sample(rng.f64()) ^ salt;
        let day = rng.range_incl(DAYS.0, DAYS.1);
        match order {
            Order::ItemUserTime => {
                item_id(item, out);
                out.push(b'|');
                user_id(user, out);
            }
            Order::UserItemTime => {
                user_id(user, out);
                out.push(b'|');
                item_id(item, out);
            }
        }
        out.push(b'|');
        out.extend_from_slice((day * 86_400).to_string().as_bytes());
    })
}
