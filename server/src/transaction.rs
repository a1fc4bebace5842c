//! Transactions as a connection mode: the `MULTI` queue ([`MultiState`], held by the client),
//! the gate every command passes before it runs ([`admit`]: RESP2 subscribed-mode refusals and
//! `MULTI` queueing, the checks Redis's `processCommand` makes), and optimistic locking
//! ([`Watches`]: `WATCH`ed keys, invalidated by any write to them, which the state records in
//! `Effects::modified`).

use crate::client::ClientState;
use crate::command_meta::Resolved;
use crate::error::CommandError;
use crate::flags;
use crate::node::{Node, State};
use bytes::Bytes;
use locksmith_resp::{Frame, Version};
use std::collections::{HashMap, HashSet};

/// The reply to `EXEC` after a command was refused while queueing.
pub(crate) const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A client's open transaction.
#[derive(Debug, Default)]
pub(crate) struct MultiState {
    /// Commands queued since `MULTI`, in order.
    pub(crate) queue: Vec<(Resolved, Vec<Bytes>)>,
    /// A command was refused while queueing: `EXEC` will answer `EXECABORT`.
    pub(crate) aborted: bool,
    /// The flags of every queued command together, each as it was judged when queued (a
    /// script by the flags it declares): Redis's `mstate.cmd_flags`.
    flags: u32,
    /// Every flag some queued command lacks: Redis's `mstate.cmd_inv_flags`.
    lacking: u32,
}

impl MultiState {
    /// The flags of every queued command together: what an `EXEC` of the queue will do (write,
    /// grow memory, run a script), as Redis's `mstate.cmd_flags`.
    pub(crate) fn queued_flags(&self) -> u32 {
        self.flags
    }

    /// Whether some queued command lacks `flag` (Redis's `mstate.cmd_inv_flags`).
    pub(crate) fn queued_lacking(&self, flag: u32) -> bool {
        self.lacking & flag != 0
    }

    /// Queues a command whose flags, as Redis's `getCommandFlags` judges them now, are
    /// `flags` (Redis's `queueMultiCommand`).
    fn push(&mut self, resolved: Resolved, argv: &[Bytes], flags: u32) {
        self.queue.push((resolved, argv.to_vec()));
        self.flags |= flags;
        self.lacking |= !flags;
    }

    /// Whether running the queue needs the script pool (it holds `EVAL` or the like).
    pub(crate) fn runs_script(&self) -> bool {
        self.queued_flags() & flags::RUNS_SCRIPT != 0
    }
}

/// Commands that act on the transaction itself instead of being queued (Redis's list in
/// `processCommand`).
const NOT_QUEUED: &[&str] = &["exec", "discard", "multi", "watch", "quit", "reset"];

/// Commands a RESP2 client may run while subscribed.
const SUBSCRIBED_ALLOWED: &[&str] = &[
    "ping",
    "subscribe",
    "ssubscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "sunsubscribe",
    "quit",
    "reset",
];

/// Marks the open transaction, if any, as failed: a command was refused before it could be
/// queued (unknown command, wrong arity…), so `EXEC` will answer `EXECABORT`.
pub(crate) fn flag_error(client: &mut ClientState) {
    if let Some(multi) = client.multi.as_mut() {
        multi.aborted = true;
    }
}

/// The checks a resolved command passes before it runs, in Redis's order: refused inside
/// `MULTI` if flagged `no_multi`; refused in RESP2 subscribed mode unless it is one of the
/// subscribe commands, `PING`, `QUIT` or `RESET`; queued (`+QUEUED`) inside `MULTI`.
/// `Some(reply)` when the command must not run now.
/// `command_flags` are the command's flags as Redis's `getCommandFlags` gives them (a script's
/// declared flags in place of its command's), which a queued command adds to the queue's.
pub(crate) fn admit(
    resolved: Resolved,
    client: &mut ClientState,
    argv: &[Bytes],
    command_flags: u32,
) -> Option<Frame> {
    let top = resolved.top_name();
    if client.multi.is_some() && resolved.spec.has(flags::NO_MULTI) {
        flag_error(client);
        return Some(CommandError::err("Command not allowed inside a transaction").into());
    }
    if client.subscriptions > 0
        && client.resp == Version::Resp2
        && !SUBSCRIBED_ALLOWED.contains(&top)
    {
        flag_error(client);
        return Some(
            CommandError::err(format!(
                "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
                 RESET are allowed in this context",
                full_name(resolved, argv)
            ))
            .into(),
        );
    }
    let multi = client.multi.as_mut()?;
    if !would_queue(resolved) {
        return None;
    }
    multi.push(resolved, argv, command_flags);
    let queued = multi.queue.len() as i64;
    client.handle.update(|info| info.multi = queued);
    Some(Frame::simple("QUEUED"))
}

