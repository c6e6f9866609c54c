//! Runs the meta commands (`mg`, `ms`, `md`, `ma`, `me`) parsed by `super::meta`, with
//! memcached 1.6's replies: status codes `HD`/`VA`/`EN`/`NS`/`EX`/`NF`, return flags in
//! request order, the stale-while-revalidate marks (`W` win, `Z` token already sent, `X`
//! stale), quiet mode (`q`) eliding the nominal reply.

use super::counters::Stat;
use super::exec::Ctx;
use super::item::{self, FETCHED, KEY_BINARY, Meta, STALE, TOKEN_SENT};
use super::meta::{MAX_OPAQUE, MetaRequest, Verb, base64_encode};
use super::reply;
use super::store::{Change, Delta, Loaded, Mode, Stored, Write};

/// Writes ` k<key>` (base64 and ` b` for a binary key).
fn key_flag(out: &mut Vec<u8>, key: &[u8], binary: bool) {
    out.extend_from_slice(b" k");
    if binary {
        base64_encode(key, out);
        out.extend_from_slice(b" b");
    } else {
        out.extend_from_slice(key);
    }
}

const OPAQUE_TOO_LONG: &str = "CLIENT_ERROR opaque token too long";

/// Writes the `O` and `k` flags of a reply that has no item; `false` (nothing written)
/// when an opaque token is too long.
fn opaque_and_key(out: &mut Vec<u8>, m: &MetaRequest<'_>) -> bool {
    let mark = out.len();
    for f in &m.flags {
        match f[0] {
            b'O' if f.len() > MAX_OPAQUE => {
                out.truncate(mark);
                return false;
            }
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(f);
            }
            b'k' => key_flag(out, &m.key, m.of.binary),
            _ => {}
        }
    }
    true
}

/// Writes ` t<seconds left>` (`-1`: no expiry), as memcached's unsigned print.
fn ttl_flag(out: &mut Vec<u8>, expiry: u32, now: u32) {
    out.extend_from_slice(b" t");
    if expiry == 0 {
        out.extend_from_slice(b"-1");
    } else {
        reply::num(out, u64::from(expiry.wrapping_sub(now)));
    }
}

/// Runs one of `mg`, `ms`, `md`, `ma`.
pub(crate) fn run(ctx: &mut Ctx<'_>, m: MetaRequest<'_>) {
    match m.verb {
        Verb::Get => mg(ctx, &m),
        Verb::Set => ms(ctx, &m),
        Verb::Delete => md(ctx, &m),
        Verb::Arith => ma(ctx, &m),
    }
}

/// How `mg` ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hit {
    Found,
    Miss,
    /// An error reply replaced the item's (an over-long opaque).
    Error,
}

