//! The pub/sub registry: which client listens on which channel, pattern or shard channel, the
//! fan-out of published messages (and keyspace notifications) into subscribers' outboxes, and
//! the `client-output-buffer-limit pubsub` policy that disconnects subscribers that stop
//! reading, so the server's memory stays bounded.
//!
//! Messages are not delivered by the command that publishes them: `PUBLISH` records them in
//! [`Effects`] and [`deliver`] fans them out once the command, script or `EXEC` finished
//! (from `State::finish_effects`), so subscribers never see a message before the writes of
//! the script that sent it.

use crate::client::{ClientHandle, ClientInfo};
use crate::config::runtime::{ClientClass, OutputLimit};
use crate::glob::glob_match;
use crate::node::{clear_kept, Effects, State};
use crate::notify;
use bytes::{Bytes, BytesMut};
use indexmap::{IndexMap, IndexSet};
use locksmith_resp::Frame;
use std::collections::HashMap;
use std::sync::Arc;

/// What a subscription names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `SUBSCRIBE channel`.
    Channel,
    /// `PSUBSCRIBE pattern`.
    Pattern,
    /// `SSUBSCRIBE shardchannel`.
    Shard,
}

/// One subscribed client.
#[derive(Debug)]
struct Subscriber {
    handle: Arc<ClientHandle>,
    channels: IndexSet<Bytes>,
    patterns: IndexSet<Bytes>,
    shard: IndexSet<Bytes>,
    /// Node-clock ms since when the soft output limit has been exceeded.
    soft_since: Option<u64>,
}

impl Subscriber {
    fn set(&mut self, kind: Kind) -> &mut IndexSet<Bytes> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty()
    }
}

/// When and under which `client-output-buffer-limit pubsub` messages are delivered.
#[derive(Debug, Clone, Copy)]
struct Delivery {
    /// Node-clock ms now.
    now_ms: u64,
    /// The pubsub class's output limit as configured now.
    limit: OutputLimit,
}

/// Every subscription of the node (lives in [`State`], under the state lock).
#[derive(Debug, Default)]
pub(crate) struct PubSub {
    /// Channel -> subscribers, in subscription order (delivery order, as Redis's lists).
    channels: HashMap<Bytes, IndexSet<u64>>,
    /// Pattern -> subscribers; patterns in the order they were first subscribed.
    patterns: IndexMap<Bytes, IndexSet<u64>>,
    /// Shard channel -> subscribers.
    shard: HashMap<Bytes, IndexSet<u64>>,
    /// Subscribed clients by id.
    clients: HashMap<u64, Subscriber>,
    /// Subscribers disconnected for their output buffer limit (part of Valkey's
    /// `client_output_buffer_limit_disconnections`; `CONFIG RESETSTAT` clears it).
    pub(crate) output_limit_disconnections: u64,
}