/// Whether `resolved`, sent inside `MULTI`, is queued rather than run (before the checks of
/// [`admit`] that may refuse it).
pub(crate) fn would_queue(resolved: Resolved) -> bool {
    !NOT_QUEUED.contains(&resolved.top_name())
}

/// Whether the command must run on the script pool: a script command, or an `EXEC` whose
/// queue holds one.
pub(crate) fn runs_script(resolved: Resolved, client: &ClientState) -> bool {
    resolved.spec.has(flags::RUNS_SCRIPT)
        || (resolved.spec.name == "exec"
            && resolved.first_arg == 1
            && client.multi.as_ref().is_some_and(MultiState::runs_script))
}

/// `config|get` for subcommands (Redis's `fullname`), the command name otherwise.
fn full_name(resolved: Resolved, argv: &[Bytes]) -> String {
    if resolved.first_arg > 1 {
        let container = argv
            .first()
            .map(|n| String::from_utf8_lossy(n).to_ascii_lowercase())
            .unwrap_or_default();
        format!("{container}|{}", resolved.spec.name)
    } else {
        resolved.spec.name.to_string()
    }
}

/// One key a client watches.
#[derive(Debug, Clone)]
struct Watched {
    db: usize,
    key: Bytes,
    /// The key was already logically expired when WATCHed: its deletion is then not a change.
    expired: bool,
}

/// Every WATCHed key and the clients whose transactions were invalidated.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    /// (db, key) -> watching clients.
    keys: HashMap<(usize, Bytes), Vec<u64>>,
    /// Client -> its watched keys.
    by_client: HashMap<u64, Vec<Watched>>,
    /// Clients whose watched keys were touched (Redis's `CLIENT_DIRTY_CAS`).
    dirty: HashSet<u64>,
}

impl Watches {
    /// How many clients watch keys (`INFO`'s `watching_clients`).
    pub(crate) fn clients(&self) -> usize {
        self.by_client.len()
    }

    /// How many keys are watched (`INFO`'s `total_watched_keys`).
    pub(crate) fn keys(&self) -> usize {
        self.keys.len()
    }

    /// How many keys client `id` watches (`CLIENT LIST`'s `watch`).
    pub(crate) fn watched_by(&self, id: u64) -> usize {
        self.by_client.get(&id).map_or(0, Vec::len)
    }

    /// Whether no client watches any key.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Client `id` watches `key` in `db` (`expired`: the key is logically expired now).
    pub(crate) fn watch(&mut self, id: u64, db: usize, key: &Bytes, expired: bool) {
        let mine = self.by_client.entry(id).or_default();
        if mine.iter().any(|w| w.db == db && w.key == *key) {
            return;
        }
        mine.push(Watched {
            db,
            key: key.clone(),
            expired,
        });
        self.keys.entry((db, key.clone())).or_default().push(id);
    }

    /// Forgets every key client `id` watches (the dirty flag stays, as Redis's
    /// `unwatchAllKeys`).
    pub(crate) fn unwatch_all(&mut self, id: u64) {
        for w in self.by_client.remove(&id).unwrap_or_default() {
            let slot = (w.db, w.key);
            if let Some(ids) = self.keys.get_mut(&slot) {
                ids.retain(|&c| c != id);
                if ids.is_empty() {
                    self.keys.remove(&slot);
                }
            }
        }
    }

    /// Client `id`'s watch of `key` in `db`.
    fn watched_mut(&mut self, id: u64, db: usize, key: &[u8]) -> Option<&mut Watched> {
        self.by_client
            .get_mut(&id)?
            .iter_mut()
            .find(|w| w.db == db && w.key == key)
    }

    /// Invalidates client `id`'s transaction (Redis's `CLIENT_DIRTY_CAS`), shown as the `d`
    /// flag of `CLIENT LIST`.
    fn invalidate(&mut self, node: &Node, id: u64) {
        if self.dirty.insert(id) {
            if let Some(handle) = node.clients.get(id) {
                handle.update(|info| info.set_flag('d', true));
            }
        }
    }

