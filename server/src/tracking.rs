//! Client-side caching (Redis's `tracking.c`): `CLIENT TRACKING`'s per-client modes, the table
//! of keys tracking clients read (key → ids of the clients that may cache it), the `BCAST`
//! prefixes with the keys modified since their last broadcast, and the invalidation messages.
//!
//! Messages go out of band ([`crate::client::Outbox`]): a RESP3 client gets
//! `>2 invalidate [keys]` on its own connection, a client with `REDIRECT` has them sent to the
//! other connection (a RESP3 push there, or a `__redis__:invalidate` pub/sub message to a RESP2
//! subscriber). A message for the client whose command is running waits until that command's
//! reply is written ([`crate::client::Outbox::defer`]), as Redis's `tracking_pending_keys`.
//! Like Redis, the table names keys without their database, and forgets a client's entries
//! lazily (a disconnected client's ids stay until their key changes).

use crate::client::ClientHandle;
use crate::node::Node;
use bytes::Bytes;
use indexmap::IndexMap;
use locksmith_resp::Frame;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The channel a RESP2 redirect target subscribes to (`__redis__:invalidate`).
pub(crate) const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// Keys evicted from a full table per pass, times the passes that ended still over the limit
/// plus one (Redis's `trackingLimitUsedSlots` effort).
const LIMIT_EFFORT: u32 = 100;

/// One client's tracking mode (`CLIENT TRACKING ON ...`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mode {
    /// `REDIRECT id` (0: none).
    pub(crate) redirect: u64,
    /// `BCAST`.
    pub(crate) bcast: bool,
    /// `OPTIN`.
    pub(crate) optin: bool,
    /// `OPTOUT`.
    pub(crate) optout: bool,
    /// `NOLOOP`.
    pub(crate) noloop: bool,
    /// `CLIENT CACHING YES|NO` given for the next command.
    pub(crate) caching: bool,
    /// The redirect client went away.
    pub(crate) broken_redirect: bool,
    /// `BCAST` prefixes.
    pub(crate) prefixes: BTreeSet<Bytes>,
}

/// A `BCAST` prefix: its clients and the keys modified since its last broadcast, each with the
/// client that modified it last (`None`: expiry, eviction, a script), for `NOLOOP`.
#[derive(Debug, Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    keys: BTreeMap<Bytes, Option<u64>>,
}

/// Who caused the invalidations being sent: the client whose command runs (for `NOLOOP`, and
/// to hold its own messages until its reply when `defer`).
#[derive(Clone, Copy)]
pub(crate) struct Origin<'a> {
    /// The client whose command is running, if any.
    pub(crate) current: Option<&'a ClientHandle>,
    /// Messages to `current` itself follow its reply.
    pub(crate) defer: bool,
}

impl Origin<'_> {
    /// No client's command (the expiry cycle, an eviction round).
    pub(crate) const NONE: Origin<'static> = Origin {
        current: None,
        defer: false,
    };

    fn current_id(&self) -> Option<u64> {
        self.current.map(|c| c.id)
    }
}

/// The node's tracking state (in [`crate::node::State`]).
#[derive(Debug, Default)]
pub(crate) struct Tracking {
    /// Clients with tracking on, by id.
    clients: HashMap<u64, Mode>,
    /// Tracked keys → ids of the clients that read them (sorted).
    table: IndexMap<Bytes, Vec<u64>>,
    /// Ids across the table (`tracking_total_items`).
    items: u64,
    /// `BCAST` prefixes (`tracking_total_prefixes`).
    prefixes: BTreeMap<Bytes, Prefix>,
    /// Some prefix has keys to broadcast.
    bcast_pending: bool,
    /// The declared keys of the script the current client runs, while it tracks keys: Redis
    /// remembers those (not the keys of the commands inside) when a script reads.
    script_keys: Option<Vec<Bytes>>,
    /// Passes of the table limit that ended still over it (Redis's `timeout_counter`).
    limit_passes: u32,
}