impl PubSub {
    fn index(&mut self, kind: Kind) -> Index<'_> {
        match kind {
            Kind::Channel => Index::Map(&mut self.channels),
            Kind::Pattern => Index::Ordered(&mut self.patterns),
            Kind::Shard => Index::Map(&mut self.shard),
        }
    }

    /// Subscribes `client` to `name`; false if it already was.
    pub(crate) fn subscribe(
        &mut self,
        client: &Arc<ClientHandle>,
        kind: Kind,
        name: &Bytes,
    ) -> bool {
        let sub = self.clients.entry(client.id).or_insert_with(|| Subscriber {
            handle: client.clone(),
            channels: IndexSet::new(),
            patterns: IndexSet::new(),
            shard: IndexSet::new(),
            soft_since: None,
        });
        if !sub.set(kind).insert(name.clone()) {
            return false;
        }
        match self.index(kind) {
            Index::Map(m) => m.entry(name.clone()).or_default().insert(client.id),
            Index::Ordered(m) => m.entry(name.clone()).or_default().insert(client.id),
        };
        true
    }

    /// Unsubscribes client `id` from `name`; false if it was not subscribed.
    pub(crate) fn unsubscribe(&mut self, id: u64, kind: Kind, name: &[u8]) -> bool {
        let Some(sub) = self.clients.get_mut(&id) else {
            return false;
        };
        if !sub.set(kind).shift_remove(name) {
            return false;
        }
        if sub.is_empty() {
            self.clients.remove(&id);
        }
        match self.index(kind) {
            Index::Map(m) => {
                if let Some(ids) = m.get_mut(name) {
                    ids.shift_remove(&id);
                    if ids.is_empty() {
                        m.remove(name);
                    }
                }
            }
            Index::Ordered(m) => {
                if let Some(ids) = m.get_mut(name) {
                    ids.shift_remove(&id);
                    if ids.is_empty() {
                        m.shift_remove(name);
                    }
                }
            }
        }
        true
    }

    /// The names client `id` is subscribed to, in subscription order.
    pub(crate) fn subscriptions(&self, id: u64, kind: Kind) -> Vec<Bytes> {
        self.clients
            .get(&id)
            .map(|s| match kind {
                Kind::Channel => s.channels.iter().cloned().collect(),
                Kind::Pattern => s.patterns.iter().cloned().collect(),
                Kind::Shard => s.shard.iter().cloned().collect(),
            })
            .unwrap_or_default()
    }

    /// (channels, patterns, shard channels) client `id` is subscribed to.
    pub(crate) fn counts(&self, id: u64) -> (usize, usize, usize) {
        self.clients
            .get(&id)
            .map(|s| (s.channels.len(), s.patterns.len(), s.shard.len()))
            .unwrap_or_default()
    }

    /// Drops every subscription of client `id` (disconnect, `RESET`).
    pub(crate) fn remove_client(&mut self, id: u64) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in self.subscriptions(id, kind) {
                self.unsubscribe(id, kind, &name);
            }
        }
        self.clients.remove(&id);
    }

    /// How many subscriptions receive a `PUBLISH` to `channel`: its subscribers plus, for
    /// every pattern matching it, that pattern's subscribers (a client is counted once per
    /// matching subscription, as Redis counts).
    pub(crate) fn receivers(&self, channel: &[u8]) -> usize {
        let direct = self.channels.get(channel).map_or(0, IndexSet::len);
        let by_pattern: usize = self
            .patterns
            .iter()
            .filter(|(pattern, _)| glob_match(pattern, channel, false))
            .map(|(_, ids)| ids.len())
            .sum();
        direct + by_pattern
    }

    /// How many clients receive an `SPUBLISH` to `channel`.
    pub(crate) fn shard_receivers(&self, channel: &[u8]) -> usize {
        self.shard.get(channel).map_or(0, IndexSet::len)
    }

    /// Active channels (`Kind::Channel`) or shard channels (`Kind::Shard`) matching
    /// `pattern` (all when `None`).
    pub(crate) fn active(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let map = match kind {
            Kind::Shard => &self.shard,
            _ => &self.channels,
        };
        map.keys()
            .filter(|name| pattern.is_none_or(|p| glob_match(p, name, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of channel `name` (`Kind::Channel`) or shard channel (`Kind::Shard`).
    pub(crate) fn numsub(&self, kind: Kind, name: &[u8]) -> usize {
        match kind {
            Kind::Shard => self.shard_receivers(name),
            _ => self.channels.get(name).map_or(0, IndexSet::len),
        }
    }

    /// Channels, patterns or shard channels with subscribers, as `kind` says (`INFO stats`
    /// `pubsub_channels`, `pubsub_patterns`, `pubsubshard_channels`).
    pub(crate) fn num_channels(&self, kind: Kind) -> usize {
        match kind {
            Kind::Channel => self.channels.len(),
            Kind::Pattern => self.patterns.len(),
            Kind::Shard => self.shard.len(),
        }
    }

    /// Distinct patterns with subscribers (`PUBSUB NUMPAT`).
    pub(crate) fn numpat(&self) -> usize {
        self.num_channels(Kind::Pattern)
    }

    /// How many clients are subscribed to anything (`INFO`'s `pubsub_clients`).
    pub(crate) fn clients(&self) -> usize {
        self.clients.len()
    }

    /// Whether nobody listens at all (lets keyspace notifications be skipped cheaply).
    pub(crate) fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Delivers `message` on `channel` to its subscribers, then to the subscribers of every
    /// matching pattern (Redis's order).
    fn publish(&mut self, channel: &Bytes, message: &Bytes, at: Delivery) {
        if let Some(ids) = self.channels.get(channel) {
            let frame = message_frame(channel, message);
            let size = frame_size(&frame);
            let ids: Vec<u64> = ids.iter().copied().collect();
            for id in ids {
                self.send(id, frame.clone(), size, at);
            }
        }
        let matching: Vec<(Bytes, Vec<u64>)> = self
            .patterns
            .iter()
            .filter(|(pattern, _)| glob_match(pattern, channel, false))
            .map(|(pattern, ids)| (pattern.clone(), ids.iter().copied().collect()))
            .collect();
        for (pattern, ids) in matching {
            let frame = Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"pmessage")),
                Frame::Bulk(pattern),
                Frame::Bulk(channel.clone()),
                Frame::Bulk(message.clone()),
            ]);
            let size = frame_size(&frame);
            for id in ids {
                self.send(id, frame.clone(), size, at);
            }
        }
    }

    /// Delivers `message` on shard channel `channel`.
    fn shard_publish(&mut self, channel: &Bytes, message: &Bytes, at: Delivery) {
        let Some(ids) = self.shard.get(channel) else {
            return;
        };
        let frame = Frame::Push(vec![
            Frame::Bulk(Bytes::from_static(b"smessage")),
            Frame::Bulk(channel.clone()),
            Frame::Bulk(message.clone()),
        ]);
        let size = frame_size(&frame);
        let ids: Vec<u64> = ids.iter().copied().collect();
        for id in ids {
            self.send(id, frame.clone(), size, at);
        }
    }

    /// Queues `frame` for subscriber `id`, disconnecting it when its pending output passes
    /// the pubsub output-buffer limit; a disconnected subscriber gets nothing more.
    fn send(&mut self, id: u64, frame: Frame, size: usize, at: Delivery) {
        let Some(sub) = self.clients.get_mut(&id) else {
            return;
        };
        if sub.handle.is_killed() {
            return;
        }
        let pending = sub.handle.outbox.send(frame, size) as u64;
        if at.limit.exceeded(pending, at.now_ms, &mut sub.soft_since) {
            tracing::warn!(
                client = id,
                pending,
                "closing a pub/sub client for overcoming its output buffer limits"
            );
            sub.handle.kill();
            self.output_limit_disconnections += 1;
        }
    }
}

