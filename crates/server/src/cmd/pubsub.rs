//! Pub/Sub commands: `SUBSCRIBE`, `UNSUBSCRIBE`, `PSUBSCRIBE`, `PUNSUBSCRIBE`, `PUBLISH`,
//! `PUBSUB CHANNELS|NUMSUB|NUMPAT`. Delivery (the subscription table, each subscriber's
//! bounded queue, the output-buffer limit) is `crate::pubsub`.
//!
//! Replies as Redis 7: each (un)subscription is confirmed by a reply of its own
//! (`[kind, name, count]`, a push frame in RESP3); `UNSUBSCRIBE` with no name and nothing
//! subscribed answers `[kind, nil, 0]`. `PUBLISH` answers how many subscriptions received
//! the message, and only enqueues it.

use super::{Command, Ctx};
use crate::pubsub::Kind;
use crate::resp::Reply;

fn confirm(what: &'static str, name: Option<&[u8]>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::bulk(what),
        name.map_or(Reply::Nil, Reply::bulk),
        Reply::Int(count as i64),
    ])
}

/// Shows the client's subscription counts in `CLIENT LIST` (after any change to them).
pub(super) fn note_counts(ctx: &Ctx<'_>) {
    let (channels, patterns) = ctx.client.subs.counts();
    ctx.client.info.set_subscriptions(channels, patterns);
}

fn kind_of(name: &[u8]) -> Kind {
    if name[0].eq_ignore_ascii_case(&b'p') {
        Kind::Pattern
    } else {
        Kind::Channel
    }
}

/// `SUBSCRIBE channel…` and `PSUBSCRIBE pattern…`.
pub(super) struct Subscribe<'a> {
    kind: Kind,
    names: &'a [Vec<u8>],
}

impl<'a> Command<'a> for Subscribe<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Subscribe {
            kind: kind_of(&args[0]),
            names: &args[1..],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let what = match self.kind {
            Kind::Channel => "subscribe",
            Kind::Pattern => "psubscribe",
        };
        let (hub, id, proto) = (&ctx.shared.pubsub, ctx.client.info.id, ctx.client.proto);
        let replies = self
            .names
            .iter()
            .map(|name| {
                let n = ctx.client.subs.subscribe(hub, id, proto, self.kind, name);
                confirm(what, Some(name), n)
            })
            .collect();
        note_counts(ctx);
        Reply::Many(replies)
    }
}

/// `UNSUBSCRIBE [channel…]` and `PUNSUBSCRIBE [pattern…]` (none: all of them).
pub(super) struct Unsubscribe<'a> {
    kind: Kind,
    names: &'a [Vec<u8>],
}

impl<'a> Command<'a> for Unsubscribe<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Unsubscribe {
            kind: kind_of(&args[0]),
            names: &args[1..],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let what = match self.kind {
            Kind::Channel => "unsubscribe",
            Kind::Pattern => "punsubscribe",
        };
        let id = ctx.client.info.id;
        let subs = &mut ctx.client.subs;
        let names = if self.names.is_empty() {
            let all = subs.names(self.kind);
            if all.is_empty() {
                return confirm(what, None, subs.count());
            }
            all
        } else {
            self.names.to_vec()
        };
        let replies = names
            .iter()
            .map(|name| {
                let n = subs.unsubscribe(id, self.kind, name);
                confirm(what, Some(name), n)
            })
            .collect();
        note_counts(ctx);
        Reply::Many(replies)
    }
}

/// `PUBLISH channel message`.
pub(super) struct Publish<'a> {
    channel: &'a [u8],
    message: &'a [u8],
}

impl<'a> Command<'a> for Publish<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Publish {
            channel: &args[1],
            message: &args[2],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let limit = ctx.shared.live.pubsub_limit();
        Reply::Int(ctx.shared.pubsub.publish(self.channel, self.message, limit) as i64)
    }
}

/// `PUBSUB CHANNELS [pattern]`, `PUBSUB NUMSUB [channel…]`, `PUBSUB NUMPAT`.
pub(super) enum PubSub<'a> {
    Channels(Option<&'a [u8]>),
    NumSub(&'a [Vec<u8>]),
    NumPat,
}

impl<'a> Command<'a> for PubSub<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        match (sub.as_str(), args.len()) {
            ("channels", 2) => Ok(PubSub::Channels(None)),
            ("channels", 3) => Ok(PubSub::Channels(Some(&args[2]))),
            ("numsub", _) => Ok(PubSub::NumSub(&args[2..])),
            ("numpat", 2) => Ok(PubSub::NumPat),
            ("numpat", _) => Err(super::arity_error("pubsub|numpat")),
            ("channels", _) => Err(Reply::err(
                "ERR unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP.",
            )),
            _ => Err(Reply::err(format!(
                "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(&args[1])
            ))),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let hub = &ctx.shared.pubsub;
        match self {
            PubSub::Channels(pattern) => {
                Reply::Array(hub.channels(pattern).into_iter().map(Reply::Bulk).collect())
            }
            PubSub::NumSub(channels) => Reply::Array(
                channels
                    .iter()
                    .flat_map(|c| [Reply::bulk(c), Reply::Int(hub.numsub(c) as i64)])
                    .collect(),
            ),
            PubSub::NumPat => Reply::Int(hub.numpat() as i64),
        }
    }
}