impl Tracking {
    /// Whether anything is tracked: one check on the write path, nothing more when false.
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        !self.clients.is_empty() || !self.table.is_empty()
    }

    /// Clients with tracking on (`tracking_clients`).
    pub(crate) fn clients(&self) -> usize {
        self.clients.len()
    }

    /// Keys in the table (`tracking_total_keys`).
    pub(crate) fn total_keys(&self) -> usize {
        self.table.len()
    }

    /// Client ids across the table (`tracking_total_items`).
    pub(crate) fn total_items(&self) -> u64 {
        self.items
    }

    /// `BCAST` prefixes (`tracking_total_prefixes`).
    pub(crate) fn total_prefixes(&self) -> usize {
        self.prefixes.len()
    }

    /// Client `id`'s mode, if it tracks.
    pub(crate) fn mode(&self, id: u64) -> Option<&Mode> {
        self.clients.get(&id)
    }

    /// `CLIENT TRACKING ON`: switches client `id` on with `mode` (its flags and redirect; the
    /// prefixes are added to those it has, or the empty prefix without any in `BCAST`), as
    /// Redis's `enableTracking` (a pending `CLIENT CACHING` survives).
    pub(crate) fn enable(&mut self, handle: &ClientHandle, mode: Mode) {
        let id = handle.id;
        let entry = self.clients.entry(id).or_default();
        let caching = entry.caching;
        let mut prefixes = std::mem::take(&mut entry.prefixes);
        if mode.bcast {
            if mode.prefixes.is_empty() {
                prefixes.insert(Bytes::new());
            }
            prefixes.extend(mode.prefixes.iter().cloned());
            for prefix in &prefixes {
                self.prefixes
                    .entry(prefix.clone())
                    .or_default()
                    .clients
                    .insert(id);
            }
        }
        let bcast = mode.bcast;
        *entry = Mode {
            caching,
            prefixes,
            broken_redirect: false,
            ..mode
        };
        handle.update(|info| {
            info.set_flag('t', true);
            info.set_flag('R', false);
            info.set_flag('B', bcast);
        });
    }

    /// `CLIENT TRACKING OFF` (and a closed connection, `RESET`): forgets client `id`'s mode
    /// and prefixes; its ids in the table go lazily, as in Redis.
    pub(crate) fn disable(&mut self, id: u64, handle: Option<&ClientHandle>) {
        let Some(mode) = self.clients.remove(&id) else {
            return;
        };
        for prefix in &mode.prefixes {
            if let Some(p) = self.prefixes.get_mut(prefix) {
                p.clients.remove(&id);
                if p.clients.is_empty() {
                    self.prefixes.remove(prefix);
                }
            }
        }
        if let Some(handle) = handle {
            handle.update(|info| {
                for flag in ['t', 'R', 'B'] {
                    info.set_flag(flag, false);
                }
            });
        }
    }

    /// `CLIENT CACHING YES|NO`: the next command (or transaction) of client `id` is, or is
    /// not, tracked.
    pub(crate) fn set_caching(&mut self, id: u64) {
        if let Some(mode) = self.clients.get_mut(&id) {
            mode.caching = true;
        }
    }

    /// Sets (or clears) the declared keys of the script client `id` starts, while it tracks
    /// keys (not in `BCAST`).
    pub(crate) fn set_script_keys(&mut self, id: u64, keys: Option<&[Bytes]>) {
        self.script_keys = match keys {
            Some(keys) if self.clients.get(&id).is_some_and(|m| !m.bcast) => Some(keys.to_vec()),
            _ => None,
        };
    }

    /// Redis's `trackingRememberKeys`: client `id` read `keys`, unless its mode says this
    /// command is not cached (`OPTIN` without `CACHING YES`, `OPTOUT` with `CACHING NO`).
    fn remember<'k>(&mut self, id: u64, keys: impl IntoIterator<Item = &'k Bytes>) {
        let Some(mode) = self.clients.get(&id) else {
            return;
        };
        if mode.bcast || (mode.optin && !mode.caching) || (mode.optout && mode.caching) {
            return;
        }
        for key in keys {
            let ids = self.table.entry(key.clone()).or_default();
            if let Err(at) = ids.binary_search(&id) {
                ids.insert(at, id);
                self.items += 1;
            }
        }
    }

    /// Redis's `trackingInvalidateKey`: `key` changed (or left the table, `bcast` false).
    /// Schedules it for the `BCAST` prefixes it matches, with `modifier` as the client that
    /// changed it, and sends each client that read it an invalidation (except a `NOLOOP`
    /// client's own change); the key leaves the table.
    fn invalidate_key(
        &mut self,
        node: &Node,
        key: &Bytes,
        modifier: Option<u64>,
        bcast: bool,
        origin: Origin<'_>,
    ) {
        if bcast && !self.prefixes.is_empty() {
            for (prefix, p) in &mut self.prefixes {
                if key.starts_with(prefix) {
                    p.keys.insert(key.clone(), modifier);
                    self.bcast_pending = true;
                }
            }
        }
        let Some(ids) = self.table.swap_remove(key) else {
            return;
        };
        self.items = self.items.saturating_sub(ids.len() as u64);
        let current = origin.current_id();
        for id in ids {
            let Some(mode) = self.clients.get(&id) else {
                continue;
            };
            if mode.bcast || (mode.noloop && current == Some(id)) {
                continue;
            }
            let payload = Frame::Array(vec![Frame::Bulk(key.clone())]);
            self.send(node, id, payload, origin);
        }
    }

    /// Redis's `sendTrackingMessage`: delivers `payload` (the keys, or a null for "all") to
    /// tracking client `id` or its redirect. A redirect that went away marks the client and
    /// tells a RESP3 one (`tracking-redir-broken`); a RESP2 client without redirect gets
    /// nothing.
    fn send(&mut self, node: &Node, id: u64, payload: Frame, origin: Origin<'_>) {
        let Some(mode) = self.clients.get_mut(&id) else {
            return;
        };
        let Some(target) = node.clients.get(id) else {
            return;
        };
        let (recipient, redirected) = if mode.redirect == 0 {
            (target, false)
        } else {
            match node.clients.get(mode.redirect) {
                Some(redir) => (redir, true),
                None => {
                    mode.broken_redirect = true;
                    target.update(|info| info.set_flag('R', true));
                    if resp_of(&target) > 2 {
                        let frame = Frame::Push(vec![
                            Frame::Bulk(Bytes::from_static(b"tracking-redir-broken")),
                            Frame::Integer(i64::try_from(mode.redirect).unwrap_or(i64::MAX)),
                        ]);
                        deliver(&target, frame, origin);
                    }
                    return;
                }
            }
        };
        let (resp, subscribed) = recipient
            .info
            .lock()
            .map(|i| (i.resp, i.sub + i.psub + i.ssub > 0))
            .unwrap_or((2, false));
        let frame = if resp > 2 {
            Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"invalidate")),
                payload,
            ])
        } else if redirected && subscribed {
            Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"message")),
                Frame::Bulk(Bytes::from_static(INVALIDATE_CHANNEL)),
                payload,
            ])
        } else {
            return;
        };
        deliver(&recipient, frame, origin);
    }

    /// Redis's `trackingInvalidateKeysOnFlush`: every tracking client gets a null ("all keys
    /// are invalid") and the table is emptied.
    fn flushed(&mut self, node: &Node, origin: Origin<'_>) {
        let mut ids: Vec<u64> = self.clients.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.send(node, id, Frame::Null, origin);
        }
        self.table = IndexMap::new();
        self.items = 0;
    }

    /// Redis's `trackingBroadcastInvalidationMessages`: each prefix's modified keys go to its
    /// clients in one message (a `NOLOOP` client's without the keys it changed itself).
    fn broadcast(&mut self, node: &Node, origin: Origin<'_>) {
        if !std::mem::take(&mut self.bcast_pending) {
            return;
        }
        let mut sends = Vec::new();
        for p in self.prefixes.values_mut() {
            if p.keys.is_empty() {
                continue;
            }
            let keys = std::mem::take(&mut p.keys);
            for &id in &p.clients {
                let noloop = self.clients.get(&id).is_some_and(|m| m.noloop);
                let array: Vec<Frame> = keys
                    .iter()
                    .filter(|(_, by)| !(noloop && **by == Some(id)))
                    .map(|(key, _)| Frame::Bulk(key.clone()))
                    .collect();
                if !array.is_empty() {
                    sends.push((id, Frame::Array(array)));
                }
            }
        }
        for (id, payload) in sends {
            self.send(node, id, payload, origin);
        }
    }

    /// Redis's `trackingLimitUsedSlots`: while the table holds more than `max` keys (0: no
    /// limit), random keys leave it, their clients invalidated as if they changed; at most
    /// 100 keys times the passes that already ended over the limit.
    fn limit(&mut self, node: &Node, max: u64, rng: &mut impl Rng, origin: Origin<'_>) {
        if max == 0 || self.clients.is_empty() {
            return;
        }
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        if self.table.len() <= max {
            self.limit_passes = 0;
            return;
        }
        let effort = LIMIT_EFFORT.saturating_mul(self.limit_passes.saturating_add(1));
        for _ in 0..effort {
            if self.table.is_empty() {
                break;
            }
            let at = rng.random_range(0..self.table.len());
            let Some(key) = self.table.get_index(at).map(|(k, _)| k.clone()) else {
                break;
            };
            self.invalidate_key(node, &key, None, false, origin);
            if self.table.len() <= max {
                self.limit_passes = 0;
                return;
            }
        }
        self.limit_passes = self.limit_passes.saturating_add(1);
    }
}

