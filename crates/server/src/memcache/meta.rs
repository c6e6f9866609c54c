//! The meta protocol's parser (`mg`, `ms`, `md`, `ma`, `mn`, `me`): a command, a key
//! (base64 with the `b` flag), then one-letter flags, some with a token (`T30`, `Oabc`);
//! read into a [`MetaRequest`] with memcached 1.6's checks and error replies (duplicate and
//! unknown flags, opaque length, the `M` mode letter). Running them is
//! `super::meta_cmd`'s job.
//!
//! Flags whose output depends on their position (`t` before or after `T`, the order of `O`
//! and `k` in the reply) are kept in request order in [`MetaRequest::flags`].

use std::borrow::Cow;

use super::parse::Request;
use super::token::{BAD_FORMAT, KEY_MAX, Limits, Tokens, strtol32, strtoul32, strtoull};

/// memcached's `MFLAG_MAX_OPT_LENGTH`: most tokens of a meta command.
const MAX_OPT_TOKENS: usize = 20;

/// memcached's `MFLAG_MAX_OPAQUE_LENGTH`.
pub(crate) const MAX_OPAQUE: usize = 32;

/// Which meta command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verb {
    /// `mg`.
    Get,
    /// `ms`.
    Set,
    /// `md`.
    Delete,
    /// `ma`.
    Arith,
}

/// The flags of a meta command, decoded (memcached's `struct _meta_flags`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    /// `u`: no LRU bump.
    pub(crate) no_update: bool,
    /// `N`: create on miss.
    pub(crate) vivify: bool,
    /// `v`: return the value.
    pub(crate) value: bool,
    /// `I`: invalidate (mark stale) instead of failing/deleting.
    pub(crate) set_stale: bool,
    /// `q`: quiet (the nominal reply is not sent).
    pub(crate) no_reply: bool,
    /// `C`: compare this CAS.
    pub(crate) cas: Option<u64>,
    /// `T`: the new TTL (client exptime).
    pub(crate) ttl: Option<i64>,
    /// `N`'s TTL.
    pub(crate) vivify_ttl: i64,
    /// `R`'s TTL: win the recache token below it.
    pub(crate) recache: Option<i64>,
    /// `b`: the key was base64.
    pub(crate) binary: bool,
    /// `M`: the mode letter.
    pub(crate) mode: Option<u8>,
    /// `F`: client flags (`ms`).
    pub(crate) client_flags: u32,
    /// `D`: delta (`ma`, default 1).
    pub(crate) delta: u64,
    /// `J`: initial value (`ma`).
    pub(crate) initial: u64,
}

/// A parsed meta command.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct MetaRequest<'a> {
    pub(crate) verb: Verb,
    /// The key (base64-decoded under `b`).
    pub(crate) key: Cow<'a, [u8]>,
    /// The flag tokens after the key (and after `ms`'s length), in request order.
    pub(crate) flags: Vec<&'a [u8]>,
    pub(crate) of: Flags,
    /// `ms`'s data.
    pub(crate) data: &'a [u8],
}

/// The result of framing a meta command (`extra`: bytes used after the line, `ms`'s data).
pub(crate) enum Framed<'a> {
    /// A request (or an error reply, or `mn`/`me`) and the bytes after the line it took.
    Request(Request<'a>, usize),
    /// `ms` waits for its data.
    Incomplete,
}

fn err(text: &'static str) -> Framed<'static> {
    Framed::Request(
        Request::Reply {
            text,
            noreply: false,
        },
        0,
    )
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding; `None` when malformed or empty.
pub(crate) fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    if s.is_empty() || !s.len().is_multiple_of(4) {
        return None;
    }
    let val = |c: u8| B64.iter().position(|&b| b == c).map(|v| v as u32);
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (i, q) in s.chunks(4).enumerate() {
        let last = i == s.len() / 4 - 1;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out).filter(|o| !o.is_empty())
}

/// Standard base64 with padding.
pub(crate) fn base64_encode(data: &[u8], out: &mut Vec<u8>) {
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[(n >> (18 - 6 * i)) as usize & 63]);
            } else {
                out.push(b'=');
            }
        }
    }
}

