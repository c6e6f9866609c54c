//! `OBJECT ENCODING`/`REFCOUNT`/`FREQ`/`IDLETIME` and `MEMORY USAGE`: how a key's value
//! is held. `FREQ` and `IDLETIME` read the key's access field (`crate::memory::lfu`)
//! without refreshing it; as Redis, `FREQ` answers only under an LFU policy and
//! `IDLETIME` only under another.
//!
//! Encodings use Redis's names: a string is `int`, `embstr` (up to 44 bytes) or `raw`
//! (by its bytes: Redis also keeps a string raw after `APPEND`, this server does not
//! track that); a hash `listpack` or `hashtable`; a set `intset`, `listpack` or
//! `hashtable`; a sorted set `listpack` or `skiplist`; a list `listpack` or `quicklist`
//! (Redis 7.2's names; 7.0 says `quicklist` for every list). The compact forms are
//! Orrery's own (`crate::layout`), the large ones the shared element index: the names say
//! which side of Redis's thresholds a value is on, not Redis's data structure.
//!
//! `MEMORY USAGE` estimates the bytes a key costs: its key and value bytes in the index
//! plus the index's structure bytes per key; for a large collection, its element count
//! times the average size of the first `SAMPLES` elements (default 5; 0: all), each with
//! the element index's structure bytes per pair.

use std::ops::ControlFlow;

use super::{Command, Ctx, not_integer, syntax_error};
use crate::coll::{Hash, List, Set, ZSet};
use crate::layout::id_prefix;
use crate::memory::lfu;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::{Enc, Kind, header, large_id};

/// `OBJECT ENCODING key`, `OBJECT REFCOUNT key`.
pub(super) struct Object<'a> {
    sub: Sub,
    key: &'a [u8],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sub {
    Encoding,
    RefCount,
    Freq,
    IdleTime,
}

impl<'a> Command<'a> for Object<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let sub = match &args[1].to_ascii_uppercase()[..] {
            b"ENCODING" => Sub::Encoding,
            b"REFCOUNT" => Sub::RefCount,
            b"FREQ" => Sub::Freq,
            b"IDLETIME" => Sub::IdleTime,
            _ => {
                return Err(Reply::err(format!(
                    "ERR unknown subcommand '{}'. Try OBJECT HELP.",
                    String::from_utf8_lossy(&args[1])
                )));
            }
        };
        if args.len() != 3 {
            return Err(super::arity_error(match sub {
                Sub::Encoding => "object|encoding",
                Sub::RefCount => "object|refcount",
                Sub::Freq => "object|freq",
                Sub::IdleTime => "object|idletime",
            }));
        }
        Ok(Object { sub, key: &args[2] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        let sub = self.sub;
        if matches!(sub, Sub::Freq | Sub::IdleTime) {
            return access(ctx, key, sub);
        }
        ctx.store().write(&[key], ctx.call, |t| {
            let Some(e) = t.load(key) else {
                return Reply::Nil;
            };
            if sub == Sub::RefCount {
                return Reply::Int(1);
            }
            let name = match e.kind {
                Kind::String => string_encoding(&e.payload),
                Kind::Hash => Hash::open(t, key)
                    .ok()
                    .flatten()
                    .map_or("", |h| h.encoding()),
                Kind::Set => Set::open(t, key)
                    .ok()
                    .flatten()
                    .map_or("", |s| s.encoding()),
                Kind::ZSet => ZSet::open(t, key)
                    .ok()
                    .flatten()
                    .map_or("", |z| z.encoding()),
                Kind::List => List::open(t, key)
                    .ok()
                    .flatten()
                    .map_or("", |l| l.encoding()),
            };
            Reply::bulk(name)
        })
    }
}

/// `OBJECT FREQ`/`IDLETIME`: the key's access field, read without refreshing it.
fn access(ctx: &Ctx<'_>, key: &[u8], sub: Sub) -> Reply {
    let store = ctx.store();
    let memory = store.memory();
    let lfu = memory.policy().lfu();
    let now = ctx.now();
    let mut field = None;
    store.kv().get_with(key, &mut |v| {
        if let Some(h) = header(v).filter(|h| h.deadline.is_none_or(|d| d > now)) {
            field = Some(h.access.unwrap_or(0));
        }
    });
    let Some(a) = field else {
        return Reply::Nil;
    };
    match sub {
        Sub::Freq if !lfu => Reply::err(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
        Sub::Freq => Reply::Int(i64::from(lfu::counter(
            a,
            now / 1000,
            memory.lfu_params().1,
        ))),
        _ if lfu => Reply::err(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
        _ => Reply::Int(lfu::idle_secs(a, now / 1000) as i64),
    }
}

fn string_encoding(v: &[u8]) -> &'static str {
    if v.len() <= 20 && parse_i64(v).is_some() {
        "int"
    } else if v.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

/// `MEMORY USAGE key [SAMPLES count]`.
pub(super) struct MemoryUsage<'a> {
    key: &'a [u8],
    samples: usize,
}

impl<'a> Command<'a> for MemoryUsage<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        if !args[1].eq_ignore_ascii_case(b"usage") {
            return Err(Reply::err(format!(
                "ERR unknown subcommand '{}'. Try MEMORY HELP.",
                String::from_utf8_lossy(&args[1])
            )));
        }
        let Some(key) = args.get(2) else {
            return Err(super::arity_error("memory|usage"));
        };
        let mut samples = 5;
        match &args[3..] {
            [] => {}
            [o, n] if o.eq_ignore_ascii_case(b"samples") => {
                samples = match parse_i64(n) {
                    Some(n) if n >= 0 => n as usize,
                    Some(_) => return Err(syntax_error()),
                    None => return Err(not_integer()),
                };
            }
            _ => return Err(syntax_error()),
        }
        Ok(MemoryUsage { key, samples })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let store = ctx.store();
        let key = self.key;
        let Some(raw) = store
            .read(key, ctx.call, |_, _, _| ())
            .and_then(|()| store.kv().get(key))
        else {
            return Reply::Nil;
        };
        let m = store.kv().memory_usage();
        let per_key = m.structure_bytes / store.kv().len().max(1);
        let mut total = key.len() + raw.len() + per_key;
        if let Some(h) = header(&raw) {
            // A large string's bytes, out of line.
            total += store.blob_len(h, &raw);
        }
        if let Some(h) = header(&raw)
            && h.enc == Enc::Large
            && let Some(id) = large_id(h.enc, &raw[h.at..])
            && let Some(meta) = store.large(id)
        {
            let (mut n, mut bytes) = (0usize, 0usize);
            let mut sample = |k: &[u8], v: &[u8]| {
                n += 1;
                bytes += k.len() + v.len();
                if self.samples > 0 && n >= self.samples {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            };
            let per_pair = if h.kind == Kind::List {
                let p = store.positions();
                let (bytes, nodes) = crate::coll::list_footprint(p, id, &meta);
                let per_node = p.memory_usage().structure_bytes / p.len().max(1);
                total += bytes + nodes * (16 + per_node);
                return Reply::Int(total as i64);
            } else {
                let el = store.elements();
                el.scan_prefix(&id_prefix(id), &mut sample);
                el.memory_usage().structure_bytes / el.len().max(1)
            };
            let pairs = meta.len() as usize * if h.kind == Kind::ZSet { 2 } else { 1 };
            total += pairs * (bytes / n.max(1) + per_pair);
        }
        Reply::Int(total as i64)
    }
}
