//! Pub/Sub delivery: the server-wide table of channel and pattern subscriptions ([`Hub`]),
//! each subscribed connection's bounded message queue ([`Inbox`]), and a connection's own
//! list of what it is subscribed to ([`Subscriptions`]). The commands are in
//! `crate::cmd::pubsub`; the connection task (`crate::server`) drains its inbox.
//!
//! A publisher never waits for a subscriber: `PUBLISH` encodes the message once per
//! protocol (RESP2 array or RESP3 push frame), appends the bytes to each receiver's inbox
//! under that inbox's short mutex, and wakes its connection task, which writes them. The
//! bytes an inbox holds, plus those its task took and has not finished writing, are the
//! subscriber's output buffer: past the `pubsub` class's hard limit of
//! `client-output-buffer-limit`, or over its soft limit for longer than its seconds, the
//! inbox is marked killed and stops taking messages, and its task closes the connection
//! (as Redis closes a slow subscriber). So an inbox holds at most the hard limit plus one
//! message, whatever the subscriber does.
//!
//! Lock order: the hub's table lock, then an inbox's queue lock; a connection touches the
//! table only to (un)subscribe. Dropping a [`Subscriptions`] (the connection closed)
//! removes the connection from the table.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use tokio::sync::Notify;

use crate::config::BufferLimit;
use crate::glob;
use crate::resp::Reply;

/// A subscribed connection's pending messages, filled by publishers and drained by the
/// connection's own task.
pub(crate) struct Inbox {
    /// The connection's protocol (2 or 3), which decides how messages are framed.
    proto: AtomicU8,
    queue: Mutex<Queue>,
    /// Woken when bytes arrive in an empty queue, or when the inbox is killed.
    wake: Notify,
    killed: AtomicBool,
}

#[derive(Default)]
struct Queue {
    /// Encoded messages not yet taken by the connection task.
    bytes: Vec<u8>,
    /// Bytes taken by the task and not yet written to the socket.
    in_flight: usize,
    /// Since when the output buffer has been over the soft limit.
    over_soft: Option<Instant>,
}

impl Inbox {
    fn new(proto: u8) -> Inbox {
        Inbox {
            proto: AtomicU8::new(proto),
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
            killed: AtomicBool::new(false),
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one encoded message, or kills the inbox if that takes it past `limit`.
    fn push(&self, message: &[u8], limit: BufferLimit) {
        if self.killed.load(Ordering::Relaxed) {
            return;
        }
        let mut q = self.queue();
        let was_empty = q.bytes.is_empty();
        let pending = q.bytes.len() + q.in_flight + message.len();
        let mut kill = limit.hard > 0 && pending as u64 > limit.hard;
        if limit.soft > 0 && pending as u64 > limit.soft {
            let since = *q.over_soft.get_or_insert_with(Instant::now);
            kill |= since.elapsed().as_secs() >= limit.soft_seconds;
        } else {
            q.over_soft = None;
        }
        if kill {
            q.bytes = Vec::new();
            drop(q);
            self.killed.store(true, Ordering::Release);
            self.wake.notify_one();
            return;
        }
        q.bytes.extend_from_slice(message);
        drop(q);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// Whether the inbox passed its output-buffer limit (the connection must close).
    pub(crate) fn killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Whether messages wait to be taken.
    pub(crate) fn has_pending(&self) -> bool {
        !self.queue().bytes.is_empty()
    }

    /// Moves the pending messages to the end of `out`, counting them as in flight until
    /// [`Inbox::written`]; returns how many bytes it moved.
    pub(crate) fn take_into(&self, out: &mut Vec<u8>) -> usize {
        let mut q = self.queue();
        let n = q.bytes.len();
        if n > 0 {
            out.extend_from_slice(&q.bytes);
            q.bytes.clear();
            if q.bytes.capacity() > 1 << 20 {
                q.bytes.shrink_to(16 * 1024);
            }
            q.in_flight += n;
        }
        n
    }

    /// `n` bytes taken by [`Inbox::take_into`] are written to the socket.
    pub(crate) fn written(&self, n: usize) {
        let mut q = self.queue();
        q.in_flight = q.in_flight.saturating_sub(n);
    }

    /// Waits until messages arrive or the inbox is killed (a wake-up may be spurious:
    /// check [`Inbox::killed`] and [`Inbox::has_pending`]).
    pub(crate) async fn wait(&self) {
        self.wake.notified().await
    }

    /// Sets the protocol messages are framed in (`HELLO` changes it).
    pub(crate) fn set_proto(&self, proto: u8) {
        self.proto.store(proto, Ordering::Relaxed);
    }
}

/// Subscribers by client id.
type Subscribers = HashMap<u64, Arc<Inbox>>;

#[derive(Default)]
struct Tables {
    channels: HashMap<Vec<u8>, Subscribers>,
    patterns: HashMap<Vec<u8>, Subscribers>,
}

/// Every subscription of every connection.
#[derive(Default)]
pub(crate) struct Hub {
    tables: RwLock<Tables>,
}

impl Hub {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tables> {
        self.tables.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tables> {
        self.tables.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Delivers `message` on `channel` to every subscriber of the channel and of every
    /// matching pattern (a client subscribed both ways gets it once per subscription, as
    /// Redis); returns how many deliveries it made. Never waits for a subscriber.
    pub(crate) fn publish(&self, channel: &[u8], message: &[u8], limit: BufferLimit) -> usize {
        let t = self.read();
        let mut frames: [Option<Vec<u8>>; 2] = [None, None];
        let mut sent = 0;
        if let Some(subs) = t.channels.get(channel) {
            for inbox in subs.values() {
                let proto = inbox.proto.load(Ordering::Relaxed);
                let frame = frames[usize::from(proto >= 3)].get_or_insert_with(|| {
                    let mut out = Vec::new();
                    Reply::Push(vec![
                        Reply::bulk("message"),
                        Reply::bulk(channel),
                        Reply::bulk(message),
                    ])
                    .encode(proto, &mut out);
                    out
                });
                inbox.push(frame, limit);
                sent += 1;
            }
        }
        for (pattern, subs) in &t.patterns {
            if !glob::matches(pattern, channel) {
                continue;
            }
            let mut frames: [Option<Vec<u8>>; 2] = [None, None];
            for inbox in subs.values() {
                let proto = inbox.proto.load(Ordering::Relaxed);
                let frame = frames[usize::from(proto >= 3)].get_or_insert_with(|| {
                    let mut out = Vec::new();
                    Reply::Push(vec![
                        Reply::bulk("pmessage"),
                        Reply::bulk(pattern),
                        Reply::bulk(channel),
                        Reply::bulk(message),
                    ])
                    .encode(proto, &mut out);
                    out
                });
                inbox.push(frame, limit);
                sent += 1;
            }
        }
        sent
    }

    /// The channels with at least one subscriber, those matching `pattern` if given.
    pub(crate) fn channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.read()
            .channels
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c)))
            .cloned()
            .collect()
    }

    /// The number of subscribers of `channel` (patterns not counted, as Redis).
    pub(crate) fn numsub(&self, channel: &[u8]) -> usize {
        self.read().channels.get(channel).map_or(0, HashMap::len)
    }

    /// The number of distinct patterns subscribed to.
    pub(crate) fn numpat(&self) -> usize {
        self.read().patterns.len()
    }
}

/// Which table a subscription is in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `SUBSCRIBE`.
    Channel,
    /// `PSUBSCRIBE`.
    Pattern,
}