/// memcached's `_meta_flag_preparse`: the flags from `tokens`, or the error text.
fn preparse<'a>(
    tokens: &[&'a [u8]],
    key: &mut Cow<'a, [u8]>,
    of: &mut Flags,
) -> Result<(), &'static str> {
    let mut seen = [false; 128];
    let mut error: Option<&'static str> = None;
    let mut has_error = false;
    let num = |t: &[u8]| strtol32(&t[1..]).map(i64::from);
    for t in tokens {
        let o = t[0];
        if o >= 127 || seen[o as usize] {
            return Err("CLIENT_ERROR duplicate flag");
        }
        seen[o as usize] = true;
        match o {
            b'b' => {
                match base64_decode(key) {
                    Some(k) => *key = Cow::Owned(k),
                    None => {
                        error = Some("CLIENT_ERROR error decoding key");
                        has_error = true;
                        *key = Cow::Owned(Vec::new());
                    }
                }
                of.binary = true;
            }
            b'N' => {
                of.vivify = true;
                match num(t) {
                    Some(v) => of.vivify_ttl = v,
                    None => {
                        error = Some("CLIENT_ERROR bad token in command line format");
                        has_error = true;
                    }
                }
            }
            b'T' => match num(t) {
                Some(v) => of.ttl = Some(v),
                None => {
                    error = Some("CLIENT_ERROR bad token in command line format");
                    has_error = true;
                }
            },
            b'R' => match num(t) {
                Some(v) => of.recache = Some(v),
                None => {
                    error = Some("CLIENT_ERROR bad token in command line format");
                    has_error = true;
                }
            },
            b'l' | b'O' | b'P' | b'L' | b'k' | b's' | b't' | b'c' | b'f' | b'h' => {}
            b'v' => of.value = true,
            b'u' => of.no_update = true,
            b'q' => of.no_reply = true,
            b'F' => match strtoul32(&t[1..]) {
                Some(f) => of.client_flags = f,
                None => has_error = true,
            },
            b'C' => match strtoull(&t[1..]) {
                Some(c) => of.cas = Some(c),
                None => {
                    error = Some("CLIENT_ERROR bad token in command line format");
                    has_error = true;
                }
            },
            b'M' => {
                if t.len() != 2 {
                    error = Some("CLIENT_ERROR incorrect length for M token");
                    has_error = true;
                } else {
                    of.mode = Some(t[1]);
                }
            }
            b'J' => match strtoull(&t[1..]) {
                Some(v) => of.initial = v,
                None => {
                    error = Some("CLIENT_ERROR invalid numeric initial value");
                    has_error = true;
                }
            },
            b'D' => match strtoull(&t[1..]) {
                Some(v) => of.delta = v,
                None => {
                    error = Some("CLIENT_ERROR invalid numeric delta value");
                    has_error = true;
                }
            },
            b'I' => of.set_stale = true,
            _ => return Err("CLIENT_ERROR invalid flag"),
        }
    }
    if has_error {
        Err(error.unwrap_or(BAD_FORMAT))
    } else {
        Ok(())
    }
}

/// Parses meta command `m<letter>` from its line's tokens; `after` is the buffer after the
/// line (`ms`'s data).
pub(crate) fn parse<'a>(
    letter: u8,
    t: &Tokens<'a>,
    after: &'a [u8],
    limits: &Limits,
) -> Framed<'a> {
    let n = t.n();
    let verb = match letter {
        b'g' => Verb::Get,
        b's' => Verb::Set,
        b'd' => Verb::Delete,
        b'a' => Verb::Arith,
        b'n' => {
            return Framed::Request(
                Request::Reply {
                    text: "MN",
                    noreply: false,
                },
                0,
            );
        }
        b'e' => return parse_me(t),
        _ => return err("ERROR"),
    };
    if n < 3 {
        return err("ERROR");
    }
    if t.words[1].len() > KEY_MAX {
        return err(BAD_FORMAT);
    }
    let mut key = Cow::Borrowed(t.words[1]);
    let mut of = Flags {
        delta: 1,
        ..Flags::default()
    };
    match verb {
        Verb::Get | Verb::Delete | Verb::Arith => {
            if n > MAX_OPT_TOKENS {
                return err(if verb == Verb::Get {
                    "CLIENT_ERROR options flags are too long"
                } else {
                    "CLIENT_ERROR options flags too long"
                });
            }
            let flags = t.words[2..].to_vec();
            if let Err(e) = preparse(&flags, &mut key, &mut of) {
                return err(if verb == Verb::Get {
                    e
                } else {
                    "CLIENT_ERROR invalid or duplicate flag"
                });
            }
            if verb == Verb::Arith && !matches!(of.mode, None | Some(b'I' | b'+' | b'D' | b'-')) {
                return err("CLIENT_ERROR invalid mode for ma M token");
            }
            // `mg` and `ma` find an over-long opaque while they build the reply, after
            // the flags before it took effect (`super::meta_cmd`); `md` before anything.
            if verb == Verb::Delete && flags.iter().any(|f| f[0] == b'O' && f.len() > MAX_OPAQUE) {
                return err("CLIENT_ERROR opaque token too long");
            }
            Framed::Request(
                Request::Meta(MetaRequest {
                    verb,
                    key,
                    flags,
                    of,
                    data: &[],
                }),
                0,
            )
        }
        Verb::Set => parse_ms(t, key, of, after, limits),
    }
}