enum Index<'a> {
    Map(&'a mut HashMap<Bytes, IndexSet<u64>>),
    Ordered(&'a mut IndexMap<Bytes, IndexSet<u64>>),
}

/// `["message", channel, message]`, a push in RESP3 and an array in RESP2.
fn message_frame(channel: &Bytes, message: &Bytes) -> Frame {
    Frame::Push(vec![
        Frame::Bulk(Bytes::from_static(b"message")),
        Frame::Bulk(channel.clone()),
        Frame::Bulk(message.clone()),
    ])
}

/// The bytes `frame` takes once encoded, exactly for the frames pub/sub sends (bulks,
/// integers, pushes/arrays of them; a push is `>` in RESP3 and `*` in RESP2, the same size),
/// so the outbox's pending count, raised by this and lowered by what the connection writes,
/// does not drift. A null counts as its shorter RESP3 form: any error undercounts and never
/// accumulates into a false disconnection.
pub(crate) fn frame_size(frame: &Frame) -> usize {
    fn digits(n: usize) -> usize {
        n.checked_ilog10().map_or(1, |d| d as usize + 1)
    }
    match frame {
        Frame::Push(items) | Frame::Array(items) => {
            3 + digits(items.len()) + items.iter().map(frame_size).sum::<usize>()
        }
        Frame::Bulk(b) => 5 + digits(b.len()) + b.len(),
        Frame::Simple(b) | Frame::Error(b) => 3 + b.len(),
        Frame::Integer(i) => 3 + digits(i.unsigned_abs() as usize) + usize::from(*i < 0),
        _ => 3,
    }
}

/// Updates what `CLIENT LIST` shows about client `handle`'s subscriptions.
pub(crate) fn show_counts(handle: &ClientHandle, (sub, psub, ssub): (usize, usize, usize)) {
    handle.update(|info: &mut ClientInfo| {
        info.sub = sub;
        info.psub = psub;
        info.ssub = ssub;
        info.set_flag('P', sub + psub + ssub > 0);
    });
}

/// Fans out what the commands just run published, in order: keyspace notifications (turned
/// into publishes per `notify-keyspace-events`, interleaved with `PUBLISH`es where they were
/// raised), then shard-channel messages. Clears the three lists.
pub(crate) fn deliver(state: &mut State, effects: &mut Effects, now_ms: u64) {
    if state.pubsub.is_empty() {
        // Nobody listens (`now_ms` may be a dummy then): drop the messages but keep the
        // buffers, which the next command of the batch reuses.
        clear_kept(&mut effects.events);
        clear_kept(&mut effects.event_marks);
        clear_kept(&mut effects.publishes);
        clear_kept(&mut effects.shard_publishes);
        return;
    }
    let events = std::mem::take(&mut effects.events);
    let marks = std::mem::take(&mut effects.event_marks);
    let publishes = std::mem::take(&mut effects.publishes);
    let shard = std::mem::take(&mut effects.shard_publishes);
    let flags = state.config.notify_keyspace_events();
    let at = Delivery {
        now_ms,
        limit: state.config.output_limit(ClientClass::Pubsub),
    };
    let mut published = publishes.into_iter().enumerate().peekable();
    for (i, (db, class, event, key)) in events.into_iter().enumerate() {
        // Events raised after some PUBLISHes go out after those messages.
        let mark = marks.get(i).copied().unwrap_or(0);
        while let Some((_, (channel, message))) = published.next_if(|(n, _)| *n < mark) {
            state.pubsub.publish(&channel, &message, at);
        }
        for (channel, message) in keyspace_messages(flags, db, class, event, &key) {
            state.pubsub.publish(&channel, &message, at);
        }
    }
    for (_, (channel, message)) in published {
        state.pubsub.publish(&channel, &message, at);
    }
    for (channel, message) in shard {
        state.pubsub.shard_publish(&channel, &message, at);
    }
}

/// The (channel, message) pairs Redis's `notifyKeyspaceEvent` publishes for one event under
/// `flags`: nothing unless the event's class is enabled; `__keyspace@<db>__:<key>` with the
/// event name when `K` is set, `__keyevent@<db>__:<event>` with the key when `E` is set.
pub(crate) fn keyspace_messages(
    flags: u32,
    db: usize,
    class: u32,
    event: &str,
    key: &Bytes,
) -> Vec<(Bytes, Bytes)> {
    let mut out = Vec::new();
    if flags & class == 0 {
        return out;
    }
    if flags & notify::KEYSPACE != 0 {
        let mut channel = BytesMut::with_capacity(24 + key.len());
        channel.extend_from_slice(format!("__keyspace@{db}__:").as_bytes());
        channel.extend_from_slice(key);
        out.push((channel.freeze(), Bytes::copy_from_slice(event.as_bytes())));
    }
    if flags & notify::KEYEVENT != 0 {
        let channel = Bytes::from(format!("__keyevent@{db}__:{event}"));
        out.push((channel, key.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_size_is_the_encoded_length() {
        let frames = [
            message_frame(&Bytes::from_static(b"ch"), &Bytes::from(vec![b'x'; 1234])),
            Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"subscribe")),
                Frame::Bulk(Bytes::from_static(b"a")),
                Frame::Integer(-12),
            ]),
        ];
        for frame in &frames {
            for version in [
                locksmith_resp::Version::Resp2,
                locksmith_resp::Version::Resp3,
            ] {
                let mut out = BytesMut::new();
                locksmith_resp::encode(frame, version, &mut out);
                assert_eq!(frame_size(frame), out.len());
            }
        }
    }

    #[test]
    fn keyspace_messages_follow_the_class_and_k_e_flags() {
        let key = Bytes::from_static(b"k");
        assert!(keyspace_messages(notify::KEYSPACE, 0, notify::STRING, "set", &key).is_empty());
        let all = notify::parse_flags(b"KEA").unwrap_or(0);
        assert_eq!(
            keyspace_messages(all, 3, notify::STRING, "set", &key),
            vec![
                (
                    Bytes::from_static(b"__keyspace@3__:k"),
                    Bytes::from_static(b"set")
                ),
                (
                    Bytes::from_static(b"__keyevent@3__:set"),
                    Bytes::from_static(b"k")
                ),
            ]
        );
        let only_e = notify::parse_flags(b"Ex").unwrap_or(0);
        assert_eq!(
            keyspace_messages(only_e, 0, notify::EXPIRED, "expired", &key),
            vec![(
                Bytes::from_static(b"__keyevent@0__:expired"),
                Bytes::from_static(b"k")
            )]
        );
    }

    #[test]
    fn receivers_count_each_matching_subscription() {
        let mut ps = PubSub::default();
        let (outbox, _rx) = crate::client::Outbox::new();
        let handle = Arc::new(ClientHandle {
            id: 1,
            addr: ([127, 0, 0, 1], 1).into(),
            laddr: ([127, 0, 0, 1], 2).into(),
            unix: None,
            created_ms: 0,
            info: Default::default(),
            last_interaction_ms: Default::default(),
            outbox,
            killed: Default::default(),
            kill_notify: Default::default(),
            net_in: Default::default(),
            net_out: Default::default(),
            commands: Default::default(),
        });
        let name = |s: &'static str| Bytes::from_static(s.as_bytes());
        assert!(ps.subscribe(&handle, Kind::Channel, &name("news")));
        assert!(!ps.subscribe(&handle, Kind::Channel, &name("news")));
        assert!(ps.subscribe(&handle, Kind::Pattern, &name("n*")));
        assert!(ps.subscribe(&handle, Kind::Pattern, &name("*s")));
        assert!(ps.subscribe(&handle, Kind::Pattern, &name("x*")));
        assert_eq!(ps.receivers(b"news"), 3);
        assert_eq!(ps.counts(1), (1, 3, 0));
        ps.remove_client(1);
        assert_eq!(ps.receivers(b"news"), 0);
        assert!(ps.is_empty());
        assert_eq!(ps.numpat(), 0);
    }
}