/// One connection's subscriptions (held in `crate::state::Client`).
#[derive(Default)]
pub(crate) struct Subscriptions {
    hub: Option<Arc<Hub>>,
    inbox: Option<Arc<Inbox>>,
    channels: HashSet<Vec<u8>>,
    patterns: HashSet<Vec<u8>>,
}

impl Subscriptions {
    /// How many channels and patterns the connection is subscribed to.
    pub(crate) fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// How many channels, and how many patterns, the connection is subscribed to.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.channels.len(), self.patterns.len())
    }

    /// The connection's inbox, once it has subscribed to something (kept after the last
    /// unsubscribe, so messages already queued are still delivered).
    pub(crate) fn inbox(&self) -> Option<&Arc<Inbox>> {
        self.inbox.as_ref()
    }

    fn set(&mut self, kind: Kind) -> &mut HashSet<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
        }
    }

    /// Subscribes client `id` (protocol `proto`) to `name`; returns the new count.
    pub(crate) fn subscribe(
        &mut self,
        hub: &Arc<Hub>,
        id: u64,
        proto: u8,
        kind: Kind,
        name: &[u8],
    ) -> usize {
        let inbox = self
            .inbox
            .get_or_insert_with(|| Arc::new(Inbox::new(proto)))
            .clone();
        inbox.set_proto(proto);
        self.hub.get_or_insert_with(|| hub.clone());
        if self.set(kind).insert(name.to_vec()) {
            let mut t = hub.write();
            let table = match kind {
                Kind::Channel => &mut t.channels,
                Kind::Pattern => &mut t.patterns,
            };
            table.entry(name.to_vec()).or_default().insert(id, inbox);
        }
        self.count()
    }

    /// Unsubscribes client `id` from `name` if subscribed; returns the new count.
    pub(crate) fn unsubscribe(&mut self, id: u64, kind: Kind, name: &[u8]) -> usize {
        if self.set(kind).remove(name)
            && let Some(hub) = &self.hub
        {
            let mut t = hub.write();
            let table = match kind {
                Kind::Channel => &mut t.channels,
                Kind::Pattern => &mut t.patterns,
            };
            if let Some(subs) = table.get_mut(name) {
                subs.remove(&id);
                if subs.is_empty() {
                    table.remove(name);
                }
            }
        }
        self.count()
    }

    /// Every channel (or pattern) subscribed to, in no particular order (as Redis's).
    pub(crate) fn names(&self, kind: Kind) -> Vec<Vec<u8>> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Pattern => self.patterns.iter().cloned().collect(),
        }
    }

    /// Unsubscribes client `id` from everything (`RESET`, connection close).
    pub(crate) fn clear(&mut self, id: u64) {
        for kind in [Kind::Channel, Kind::Pattern] {
            for name in self.names(kind) {
                self.unsubscribe(id, kind, &name);
            }
        }
    }

    /// The protocol changed (`HELLO`): later messages are framed in it.
    pub(crate) fn set_proto(&self, proto: u8) {
        if let Some(inbox) = &self.inbox {
            inbox.set_proto(proto);
        }
    }
}