fn mg(ctx: &mut Ctx<'_>, m: &MetaRequest<'_>) {
    let now = ctx.now;
    let of = &m.of;
    let out = &mut *ctx.out;
    let mut ttl_set = false;
    let hit = ctx
        .mc
        .items
        .update(&m.key, now, ctx.tally, |old, next_cas| {
            let mut created = false;
            let mut it = old;
            if it.is_none() && of.vivify {
                it = Some(Loaded {
                    meta: Meta {
                        cas: next_cas(),
                        atime: item::tick(now.clock),
                        ..Meta::default()
                    },
                    data: Vec::new(),
                });
                created = true;
            }
            let Some(mut l) = it else {
                return (Change::Keep, Hit::Miss);
            };
            let before = l.meta;
            // Without a flag that needs the item locked (`N`, `T`, `R`, `l`, `h`),
            // memcached refreshes the item as it fetches it, before the reply is built.
            let locked = of.vivify
                || of.ttl.is_some()
                || of.recache.is_some()
                || m.flags.iter().any(|f| matches!(f[0], b'l' | b'h'));
            if !locked && !of.no_update {
                l.meta.state |= FETCHED;
                l.meta.atime = item::tick(now.clock);
            }
            let mark = out.len();
            if of.value {
                out.extend_from_slice(b"VA ");
                reply::num(out, l.data.len() as u64);
            } else {
                out.extend_from_slice(b"HD");
            }
            let mut won = false;
            for f in &m.flags {
                match f[0] {
                    b'T' => {
                        ttl_set = true;
                        l.meta.expiry = now.expiry(of.ttl.unwrap_or(0));
                    }
                    b'N' if created => {
                        l.meta.expiry = now.expiry(of.vivify_ttl);
                        won = true;
                    }
                    b'R' => {
                        let recache = now.expiry(of.recache.unwrap_or(0));
                        if l.meta.state & TOKEN_SENT == 0
                            && !created
                            && l.meta.expiry != 0
                            && l.meta.expiry < recache
                        {
                            won = true;
                        }
                    }
                    b's' => {
                        out.extend_from_slice(b" s");
                        reply::num(out, l.data.len() as u64);
                    }
                    b't' => ttl_flag(out, l.meta.expiry, now.secs),
                    b'c' => {
                        out.extend_from_slice(b" c");
                        reply::num(out, l.meta.cas);
                    }
                    b'f' => {
                        out.extend_from_slice(b" f");
                        reply::num(out, u64::from(l.meta.flags));
                    }
                    b'l' => {
                        out.extend_from_slice(b" l");
                        reply::num(out, item::idle_ms(now.clock, l.meta.atime) / 1000);
                    }
                    b'h' => out.extend_from_slice(if l.meta.state & FETCHED != 0 {
                        b" h1"
                    } else {
                        b" h0"
                    }),
                    b'O' if f.len() > MAX_OPAQUE => {
                        // memcached stops here: what the flags before did stays.
                        out.truncate(mark);
                        reply::line(out, OPAQUE_TOO_LONG);
                        let change = if created || l.meta != before {
                            Change::Put(l.meta, l.data)
                        } else {
                            Change::Keep
                        };
                        return (change, Hit::Error);
                    }
                    b'O' => {
                        out.push(b' ');
                        out.extend_from_slice(f);
                    }
                    b'k' => key_flag(out, &m.key, l.meta.state & KEY_BINARY != 0),
                    _ => {}
                }
            }
            if l.meta.state & TOKEN_SENT != 0 {
                out.extend_from_slice(b" Z");
            }
            if l.meta.state & STALE != 0 {
                out.extend_from_slice(b" X");
                if l.meta.state & TOKEN_SENT == 0 {
                    won = true;
                }
            }
            if won {
                out.extend_from_slice(b" W");
                l.meta.state |= TOKEN_SENT;
            }
            out.extend_from_slice(b"\r\n");
            if of.value {
                out.extend_from_slice(&l.data);
                out.extend_from_slice(b"\r\n");
            }
            if !of.no_update {
                l.meta.state |= FETCHED;
                l.meta.atime = item::tick(now.clock);
            }
            if created || l.meta != before {
                (Change::Put(l.meta, l.data), Hit::Found)
            } else {
                (Change::Keep, Hit::Found)
            }
        });
    let t = &mut *ctx.tally;
    if hit == Hit::Error {
        return;
    }
    if hit == Hit::Found {
        if ttl_set {
            t.bump(Stat::cmd_touch);
            t.bump(Stat::touch_hits);
        } else {
            t.bump(Stat::get_hits);
            t.bump(Stat::cmd_get);
        }
    } else {
        t.bump(Stat::get_misses);
        t.bump(Stat::cmd_get);
        let mark = ctx.out.len();
        ctx.out.extend_from_slice(b"EN");
        if !opaque_and_key(ctx.out, m) {
            ctx.out.truncate(mark);
            reply::line(ctx.out, OPAQUE_TOO_LONG);
        } else if of.no_reply {
            ctx.out.truncate(mark);
        } else {
            ctx.out.extend_from_slice(b"\r\n");
        }
    }
}