/// The protocol client `handle` speaks (as `CLIENT LIST` shows it).
fn resp_of(handle: &ClientHandle) -> u8 {
    handle.info.lock().map(|i| i.resp).unwrap_or(2)
}

/// Queues `frame` for `recipient`: after the running command's reply when it is that
/// command's client and `origin` defers, else at once.
fn deliver(recipient: &ClientHandle, frame: Frame, origin: Origin<'_>) {
    let size = crate::pubsub::frame_size(&frame);
    if origin.defer && origin.current.is_some_and(|c| c.id == recipient.id) {
        recipient.outbox.defer(frame, size);
    } else {
        recipient.outbox.send(frame, size);
    }
}

/// What [`crate::cmd::call`] does for tracking after a command ran for `client` (the caller,
/// inside a script or `EXEC`): the keys it modified are invalidated (messages to `client`
/// itself follow its reply), a read-only command's keys are remembered for it (a script's
/// declared keys when it reads from a script), and after a top-level command (`top`) the
/// `CLIENT CACHING` flag is spent and the `BCAST` keys are broadcast.
#[inline(never)]
pub(crate) fn after_call(
    state: &mut crate::node::State,
    node: &Node,
    client: &crate::client::ClientState,
    resolved: crate::command_meta::Resolved,
    argv: &[Bytes],
    effects: &mut crate::node::Effects,
    top: bool,
) {
    let tracking = &mut state.tracking;
    let handle = &*client.handle;
    let id = handle.id;
    let origin = Origin {
        current: Some(handle),
        defer: true,
    };
    // A script's writes count as the script client's in Redis (NOLOOP in BCAST sees no one).
    let writer = (!client.origin.in_script).then_some(id);
    invalidate_modified(tracking, node, effects, writer, origin);
    let spec = resolved.spec;
    if spec.has(crate::flags::READONLY)
        && !spec.has(crate::flags::PUBSUB)
        && !matches!(spec.name, "eval_ro" | "evalsha_ro" | "fcall_ro")
        && tracking.clients.contains_key(&id)
    {
        if client.origin.in_script && node.config.profile().semantics.script_tracks_read_keys {
            tracking.remember(id, spec.keys_of(argv));
        } else if client.origin.in_script {
            if let Some(keys) = tracking.script_keys.take() {
                tracking.remember(id, &keys);
                tracking.script_keys = Some(keys);
            }
        } else {
            tracking.remember(id, spec.keys_of(argv));
        }
    }
    if top {
        // Redis's resetClient: CACHING lasts for one command, or one transaction, and a
        // CLIENT subcommand in between does not spend it.
        let is_client = resolved.parent.is_some_and(|p| p.name == "client");
        if client.multi.is_none() && !is_client {
            if let Some(mode) = tracking.clients.get_mut(&id) {
                mode.caching = false;
            }
        }
        tracking.broadcast(node, origin);
    }
}

