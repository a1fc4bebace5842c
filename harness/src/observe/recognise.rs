//! Recognising each lock kind's writes: hash and string locks (`write`, `delete`), and
//! Redisson's semaphores, permit ids and latches (integer counters and the permit id set).

use super::{int, text, Entry, LockEventKind, LockLayout, Observer, Table, Unit};
use bytes::Bytes;
use std::collections::BTreeMap;

impl Observer {
    /// One write of a unit.
    pub(super) fn write(
        &self,
        patterns: &[Bytes],
        unit: &mut Unit,
        table: &mut Table,
        counters: &mut BTreeMap<(usize, Bytes), i64>,
        db: usize,
        argv: &[Bytes],
    ) {
        let Some(name) = argv.first() else {
            return;
        };
        let name = name.to_ascii_lowercase();
        let now_ms = unit.node_us / 1000;
        match name.as_slice() {
            b"flushall" | b"flushdb" => {
                let keys: Vec<(usize, Bytes)> = table
                    .keys()
                    .filter(|(d, _)| name == b"flushall" || *d == db)
                    .cloned()
                    .collect();
                for (d, key) in keys {
                    if let Some(entry) = table.remove(&(d, key.clone())) {
                        for owner in entry.owners.keys() {
                            unit.push(d, &key, owner, LockEventKind::Lost, &entry, 0);
                        }
                    }
                }
                counters.retain(|(d, _), _| name != b"flushall" && *d != db);
                return;
            }
            b"incr" | b"incrby" | b"decr" | b"decrby" => {
                let (Some(key), by) = (argv.get(1), argv.get(2).and_then(|b| int(b))) else {
                    return;
                };
                let step = match name.as_slice() {
                    b"incr" => 1,
                    b"decr" => -1,
                    b"incrby" => by.unwrap_or(0),
                    _ => by.map_or(0, |b| b.saturating_neg()),
                };
                let v = counters.entry((db, key.clone())).or_insert(0);
                *v = v.saturating_add(step);
                unit.token = Some(*v);
                let value = *v;
                if self.observed(patterns, key) {
                    counted(unit, table, db, key, &name, step, value);
                }
                return;
            }
            _ => {}
        }
        if name == b"del" || name == b"unlink" {
            for key in argv.iter().skip(1) {
                counters.remove(&(db, key.clone()));
                self.delete(patterns, unit, table, db, key, now_ms);
            }
            return;
        }
        let Some(key) = argv.get(1) else {
            return;
        };
        if name == b"set" {
            if let Some(v) = argv.get(2).and_then(|v| int(v)) {
                counters.insert((db, key.clone()), v);
            }
        }
        if let Some(base) = permits_base(key) {
            if self.observed(patterns, &base) {
                permits(
                    unit,
                    table,
                    db,
                    key,
                    &base,
                    &name,
                    argv.get(2..).unwrap_or_default(),
                );
            }
            return;
        }
        if !self.observed(patterns, key) {
            return;
        }
        let slot = (db, key.clone());
        // A key whose deadline was reached is gone for the node (it propagates the `DEL` first when
        // it reclaims it; this covers a write that replaced it in place).
        if table
            .get(&slot)
            .is_some_and(|e| e.deadline_ms.is_some_and(|d| d <= now_ms))
        {
            if let Some(entry) = table.remove(&slot) {
                for owner in entry.owners.keys() {
                    unit.push(db, key, owner, LockEventKind::Expiry, &entry, 0);
                }
            }
        }
        match name.as_slice() {
            b"set" => {
                let Some(token) = argv.get(2) else {
                    return;
                };
                let deadline = set_deadline(argv, now_ms);
                let lock = table
                    .get(&slot)
                    .is_some_and(|e| e.layout == LockLayout::String);
                if let (Some(v), false) = (int(token), lock) {
                    // An integer is a semaphore's permits or a latch's count, not a token.
                    let keep = argv.iter().any(|a| a.eq_ignore_ascii_case(b"keepttl"));
                    let previous = table
                        .get(&slot)
                        .filter(|e| e.layout.is_counter())
                        .map(|e| e.value);
                    let entry = table.entry(slot).or_insert_with(Entry::counter);
                    if !entry.layout.is_counter() {
                        entry.layout = LockLayout::Counter;
                        entry.owners.clear();
                        entry.mode = None;
                    }
                    entry.value = v;
                    if !keep {
                        entry.deadline_ms = deadline;
                    }
                    let entry = entry.clone();
                    unit.push(db, key, b"", LockEventKind::Set, &entry, v);
                    if let Some(e) = unit.events.last_mut() {
                        e.previous = previous;
                    }
                    return;
                }
                let same = table.get(&slot).is_some_and(|e| {
                    e.layout == LockLayout::String && e.owners.contains_key(token)
                });
                if same {
                    if let Some(entry) = table.get_mut(&slot) {
                        if !argv.iter().any(|a| a.eq_ignore_ascii_case(b"keepttl")) {
                            entry.deadline_ms = deadline;
                        }
                        let entry = entry.clone();
                        unit.push(db, key, token, LockEventKind::Renewal, &entry, 1);
                    }
                } else {
                    if let Some(old) = table.remove(&slot) {
                        for owner in old.owners.keys() {
                            unit.push(db, key, owner, LockEventKind::Release, &old, 0);
                        }
                    }
                    let entry = Entry {
                        layout: LockLayout::String,
                        owners: BTreeMap::from([(token.clone(), 1)]),
                        mode: None,
                        deadline_ms: deadline,
                        value: 0,
                    };
                    unit.push(db, key, token, LockEventKind::Grant, &entry, 1);
                    table.insert(slot, entry);
                }
            }
            b"hincrby" | b"hset" | b"hsetnx" | b"hmset" => {
                let incr = name == b"hincrby";
                let mut pairs = argv.get(2..).unwrap_or_default().chunks_exact(2);
                for pair in pairs.by_ref() {
                    let [field, value] = pair else {
                        continue;
                    };
                    let entry = table.entry(slot.clone()).or_insert_with(|| Entry {
                        layout: LockLayout::Hash,
                        owners: BTreeMap::new(),
                        mode: None,
                        deadline_ms: None,
                        value: 0,
                    });
                    if entry.layout != LockLayout::Hash {
                        *entry = Entry {
                            layout: LockLayout::Hash,
                            owners: BTreeMap::new(),
                            mode: None,
                            deadline_ms: None,
                            value: 0,
                        };
                    }
                    if field.as_ref() == b"mode" {
                        entry.mode = Some(value.clone());
                        continue;
                    }
                    let n = int(value).unwrap_or(1);
                    let before = entry.owners.get(field).copied();
                    let after = if incr {
                        before.unwrap_or(0).saturating_add(n)
                    } else {
                        n
                    };
                    entry.owners.insert(field.clone(), after);
                    let kind = match before {
                        None | Some(0) if after > 0 => LockEventKind::Grant,
                        Some(b) if after > b => LockEventKind::Reentry,
                        Some(_) if after > 0 => LockEventKind::Exit,
                        _ => LockEventKind::Exit,
                    };
                    let entry = entry.clone();
                    unit.push(db, key, field, kind, &entry, after);
                }
            }
            b"hdel" => {
                let Some(entry) = table.get_mut(&slot) else {
                    return;
                };
                for field in argv.iter().skip(2) {
                    if field.as_ref() == b"mode" {
                        entry.mode = None;
                    } else if entry.owners.remove(field).is_some() {
                        let snapshot = entry.clone();
                        unit.push(db, key, field, LockEventKind::Release, &snapshot, 0);
                    }
                }
                if entry.owners.is_empty() && entry.mode.is_none() {
                    table.remove(&slot);
                }
            }
            b"pexpireat" | b"expireat" | b"pexpire" | b"expire" | b"persist" => {
                let Some(entry) = table.get_mut(&slot) else {
                    return;
                };
                let t = argv.get(2).and_then(|t| int(t)).map(|t| t.max(0) as u64);
                entry.deadline_ms = match name.as_slice() {
                    b"pexpireat" => t,
                    b"expireat" => t.map(|s| s.saturating_mul(1000)),
                    b"pexpire" => t.map(|ms| now_ms.saturating_add(ms)),
                    b"expire" => t.map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
                    _ => None,
                };
                let entry = entry.clone();
                unit.leased(db, key, &entry);
            }
            _ => {}
        }
    }