fn ms(ctx: &mut Ctx<'_>, m: &MetaRequest<'_>) {
    let of = &m.of;
    ctx.tally.bump(Stat::cmd_set);
    let mut mode = match of.mode {
        Some(b'E') => Mode::Add,
        Some(b'A') => Mode::Append,
        Some(b'P') => Mode::Prepend,
        Some(b'R') => Mode::Replace,
        _ => Mode::Set,
    };
    if of.cas.is_some() && matches!(mode, Mode::Set | Mode::Replace) {
        mode = Mode::Cas;
    }
    let w = Write {
        mode,
        flags: of.client_flags,
        expiry: ctx.now.expiry(of.ttl.unwrap_or(0)),
        data: m.data,
        cas: of.cas.unwrap_or(0),
        set_stale: of.set_stale && mode == Mode::Cas,
        binary: of.binary,
    };
    let r = ctx.mc.items.store(&m.key, &w, ctx.now, ctx.tally);
    let (code, cas): (&[u8], u64) = match r {
        Stored::Stored(cas) => {
            if of.no_reply {
                return;
            }
            (b"HD", cas)
        }
        Stored::NotStored => (b"NS", 0),
        Stored::Exists => (b"EX", 0),
        Stored::NotFound => (b"NF", 0),
        Stored::NoMemory => {
            ctx.mc.items.drop_key(&m.key);
            reply::line(ctx.out, "SERVER_ERROR out of memory storing object");
            return;
        }
    };
    let out = &mut *ctx.out;
    out.extend_from_slice(code);
    for f in &m.flags {
        match f[0] {
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(f);
            }
            b'k' => key_flag(out, &m.key, of.binary),
            b'c' => {
                out.extend_from_slice(b" c");
                reply::num(out, cas);
            }
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
}

fn md(ctx: &mut Ctx<'_>, m: &MetaRequest<'_>) {
    let of = &m.of;
    let now = ctx.now;
    let code: &[u8] = ctx
        .mc
        .items
        .update(&m.key, now, ctx.tally, |old, next_cas| match old {
            None => (Change::Keep, &b"NF"[..]),
            Some(l) if of.cas.is_some_and(|c| c != l.meta.cas) => (Change::Keep, &b"EX"[..]),
            Some(mut l) if of.set_stale => {
                if let Some(ttl) = of.ttl {
                    l.meta.expiry = now.expiry(ttl);
                }
                l.meta.state = (l.meta.state | STALE) & !TOKEN_SENT;
                l.meta.cas = next_cas();
                (Change::Put(l.meta, l.data), &b"HD"[..])
            }
            Some(_) => (Change::Remove, &b"DL"[..]),
        });
    let code: &[u8] = match code {
        b"DL" => {
            ctx.tally.bump(Stat::delete_hits);
            b"HD"
        }
        b"HD" => b"HD",
        other => {
            ctx.tally.bump(Stat::delete_misses);
            other
        }
    };
    if code == b"HD" && of.no_reply {
        return;
    }
    ctx.out.extend_from_slice(code);
    opaque_and_key(ctx.out, m);
    ctx.out.extend_from_slice(b"\r\n");
}

fn ma(ctx: &mut Ctx<'_>, m: &MetaRequest<'_>) {
    let of = &m.of;
    let now = ctx.now;
    let items = &ctx.mc.items;
    let incr = !matches!(of.mode, Some(b'D' | b'-'));
    let mut created = false;
    let mark = ctx.out.len();
    let found = match items.delta(&m.key, incr, of.delta, of.cas.unwrap_or(0), now, ctx.tally) {
        Delta::Done(v, meta) => Some((v, meta)),
        Delta::NonNumeric => {
            reply::line(
                ctx.out,
                "CLIENT_ERROR cannot increment or decrement non-numeric value",
            );
            return;
        }
        Delta::NoMemory => {
            reply::line(ctx.out, "SERVER_ERROR out of memory");
            return;
        }
        Delta::CasMismatch => {
            ctx.out.extend_from_slice(b"EX");
            None
        }
        Delta::NotFound if of.vivify => {
            let digits = of.initial.to_string();
            let w = Write {
                mode: Mode::Add,
                flags: 0,
                expiry: 0,
                data: digits.as_bytes(),
                cas: 0,
                set_stale: false,
                binary: false,
            };
            match items.store(&m.key, &w, now, ctx.tally) {
                Stored::Stored(cas) => {
                    created = true;
                    Some((
                        of.initial,
                        Meta {
                            cas,
                            atime: item::tick(now.clock),
                            ..Meta::default()
                        },
                    ))
                }
                _ => {
                    ctx.out.extend_from_slice(b"NS");
                    None
                }
            }
        }
        Delta::NotFound => {
            ctx.tally.bump(if incr {
                Stat::incr_misses
            } else {
                Stat::decr_misses
            });
            ctx.out.extend_from_slice(b"NF");
            None
        }
    };
    let Some((value, mut meta)) = found else {
        if opaque_and_key(ctx.out, m) {
            ctx.out.extend_from_slice(b"\r\n");
        } else {
            ctx.out.truncate(mark);
            reply::line(ctx.out, OPAQUE_TOO_LONG);
        }
        return;
    };
    let digits = value.to_string();
    let mut line = Vec::new();
    if of.value {
        line.extend_from_slice(b"VA ");
        reply::num(&mut line, digits.len() as u64);
    } else {
        line.extend_from_slice(b"HD");
    }
    let expiry_before = meta.expiry;
    let mut opaque_error = false;
    for f in &m.flags {
        match f[0] {
            b'c' => {
                line.extend_from_slice(b" c");
                reply::num(&mut line, meta.cas);
            }
            b't' => ttl_flag(&mut line, meta.expiry, now.secs),
            b'T' => meta.expiry = now.expiry(of.ttl.unwrap_or(0)),
            b'N' if created => meta.expiry = now.expiry(of.vivify_ttl),
            b'O' if f.len() > MAX_OPAQUE => {
                opaque_error = true;
                break;
            }
            b'O' => {
                line.push(b' ');
                line.extend_from_slice(f);
            }
            b'k' => key_flag(&mut line, &m.key, of.binary),
            _ => {}
        }
    }
    if meta.expiry != expiry_before {
        let expiry = meta.expiry;
        let cas = meta.cas;
        items.update(&m.key, now, ctx.tally, |old, _| match old {
            Some(mut l) if l.meta.cas == cas => {
                l.meta.expiry = expiry;
                (Change::Put(l.meta, l.data), ())
            }
            _ => (Change::Keep, ()),
        });
    }
    if opaque_error {
        reply::line(ctx.out, OPAQUE_TOO_LONG);
        return;
    }
    // memcached's `q` elides a successful `ma`, not one that created the item.
    if of.no_reply && !created {
        return;
    }
    if of.value {
        line.extend_from_slice(b"\r\n");
        line.extend_from_slice(digits.as_bytes());
    }
    line.extend_from_slice(b"\r\n");
    ctx.out.extend_from_slice(&line);
}

/// `me key [b]`: memcached's debug line for an item (its slab class is reported as 1 and
/// its size as memcached would count it: the item here has no slab).
pub(crate) fn debug(ctx: &mut Ctx<'_>, key: &[u8], binary: bool) {
    let mut found = None;
    ctx.mc
        .items
        .read_many(&[key], ctx.now, false, ctx.tally, &mut |_, v| {
            found = v.map(|(m, d)| (*m, d.len()))
        });
    let out = &mut *ctx.out;
    let Some((meta, len)) = found else {
        reply::line(out, "EN");
        return;
    };
    out.extend_from_slice(b"ME ");
    let _ = binary;
    if meta.state & KEY_BINARY != 0 {
        base64_encode(key, out);
    } else {
        out.extend_from_slice(key);
    }
    out.extend_from_slice(b" exp=");
    if meta.expiry == 0 {
        out.extend_from_slice(b"-1");
    } else {
        reply::signed(out, i64::from(ctx.now.secs) - i64::from(meta.expiry));
    }
    out.extend_from_slice(b" la=");
    reply::num(out, item::idle_ms(ctx.now.clock, meta.atime) / 1000);
    out.extend_from_slice(b" cas=");
    reply::num(out, meta.cas);
    out.extend_from_slice(if meta.state & FETCHED != 0 {
        b" fetch=yes"
    } else {
        b" fetch=no"
    });
    out.extend_from_slice(b" cls=1 size=");
    let suffix = if meta.flags != 0 { 4 } else { 0 };
    reply::num(
        out,
        (key.len() + len + suffix + super::store::MEMCACHED_ITEM_OVERHEAD) as u64,
    );
    out.extend_from_slice(b"\r\n");
}