/// Removes a closed connection's subscriptions. The client id is not known here, so the
/// subscriptions are found by inbox identity.
impl Drop for Subscriptions {
    fn drop(&mut self) {
        let (Some(hub), Some(inbox)) = (&self.hub, &self.inbox) else {
            return;
        };
        if self.count() == 0 {
            return;
        }
        let mut t = hub.write();
        for (kind, names) in [
            (Kind::Channel, &self.channels),
            (Kind::Pattern, &self.patterns),
        ] {
            let table = match kind {
                Kind::Channel => &mut t.channels,
                Kind::Pattern => &mut t.patterns,
            };
            for name in names {
                if let Some(subs) = table.get_mut(name) {
                    subs.retain(|_, i| !Arc::ptr_eq(i, inbox));
                    if subs.is_empty() {
                        table.remove(name);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(hard: u64, soft: u64, soft_seconds: u64) -> BufferLimit {
        BufferLimit {
            hard,
            soft,
            soft_seconds,
        }
    }

    #[test]
    fn hard_limit_counts_queued_and_in_flight_bytes() {
        let inbox = Inbox::new(2);
        let l = limit(100, 0, 0);
        inbox.push(&[b'x'; 60], l);
        let mut out = Vec::new();
        assert_eq!(inbox.take_into(&mut out), 60);
        // 60 in flight + 30 queued: under the limit.
        inbox.push(&[b'y'; 30], l);
        assert!(!inbox.killed());
        // + 30 more: 120 > 100.
        inbox.push(&[b'z'; 30], l);
        assert!(inbox.killed());
        assert!(!inbox.has_pending(), "a killed inbox drops its bytes");
        inbox.push(b"after", l);
        assert!(!inbox.has_pending(), "a killed inbox takes nothing");
    }

    #[test]
    fn written_bytes_leave_the_buffer() {
        let inbox = Inbox::new(2);
        let l = limit(100, 0, 0);
        let mut out = Vec::new();
        for _ in 0..10 {
            inbox.push(&[b'x'; 60], l);
            let n = inbox.take_into(&mut out);
            inbox.written(n);
        }
        assert!(!inbox.killed());
        assert_eq!(out.len(), 600);
    }

    #[test]
    fn soft_limit_kills_after_its_seconds() {
        let inbox = Inbox::new(2);
        // Over the soft limit with a 60 s grace: kept.
        inbox.push(&[b'x'; 60], limit(0, 50, 60));
        assert!(!inbox.killed());
        // With no grace: closed at once.
        inbox.push(&[b'x'; 1], limit(0, 50, 0));
        assert!(inbox.killed());
    }

    #[test]
    fn publish_counts_channel_and_pattern_deliveries() {
        let hub = Arc::new(Hub::default());
        let (mut a, mut b) = (Subscriptions::default(), Subscriptions::default());
        assert_eq!(a.subscribe(&hub, 1, 2, Kind::Channel, b"news"), 1);
        assert_eq!(a.subscribe(&hub, 1, 2, Kind::Pattern, b"n*"), 2);
        assert_eq!(b.subscribe(&hub, 2, 3, Kind::Pattern, b"n*"), 1);
        let l = limit(0, 0, 0);
        assert_eq!(hub.publish(b"news", b"m", l), 3);
        assert_eq!(hub.publish(b"other", b"m", l), 0);
        assert_eq!((hub.numsub(b"news"), hub.numpat()), (1, 1));
        let mut out = Vec::new();
        b.inbox().unwrap().take_into(&mut out);
        assert_eq!(
            out,
            b">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$1\r\nm\r\n"
        );
        drop(b);
        assert_eq!(hub.numpat(), 1, "a still holds the pattern");
        assert_eq!(a.unsubscribe(1, Kind::Channel, b"news"), 1);
        drop(a);
        assert_eq!((hub.numsub(b"news"), hub.numpat()), (0, 0));
        assert!(hub.channels(None).is_empty());
    }
}