    /// A `DEL`/`UNLINK` of `key`: a release, an expiry, or a loss.
    pub(super) fn delete(
        &self,
        patterns: &[Bytes],
        unit: &mut Unit,
        table: &mut Table,
        db: usize,
        key: &Bytes,
        now_ms: u64,
    ) {
        let observed = match permits_base(key) {
            Some(base) => self.observed(patterns, &base),
            None => self.observed(patterns, key),
        };
        if !observed {
            return;
        }
        let Some(entry) = table.remove(&(db, key.clone())) else {
            return;
        };
        if unit.zeroed.contains(&(db, key.clone())) {
            // A latch counted down to zero deletes itself: that is its opening, not a reset.
            return;
        }
        let expired = entry.deadline_ms.is_some_and(|d| d <= now_ms);
        let kind = if expired {
            LockEventKind::Expiry
        } else if !unit.from_client && !unit.replica {
            // The node removed it itself before its deadline: eviction.
            LockEventKind::Lost
        } else {
            LockEventKind::Release
        };
        if entry.layout.is_counter() {
            unit.push(db, key, b"", kind, &entry, entry.value);
        }
        for owner in entry.owners.keys() {
            unit.push(db, key, owner, kind, &entry, 0);
        }
    }
}

/// Redisson's lease date of a permit that never expires (`Long.MAX_VALUE / 10000`).
pub(super) const NO_LEASE_DATE: i64 = 922_337_203_685_477;