    /// Whether client `id`'s transaction was invalidated.
    pub(crate) fn is_dirty(&self, id: u64) -> bool {
        self.dirty.contains(&id)
    }

    /// Clears client `id`'s invalidation flag.
    pub(crate) fn clear_dirty(&mut self, id: u64) {
        self.dirty.remove(&id);
    }

    /// Forgets client `id` entirely (disconnect).
    pub(crate) fn remove_client(&mut self, id: u64) {
        self.unwatch_all(id);
        self.dirty.remove(&id);
    }
}

/// Whether `key` in `db` is physically present but past its TTL at `now`.
pub(crate) fn key_is_expired(state: &State, db: usize, key: &[u8], now: u64) -> bool {
    state
        .dbs
        .get(db)
        .and_then(|d| d.raw(key))
        .and_then(|e| e.expire_at())
        .is_some_and(|at| at <= now)
}

/// Marks the transactions of clients watching any of `modified` as invalidated (Redis's
/// `touchWatchedKey`). A key that was already expired when watched and is now gone counts as
/// unchanged.
pub(crate) fn touch_watched(state: &mut State, node: &Node, modified: &[(usize, Bytes)]) {
    if state.watches.keys.is_empty() {
        return;
    }
    for (db, key) in modified {
        let Some(ids) = state.watches.keys.get(&(*db, key.clone())) else {
            continue;
        };
        let present = state.dbs.get(*db).is_some_and(|d| d.raw(key).is_some());
        for id in ids.clone() {
            let watches = &mut state.watches;
            if let Some(w) = watches.watched_mut(id, *db, key) {
                if w.expired && !present {
                    w.expired = false;
                    continue;
                }
            }
            watches.invalidate(node, id);
        }
    }
}

/// SWAPDB of databases `a` and `b`, before the swap, for WATCH (Redis 7.0's
/// `touchAllWatchedKeysInDb` both ways): a watched key of one that is present in either is
/// touched, except where nothing logical changes: a key watched while expired that is now gone
/// or still expired, and a missing key replaced by an expired one (watched as expired from
/// then on).
pub(crate) fn touch_swapped(state: &mut State, node: &Node, a: usize, b: usize, now: u64) {
    if state.watches.is_empty() {
        return;
    }
    for (emptied, replaced_with) in [(a, b), (b, a)] {
        let watched: Vec<(Bytes, Vec<u64>)> = state
            .watches
            .keys
            .iter()
            .filter(|((db, _), _)| *db == emptied)
            .map(|((_, key), ids)| (key.clone(), ids.clone()))
            .collect();
        for (key, ids) in watched {
            let present = |db: usize| state.dbs.get(db).is_some_and(|d| d.raw(&key).is_some());
            let in_emptied = present(emptied);
            let in_replacement = present(replaced_with);
            if !in_emptied && !in_replacement {
                continue;
            }
            let replacement_expired = key_is_expired(state, replaced_with, &key, now);
            for id in ids {
                let watches = &mut state.watches;
                let Some(w) = watches.watched_mut(id, emptied, &key) else {
                    continue;
                };
                if w.expired {
                    if !in_replacement {
                        w.expired = false;
                        continue;
                    }
                    if replacement_expired {
                        continue;
                    }
                } else if !in_emptied && replacement_expired {
                    w.expired = true;
                    continue;
                }
                watches.invalidate(node, id);
            }
        }
    }
}

/// Whether client `id`'s transaction must fail with a null reply: a watched key was written,
/// or expired since it was watched.
pub(crate) fn exec_invalidated(state: &State, id: u64, now: u64) -> bool {
    state.watches.is_dirty(id)
        || state.watches.by_client.get(&id).is_some_and(|keys| {
            keys.iter()
                .any(|w| !w.expired && key_is_expired(state, w.db, &w.key, now))
        })
}

/// Ends client's transaction and watches (`EXEC`, `DISCARD`, `RESET`): Redis's
/// `discardTransaction` plus `unwatchAllKeys`.
pub(crate) fn discard(state: &mut State, client: &mut ClientState) {
    client.multi = None;
    state.watches.unwatch_all(client.id());
    state.watches.clear_dirty(client.id());
    client.handle.update(|info| {
        info.multi = -1;
        info.set_flag('x', false);
        info.set_flag('d', false);
    });
}

/// What `RESET` does to the transaction side: discards any `MULTI` and forgets WATCHes.
pub(crate) fn reset(state: &mut State, client: &mut ClientState) {
    discard(state, client);
}