fn parse_ms<'a>(
    t: &Tokens<'a>,
    mut key: Cow<'a, [u8]>,
    mut of: Flags,
    after: &'a [u8],
    limits: &Limits,
) -> Framed<'a> {
    let n = t.n();
    if n == 3 {
        return err(BAD_FORMAT);
    }
    if n > MAX_OPT_TOKENS {
        return err("CLIENT_ERROR options flags too long");
    }
    let Some(vlen) = strtol32(t.words[2]).filter(|&v| (0..=i32::MAX - 2).contains(&v)) else {
        return err(BAD_FORMAT);
    };
    let swallow = vlen as usize + 2;
    let fail = |text: &'static str| {
        Framed::Request(
            Request::TooLarge {
                key: &[],
                drop_old: false,
                noreply: false,
                swallow,
            },
            0,
        )
        .with_text(text)
    };
    let flags = t.words[3..].to_vec();
    if let Err(e) = preparse(&flags, &mut key, &mut of) {
        return fail(e);
    }
    // memcached checks the mode before it reports an over-long opaque.
    if !matches!(of.mode, None | Some(b'E' | b'A' | b'P' | b'R' | b'S')) {
        return fail("CLIENT_ERROR invalid mode for ms M token");
    }
    if t.words[2..]
        .iter()
        .any(|f| f[0] == b'O' && f.len() > MAX_OPAQUE)
    {
        return fail("CLIENT_ERROR opaque token too long");
    }
    let suffix = if of.client_flags != 0 { 4 } else { 0 };
    if key.len() + vlen as usize + suffix + super::store::MEMCACHED_ITEM_OVERHEAD > limits.max_item
    {
        // memcached drops the stored item whatever the mode.
        return Framed::Request(Request::MetaTooLarge { key, swallow }, 0);
    }
    let vlen = vlen as usize;
    if after.len() < vlen + 2 {
        return Framed::Incomplete;
    }
    if &after[vlen..vlen + 2] != b"\r\n" {
        return Framed::Request(
            Request::Reply {
                text: "CLIENT_ERROR bad data chunk",
                noreply: false,
            },
            vlen + 2,
        );
    }
    Framed::Request(
        Request::Meta(MetaRequest {
            verb: Verb::Set,
            key,
            flags: t.words[2..].to_vec(),
            of,
            data: &after[..vlen],
        }),
        vlen + 2,
    )
}

fn parse_me<'a>(t: &Tokens<'a>) -> Framed<'a> {
    if t.n() < 3 || t.words[1].len() > KEY_MAX {
        return err(BAD_FORMAT);
    }
    let mut key = Cow::Borrowed(t.words[1]);
    let binary = t.n() >= 4 && t.words[2] == b"b";
    if binary {
        match base64_decode(&key) {
            Some(k) => key = Cow::Owned(k),
            None => return err(BAD_FORMAT),
        }
    }
    Framed::Request(Request::Debug { key, binary }, 0)
}

impl<'a> Framed<'a> {
    /// A swallowing error: the reply text replaces the placeholder.
    fn with_text(self, text: &'static str) -> Framed<'a> {
        match self {
            Framed::Request(Request::TooLarge { swallow, .. }, used) => {
                Framed::Request(Request::Swallow { text, swallow }, used)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_rejects() {
        for data in [&b"a"[..], b"ab", b"abc", b"abcd", b"\x00\xff\x10 k"] {
            let mut enc = Vec::new();
            base64_encode(data, &mut enc);
            assert_eq!(base64_decode(&enc).as_deref(), Some(data));
        }
        let mut enc = Vec::new();
        base64_encode(b"foo", &mut enc);
        assert_eq!(enc, b"Zm9v");
        for bad in [&b""[..], b"abc", b"a===", b"ab=c", b"Zm9v!!!!", b"====Zm9v"] {
            assert_eq!(
                base64_decode(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn flags_and_errors() {
        let limits = Limits {
            max_item: 1 << 20,
            max_get_line: 1 << 20,
        };
        let req = |line: &'static [u8]| {
            let t = Tokens::split(line);
            match parse(t.words[0][1], &t, b"", &limits) {
                Framed::Request(r, _) => r,
                Framed::Incomplete => panic!(),
            }
        };
        let Request::Meta(m) = req(b"mg Zm9v b v T30 Oxy") else {
            panic!()
        };
        assert_eq!(&*m.key, b"foo");
        assert!(m.of.value && m.of.binary);
        assert_eq!(m.of.ttl, Some(30));
        let text = |r: Request<'_>| match r {
            Request::Reply { text, .. } => text,
            Request::Swallow { text, .. } => text,
            other => panic!("{other:?}"),
        };
        assert_eq!(text(req(b"mg k v v")), "CLIENT_ERROR duplicate flag");
        assert_eq!(text(req(b"mg k !")), "CLIENT_ERROR invalid flag");
        assert_eq!(
            text(req(b"md k !")),
            "CLIENT_ERROR invalid or duplicate flag"
        );
        assert_eq!(
            text(req(b"mg k Tx")),
            "CLIENT_ERROR bad token in command line format"
        );
        assert_eq!(
            text(req(b"ma k MX")),
            "CLIENT_ERROR invalid mode for ma M token"
        );
        assert_eq!(
            text(req(b"ms k 2 MX")),
            "CLIENT_ERROR invalid mode for ms M token"
        );
        assert_eq!(text(req(b"ms k")), BAD_FORMAT);
        assert_eq!(text(req(b"mg")), "ERROR");
        assert_eq!(text(req(b"mn")), "MN");
        assert_eq!(text(req(b"mz k")), "ERROR");
    }
}