/// The semaphore a permit-expirable semaphore's id set belongs to: `name` of `{name}:timeout`.
pub(super) fn permits_base(key: &[u8]) -> Option<Bytes> {
    let inner = key.strip_suffix(b"}:timeout")?.strip_prefix(b"{")?;
    Some(Bytes::copy_from_slice(inner))
}

pub(super) fn hex(b: &[u8]) -> Bytes {
    let mut out = String::with_capacity(b.len() * 2);
    for byte in b {
        out.push_str(&format!("{byte:02x}"));
    }
    Bytes::from(out)
}

/// An `INCR`/`INCRBY`/`DECR`/`DECRBY` of an observed key that left it at `value`: a latch
/// counted down (`DECR`), a semaphore's permits taken (`DECRBY`) or returned (`INCRBY`).
pub(super) fn counted(
    unit: &mut Unit,
    table: &mut Table,
    db: usize,
    key: &Bytes,
    name: &[u8],
    step: i64,
    value: i64,
) {
    let slot = (db, key.clone());
    let entry = table.entry(slot.clone()).or_insert_with(Entry::counter);
    if !entry.layout.is_counter() {
        // A lock's key written as a number is no longer a lock.
        *entry = Entry::counter();
    }
    entry.value = value;
    let (layout, kind, count) = match name {
        b"decr" => (LockLayout::Latch, LockEventKind::CountDown, value),
        _ if step < 0 => (
            LockLayout::Semaphore,
            LockEventKind::Take,
            step.saturating_neg(),
        ),
        _ => (LockLayout::Semaphore, LockEventKind::Return, step),
    };
    entry.layout = layout;
    let entry = entry.clone();
    unit.push(db, key, b"", kind, &entry, count);
    match kind {
        LockEventKind::Take => {
            unit.took.insert(slot, count);
        }
        LockEventKind::CountDown if value <= 0 => {
            unit.zeroed.insert(slot);
        }
        _ => {}
    }
}