/// What [`crate::cmd::call`] does for tracking before a top-level command runs for `client`
/// (Redis's `processCommand`): the table is held to `tracking-table-max-keys`, the messages
/// going out before the reply (a `NOLOOP` client hears nothing of its own, as in Redis).
#[inline(never)]
pub(crate) fn before_call(
    state: &mut crate::node::State,
    node: &Node,
    client: &crate::client::ClientState,
) {
    let max = node.config.tracking_table_max_keys();
    let origin = Origin {
        current: Some(&client.handle),
        defer: false,
    };
    state.tracking.limit(node, max, &mut state.rng, origin);
}

/// The keys modified since the last look (`effects.tracked`), invalidated; `writer` is the
/// client that changed them (lazily expired keys have none).
fn invalidate_modified(
    tracking: &mut Tracking,
    node: &Node,
    effects: &mut crate::node::Effects,
    writer: Option<u64>,
    origin: Origin<'_>,
) {
    let from = effects.tracked.min(effects.modified.len());
    for at in from..effects.modified.len() {
        let Some((_, key)) = effects.modified.get(at) else {
            break;
        };
        let modifier = if effects.unowned.contains(&at) {
            None
        } else {
            writer
        };
        tracking.invalidate_key(node, key, modifier, true, origin);
    }
    effects.tracked = effects.modified.len();
}