/// Permits of a permit-expirable semaphore taken by a unit that added no new id to its id
/// set: a retried acquire whose id was already there (its `ZADD` changed nothing, so the node
/// did not propagate it). Recorded as a [`LockEventKind::Take`] of the id set.
pub(super) fn took_without_id(unit: &mut Unit, table: &Table) {
    let took: Vec<((usize, Bytes), i64)> = unit.took.iter().map(|(k, n)| (k.clone(), *n)).collect();
    for ((db, base), n) in took {
        let mut zset = b"{".to_vec();
        zset.extend_from_slice(&base);
        zset.extend_from_slice(b"}:timeout");
        let zset = Bytes::from(zset);
        let Some(entry) = table
            .get(&(db, zset.clone()))
            .filter(|e| e.layout == LockLayout::Permits)
        else {
            continue;
        };
        let name = text(&zset);
        let granted = unit
            .events
            .iter()
            .any(|e| e.key == name && e.kind == LockEventKind::Grant);
        if !granted {
            let entry = entry.clone();
            unit.push(db, &zset, b"", LockEventKind::Take, &entry, n);
        }
    }
}

/// A write of `key`, the id set `{base}:timeout` of a permit-expirable semaphore: `ZADD`
/// grants an id (with permits taken in the same unit) or moves its lease, `ZREM` releases it
/// or, once its lease date has passed, expires it.
pub(super) fn permits(
    unit: &mut Unit,
    table: &mut Table,
    db: usize,
    key: &Bytes,
    base: &Bytes,
    name: &[u8],
    args: &[Bytes],
) {
    let slot = (db, key.clone());
    let now_ms = unit.node_us / 1000;
    match name {
        b"zadd" => {
            // Options first (Redisson sends none), then score/member pairs.
            let first = args
                .iter()
                .position(|a| int(a).is_some() || a.as_ref().contains(&b'.'))
                .unwrap_or(args.len());
            let took = unit.took.contains_key(&(db, base.clone()));
            for pair in args.get(first..).unwrap_or_default().chunks_exact(2) {
                let [score, id] = pair else {
                    continue;
                };
                let Some(date) = int(score) else {
                    continue;
                };
                let entry = table.entry(slot.clone()).or_insert_with(|| Entry {
                    layout: LockLayout::Permits,
                    owners: BTreeMap::new(),
                    mode: None,
                    deadline_ms: None,
                    value: 0,
                });
                if entry.layout != LockLayout::Permits {
                    return;
                }
                let id = hex(id);
                let before = entry.owners.insert(id.clone(), date);
                let kind = if took || before.is_none() {
                    LockEventKind::Grant
                } else {
                    LockEventKind::Renewal
                };
                let lease = (date < NO_LEASE_DATE).then(|| date.max(0) as u64);
                let end = unit.lease_end(lease);
                let entry = entry.clone();
                unit.push(db, key, &id, kind, &entry, 1);
                if let Some(e) = unit.events.last_mut() {
                    e.lease_end_us = end;
                }
            }
        }
        b"zrem" => {
            let Some(entry) = table.get_mut(&slot) else {
                return;
            };
            if entry.layout != LockLayout::Permits {
                return;
            }
            for id in args {
                let id = hex(id);
                let Some(date) = entry.owners.remove(&id) else {
                    continue;
                };
                let kind = if date >= 0 && (date as u64) <= now_ms {
                    LockEventKind::Expiry
                } else {
                    LockEventKind::Release
                };
                let snapshot = entry.clone();
                unit.push(db, key, &id, kind, &snapshot, 0);
            }
            if entry.owners.is_empty() {
                table.remove(&slot);
            }
        }
        _ => {}
    }
}

/// The deadline (unix ms on the node's clock) a propagated `SET` carries.
pub(super) fn set_deadline(argv: &[Bytes], now_ms: u64) -> Option<u64> {
    let mut i = 3;
    while let Some(opt) = argv.get(i) {
        let value = argv
            .get(i + 1)
            .and_then(|v| int(v))
            .map(|v| v.max(0) as u64);
        let opt = opt.to_ascii_lowercase();
        match opt.as_slice() {
            b"pxat" => return value,
            b"exat" => return value.map(|s| s.saturating_mul(1000)),
            b"px" => return value.map(|ms| now_ms.saturating_add(ms)),
            b"ex" => return value.map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
            _ => i += 1,
        }
    }
    None
}