/// What [`crate::node::State::finish_effects`] does for tracking: keys modified outside any
/// command (the expiry cycle, eviction) are invalidated, and `BCAST` keys broadcast.
#[inline(never)]
pub(crate) fn after_effects(
    tracking: &mut Tracking,
    node: &Node,
    effects: &mut crate::node::Effects,
) {
    invalidate_modified(tracking, node, effects, None, Origin::NONE);
    tracking.broadcast(node, Origin::NONE);
}

/// `FLUSHDB`/`FLUSHALL` by `client`: a null invalidation to every tracking client (after the
/// reply for `client` itself) and an empty table. The keys the flush records as modified (for
/// WATCH) are not invalidated one by one.
pub(crate) fn flushed(
    state: &mut crate::node::State,
    node: &Node,
    client: &ClientHandle,
    effects: &mut crate::node::Effects,
) {
    if !state.tracking.is_active() {
        return;
    }
    let origin = Origin {
        current: Some(client),
        defer: true,
    };
    invalidate_modified(&mut state.tracking, node, effects, Some(client.id), origin);
    state.tracking.flushed(node, origin);
}

/// Marks the keys recorded as modified so far as handled: `SWAPDB` records every key of both
/// databases for WATCH, and Redis 7.0 does not invalidate tracked keys for it.
pub(crate) fn skip_modified(effects: &mut crate::node::Effects) {
    effects.tracked = effects.modified.len();
}

/// The periodic task's part (Redis's cron): the table held to `tracking-table-max-keys`.
pub(crate) fn cron(state: &mut crate::node::State, node: &Node) {
    if state.tracking.clients.is_empty() {
        return;
    }
    let max = node.config.tracking_table_max_keys();
    state
        .tracking
        .limit(node, max, &mut state.rng, Origin::NONE);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Bytes {
        Bytes::from(k.to_string())
    }

    #[test]
    fn remember_counts_each_client_once_per_key() {
        let mut t = Tracking::default();
        t.clients.insert(1, Mode::default());
        t.clients.insert(2, Mode::default());
        let (a, b) = (key("a"), key("b"));
        t.remember(1, [&a, &b, &a]);
        t.remember(2, [&a]);
        assert_eq!((t.total_keys(), t.total_items()), (2, 3));
        assert_eq!(t.table.get(&a), Some(&vec![1, 2]));
    }

    #[test]
    fn optin_and_optout_follow_caching() {
        let mut t = Tracking::default();
        let a = key("a");
        t.clients.insert(
            1,
            Mode {
                optin: true,
                ..Mode::default()
            },
        );
        t.remember(1, [&a]);
        assert_eq!(t.total_keys(), 0);
        t.set_caching(1);
        t.remember(1, [&a]);
        assert_eq!(t.total_keys(), 1);
        t.clients.insert(
            2,
            Mode {
                optout: true,
                caching: true,
                ..Mode::default()
            },
        );
        let b = key("b");
        t.remember(2, [&b]);
        assert_eq!(t.total_keys(), 1);
    }

    #[test]
    fn bcast_clients_never_fill_the_table() {
        let mut t = Tracking::default();
        t.clients.insert(
            1,
            Mode {
                bcast: true,
                ..Mode::default()
            },
        );
        t.remember(1, [&key("a")]);
        assert_eq!(t.total_keys(), 0);
    }
}
