//! The stream type, as Redis 7.0's `t_stream.c` keeps it: entries ordered by ID, grouped in
//! nodes the way Redis fills its listpacks (at most `stream-node-max-entries` entries, about
//! `stream-node-max-bytes` bytes), so `MAXLEN ~`/`MINID ~` trim the same whole nodes; the
//! counters behind `XINFO` (entries added, the largest deleted ID, the recorded first ID); and
//! consumer groups with their pending entries lists (PEL), per group and per consumer.

use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How full a node may get before a new one starts (`stream-node-max-entries`,
/// `stream-node-max-bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeLimits {
    /// Entries, deleted ones included (0: no bound).
    pub(crate) entries: usize,
    /// Estimated bytes (0: Redis's 1 GB listpack bound).
    pub(crate) bytes: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            entries: 100,
            bytes: 4096,
        }
    }
}

/// `STREAM_LISTPACK_MAX_SIZE`.
const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// A stream entry ID, `<ms>-<seq>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct StreamId {
    /// Milliseconds part.
    pub(crate) ms: u64,
    /// Sequence part.
    pub(crate) seq: u64,
}

impl StreamId {
    /// `0-0`.
    pub(crate) const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub(crate) const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// `streamIncrID`: the next ID, `None` past the largest.
    pub(crate) fn next(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId { ms: ms + 1, seq: 0 }),
            (ms, seq) => Some(StreamId { ms, seq: seq + 1 }),
        }
    }

    /// `streamDecrID`: the previous ID, `None` before `0-0`.
    pub(crate) fn prev(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId {
                ms: ms - 1,
                seq: u64::MAX,
            }),
            (ms, seq) => Some(StreamId { ms, seq: seq - 1 }),
        }
    }

    /// The ID as a bulk string.
    pub(crate) fn to_bytes(self) -> Bytes {
        Bytes::from(self.to_string())
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// A pending entry: delivered to a consumer of a group, not acknowledged yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The consumer that owns it.
    pub(crate) consumer: Bytes,
    /// Unix ms of the last delivery.
    pub(crate) delivery_time: u64,
    /// Deliveries so far.
    pub(crate) delivery_count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Consumer {
    /// Unix ms of its last interaction.
    pub(crate) seen_time: u64,
    /// Unix ms of its last successful read or claim (Redis 7.2's `active-time`), -1 before
    /// any; kept in RDB type 21.
    pub(crate) active_time: i64,
    /// The IDs it owns in the group's PEL.
    pub(crate) pel: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Group {
    /// The last ID delivered to the group.
    pub(crate) last_id: StreamId,
    /// The logical number of entries read (`entries-read`); `None` when unknown.
    pub(crate) entries_read: Option<u64>,
    /// Pending entries by ID.
    pub(crate) pel: BTreeMap<StreamId, Pending>,
    /// Consumers by name.
    pub(crate) consumers: BTreeMap<Bytes, Consumer>,
}

impl Group {
    /// Assigns pending entry `id` to `consumer` (creating or moving it), delivered at `now`
    /// with `count` deliveries; the consumer was active at `active_at` (Redis 7.2's
    /// `active_time`, set by every read or claim that gives it an entry).
    pub(crate) fn assign(
        &mut self,
        id: StreamId,
        consumer: &Bytes,
        now: u64,
        count: u64,
        active_at: u64,
    ) {
        if let Some(old) = self.pel.get(&id) {
            if old.consumer != *consumer {
                if let Some(c) = self.consumers.get_mut(&old.consumer) {
                    c.pel.remove(&id);
                }
            }
        }
        self.pel.insert(
            id,
            Pending {
                consumer: consumer.clone(),
                delivery_time: now,
                delivery_count: count,
            },
        );
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
            c.active_time = i64::try_from(active_at).unwrap_or(i64::MAX);
        }
    }

    /// Drops pending entry `id`; whether it was pending.
    pub(crate) fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(p) => {
                if let Some(c) = self.consumers.get_mut(&p.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }
}

/// A node: how Redis's listpack for these entries is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node {
    /// Entries not deleted.
    live: usize,
    /// Entries ever inserted (deleted ones stay as tombstones until the node goes).
    inserted: usize,
    /// Estimated listpack bytes.
    bytes: usize,
    /// The ID of the last entry appended to it, deleted or not (Redis reads the listpack's
    /// last entry, tombstones included, when it trims by MINID).
    last: StreamId,
}

/// A stream value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stream {
    /// Entries by ID: field, value, field, value...
    entries: BTreeMap<StreamId, Box<[Bytes]>>,
    /// Nodes by the ID of their first entry (Redis's master ID).
    nodes: BTreeMap<StreamId, Node>,
    /// The fields of each node's first entry (Redis's master fields), for the size estimate.
    master_fields: BTreeMap<StreamId, Box<[Bytes]>>,
    /// The last ID generated (`last-generated-id`).
    pub(crate) last_id: StreamId,
    /// `recorded-first-entry-id`.
    pub(crate) first_id: StreamId,
    /// `max-deleted-entry-id`.
    pub(crate) max_deleted_id: StreamId,
    /// `entries-added`.
    pub(crate) entries_added: u64,
    /// Consumer groups by name.
    pub(crate) groups: BTreeMap<Bytes, Group>,
}

impl Stream {
    /// The allocations freeing this stream takes, as Redis 7.0's `lazyfreeGetFreeEffort`
    /// estimates them: its radix tree's nodes (about two per listpack node, as in
    /// [`rax_usage`]), and per consumer group one plus the first group's pending entries.
    pub(crate) fn free_effort(&self) -> usize {
        let pel = self.groups.values().next().map_or(0, |g| g.pel.len());
        2 * self.nodes.len() + self.groups.len() * (1 + pel)
    }
}

/// Bytes of a listpack element holding `s` (integers are stored as such, as `lpAppend` does).
pub(crate) fn element_size(s: &[u8]) -> usize {
    let data = match locksmith_resp::parse_integer(s) {
        Some(v) if (0..=127).contains(&v) => 1,
        Some(v) if (-4096..4096).contains(&v) => 2,
        Some(v) if i16::try_from(v).is_ok() => 3,
        Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => 4,
        Some(v) if i32::try_from(v).is_ok() => 5,
        Some(_) => 9,
        None if s.len() < 64 => 1 + s.len(),
        None if s.len() < 4096 => 2 + s.len(),
        None => 5 + s.len(),
    };
    data + backlen_size(data)
}

/// Redis's `streamRadixTreeMemoryUsage` of a radix tree of `elements` stream IDs with
/// `nodes_per_id` nodes each: 16 bytes per ID and a rough 244 per node (a 4-byte header and
/// 30 pointers), the root at least. The tree of a stream's nodes holds few IDs far apart
/// (about two nodes each), a PEL many close ones (about one each).
fn rax_usage(elements: usize, nodes_per_id: usize) -> usize {
    let nodes = (nodes_per_id * elements).max(1);
    16 * elements + nodes * (4 + 8 * 30)
}

/// Bytes of a listpack element holding the integer `v`.
fn int_size(v: u64) -> usize {
    element_size(v.to_string().as_bytes())
}

fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    }
}

impl Stream {
    /// Live entries (`XLEN`).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Nodes (`radix-tree-keys`).
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes of Redis's radix tree over the node keys (`radix-tree-nodes`): the 16-byte
    /// big-endian IDs, with a node at the root, at every key, at every branching point, at
    /// each child of one, and where a single-child chain ends (rax's compressed layout).
    pub(crate) fn rax_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self
            .nodes
            .keys()
            .map(|id| {
                let mut k = [0u8; 16];
                k[..8].copy_from_slice(&id.ms.to_be_bytes());
                k[8..].copy_from_slice(&id.seq.to_be_bytes());
                k
            })
            .collect();
        let mut children: std::collections::HashMap<&[u8], BTreeSet<u8>> =
            std::collections::HashMap::new();
        for k in &keys {
            for len in 0..16 {
                children.entry(&k[..len]).or_default().insert(k[len]);
            }
        }
        let fanout = |p: &[u8]| children.get(p).map_or(0, BTreeSet::len);
        let mut positions: BTreeSet<&[u8]> = BTreeSet::new();
        for k in &keys {
            for len in 0..=16 {
                positions.insert(&k[..len]);
            }
        }
        if positions.is_empty() {
            return 1;
        }
        positions
            .into_iter()
            .filter(|q| match q.len() {
                0 | 16 => true,
                len => fanout(&q[..len - 1]) >= 2 || fanout(q) != 1,
            })
            .count()
    }

    /// The first and last live entries.
    pub(crate) fn first(&self) -> Option<(StreamId, &[Bytes])> {
        self.entries.iter().next().map(|(id, f)| (*id, &f[..]))
    }

    /// The last live entry.
    pub(crate) fn last(&self) -> Option<(StreamId, &[Bytes])> {
        self.entries.iter().next_back().map(|(id, f)| (*id, &f[..]))
    }

    /// The entry `id`, if live.
    pub(crate) fn get(&self, id: StreamId) -> Option<&[Bytes]> {
        self.entries.get(&id).map(|f| &f[..])
    }

    /// Live entries in `start..=end`, in order (`rev`: from the end).
    pub(crate) fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (StreamId, &[Bytes])> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let it = self.entries.range(start..=end).map(|(id, f)| (*id, &f[..]));
        if rev {
            Box::new(it.rev())
        } else {
            Box::new(it)
        }
    }

    /// The node `id` belongs to.
    fn node_of(&self, id: StreamId) -> Option<StreamId> {
        self.nodes.range(..=id).next_back().map(|(k, _)| *k)
    }

    /// The ID `XADD` would give with `requested` (`None`: `*`; `Some((id, false))`: `<ms>-*`)
    /// at `now_ms`; `None` when it is not greater than the last ID (or overflows).
    pub(crate) fn next_id(
        &self,
        requested: Option<(StreamId, bool)>,
        now_ms: u64,
    ) -> Option<StreamId> {
        let id = match requested {
            Some((id, true)) => id,
            Some((id, false)) => {
                if id.ms == self.last_id.ms {
                    self.last_id.next().filter(|n| n.ms == id.ms)?
                } else {
                    id
                }
            }
            None => {
                if now_ms > self.last_id.ms {
                    StreamId { ms: now_ms, seq: 0 }
                } else {
                    self.last_id.next()?
                }
            }
        };
        (id > self.last_id).then_some(id)
    }

    /// Appends an entry at `id` (greater than the last ID, checked by [`Stream::next_id`]),
    /// in the tail node unless `limits` says it is full.
    pub(crate) fn append(&mut self, id: StreamId, fields: Box<[Bytes]>, limits: NodeLimits) {
        let max_bytes = match limits.bytes {
            0 => LISTPACK_MAX_SIZE,
            b => b.min(LISTPACK_MAX_SIZE),
        };
        let field_bytes: usize = fields.iter().map(|f| f.len()).sum();
        let tail = self
            .nodes
            .iter()
            .next_back()
            .map(|(k, n)| (*k, *n))
            .filter(|(_, n)| n.bytes + field_bytes < max_bytes)
            .filter(|(_, n)| limits.entries == 0 || n.inserted < limits.entries);
        let node_key = match tail {
            Some((key, _)) => key,
            _ => {
                // A new node: the listpack header, its master entry and terminator.
                let masters: Box<[Bytes]> = fields.iter().step_by(2).cloned().collect();
                let master_bytes: usize = 6
                    + 1
                    + int_size(1)
                    + int_size(0)
                    + int_size(masters.len() as u64)
                    + masters.iter().map(|f| element_size(f)).sum::<usize>()
                    + int_size(0);
                self.nodes.insert(
                    id,
                    Node {
                        live: 0,
                        inserted: 0,
                        bytes: master_bytes,
                        last: id,
                    },
                );
                self.master_fields.insert(id, masters);
                id
            }
        };
        let same_fields = self.master_fields.get(&node_key).is_some_and(|m| {
            m.len() * 2 == fields.len()
                && m.iter().zip(fields.iter().step_by(2)).all(|(a, b)| a == b)
        });
        let pairs = (fields.len() / 2) as u64;
        let mut bytes = int_size(0)
            + int_size(id.ms.wrapping_sub(node_key.ms))
            + int_size(id.seq.wrapping_sub(node_key.seq))
            + int_size(pairs + if same_fields { 3 } else { 4 });
        if same_fields {
            bytes += fields
                .iter()
                .skip(1)
                .step_by(2)
                .map(|v| element_size(v))
                .sum::<usize>();
        } else {
            bytes += int_size(pairs) + fields.iter().map(|f| element_size(f)).sum::<usize>();
        }
        if let Some(node) = self.nodes.get_mut(&node_key) {
            node.live += 1;
            node.inserted += 1;
            node.bytes += bytes;
            node.last = id;
        }
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
        if self.entries.len() == 1 {
            self.first_id = id;
        }
    }

    /// Removes entry `id` (`XDEL`); whether it was live. Updates the largest deleted ID and
    /// the recorded first ID as Redis does.
    pub(crate) fn delete(&mut self, id: StreamId) -> bool {
        if !self.remove_entry(id) {
            return false;
        }
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        if self.entries.is_empty() {
            self.first_id = StreamId::MIN;
        } else if id == self.first_id {
            self.first_id = self.first().map_or(StreamId::MAX, |(f, _)| f);
        }
        true
    }

    /// Drops an entry and, when its node has no live entry left, the node.
    fn remove_entry(&mut self, id: StreamId) -> bool {
        if self.entries.remove(&id).is_none() {
            return false;
        }
        if let Some(key) = self.node_of(id) {
            let gone = match self.nodes.get_mut(&key) {
                Some(node) => {
                    node.live -= 1;
                    node.live == 0
                }
                None => false,
            };
            if gone {
                self.nodes.remove(&key);
                self.master_fields.remove(&key);
            }
        }
        true
    }

    /// `streamTrim`: removes entries from the head until at most `maxlen` remain
    /// (`Trim::MaxLen`) or none below `minid` (`Trim::MinId`). With `approx`, only whole
    /// nodes go; `limit` (0: none) bounds the entries removed. Returns how many went.
    pub(crate) fn trim(&mut self, trim: Trim, approx: bool, limit: usize) -> usize {
        let mut deleted = 0;
        while let Some((&key, &node)) = self.nodes.iter().next() {
            if let Trim::MaxLen(maxlen) = trim {
                if self.entries.len() <= maxlen {
                    break;
                }
            }
            if limit > 0 && deleted + node.live > limit {
                break;
            }
            let next_key = self.nodes.range(key..).nth(1).map(|(k, _)| *k);
            let node_entries: Vec<StreamId> = match next_key {
                Some(n) => self.entries.range(key..n).map(|(id, _)| *id).collect(),
                None => self.entries.range(key..).map(|(id, _)| *id).collect(),
            };
            let whole = match trim {
                Trim::MaxLen(maxlen) => self.entries.len() - node.live >= maxlen,
                Trim::MinId(minid) => node.last < minid,
            };
            if whole {
                for id in node_entries {
                    self.entries.remove(&id);
                }
                self.nodes.remove(&key);
                self.master_fields.remove(&key);
                deleted += node.live;
                continue;
            }
            if approx {
                break;
            }
            for id in node_entries {
                let done = match trim {
                    Trim::MaxLen(maxlen) => self.entries.len() <= maxlen,
                    Trim::MinId(minid) => id >= minid,
                };
                if done {
                    break;
                }
                self.remove_entry(id);
                deleted += 1;
            }
            break;
        }
        if self.entries.is_empty() {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.first().map_or(StreamId::MAX, |(f, _)| f);
        }
        deleted
    }

    /// `streamRangeHasTombstones`: whether a deleted entry may lie in `start..=end`.
    pub(crate) fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.entries.is_empty() || self.max_deleted_id == StreamId::MIN {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// `streamEstimateDistanceFromFirstEverEntry`: the logical read counter of `id`, when
    /// it can be known.
    pub(crate) fn distance_from_first(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.entries.is_empty() && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        let len = self.entries.len() as u64;
        if self.max_deleted_id == StreamId::MIN || self.max_deleted_id < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return Some(self.entries_added - len),
                std::cmp::Ordering::Equal => return Some(self.entries_added - len + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }

    /// `streamReplyWithCGLag`: entries the group has yet to read, when known (negative when a
    /// group's `ENTRIESREAD` was set past what was added, as Redis reports it).
    pub(crate) fn group_lag(&self, group: &Group) -> Option<i64> {
        let lag = |read: u64| (self.entries_added as i64).wrapping_sub(read as i64);
        if self.entries_added == 0 {
            return Some(0);
        }
        if let Some(read) = group.entries_read {
            if !self.range_has_tombstones(group.last_id, StreamId::MAX) {
                return Some(lag(read));
            }
        }
        self.distance_from_first(group.last_id).map(lag)
    }

    /// Each node with its master fields, live entries and last ID (a tombstone's, if the last
    /// entry appended was deleted), in order (for the RDB form).
    pub(crate) fn nodes(&self) -> Vec<NodeView<'_>> {
        let keys: Vec<StreamId> = self.nodes.keys().copied().collect();
        keys.iter()
            .enumerate()
            .map(|(i, &key)| {
                let entries = match keys.get(i + 1) {
                    Some(&next) => self.entries.range(key..next),
                    None => self.entries.range(key..),
                }
                .map(|(id, f)| (*id, &f[..]))
                .collect();
                let masters = self.master_fields.get(&key).map_or(&[][..], |m| &m[..]);
                let last = self.nodes.get(&key).map_or(key, |n| n.last);
                (key, masters, entries, last)
            })
            .collect()
    }

    /// Adds a node read from an RDB payload: its key, master fields, live entries (in
    /// order, after the previous node's) and how many entries it held in all, and its size.
    pub(crate) fn push_node(
        &mut self,
        key: StreamId,
        masters: Box<[Bytes]>,
        entries: Vec<(StreamId, Box<[Bytes]>)>,
        (inserted, bytes, last): (usize, usize, StreamId),
    ) {
        let live = entries.len();
        for (id, fields) in entries {
            self.entries.insert(id, fields);
        }
        if live > 0 {
            self.nodes.insert(
                key,
                Node {
                    live,
                    inserted: inserted.max(live),
                    bytes,
                    last,
                },
            );
            self.master_fields.insert(key, masters);
        }
    }

    /// Redis's `objectComputeSize` of a stream beyond the object header: the stream struct,
    /// the radix tree of nodes, the nodes' listpacks (the first `samples` (0: all) read,
    /// their average standing for the others but the last, which is read too) and the
    /// consumer groups with their PELs and consumers. A node is allocated as Redis does: the
    /// last one with room for 4096 bytes, the others shrunk to fit once closed.
    pub(crate) fn memory_usage(&self, samples: usize) -> usize {
        /// `sizeof(stream)`.
        const STREAM: usize = 80;
        /// `sizeof(streamCG)`.
        const GROUP: usize = 40;
        /// `sizeof(streamConsumer)`.
        const CONSUMER: usize = 24;
        /// `sizeof(streamNACK)`.
        const NACK: usize = 24;
        /// A new node's listpack is allocated with this much room
        /// (`STREAM_LISTPACK_MAX_PRE_ALLOCATE`).
        const PREALLOC: usize = 4096;
        let count = self.nodes.len();
        let samples = if samples == 0 { count } else { samples };
        let alloc = |(i, node): (usize, &Node)| {
            let shrunk = super::memory::allocation(node.bytes);
            if i + 1 == count {
                shrunk.max(PREALLOC)
            } else {
                shrunk
            }
        };
        let sampled: Vec<usize> = self
            .nodes
            .values()
            .enumerate()
            .take(samples)
            .map(alloc)
            .collect();
        let listpacks = if count <= sampled.len() {
            sampled.iter().sum()
        } else {
            let average = sampled.iter().sum::<usize>() / sampled.len().max(1);
            let last = self
                .nodes
                .values()
                .last()
                .map_or(0, |n| alloc((count - 1, n)));
            average * (count - 1) + last
        };
        let groups: usize = self
            .groups
            .values()
            .map(|g| {
                let consumers: usize = g
                    .consumers
                    .iter()
                    .map(|(name, c)| CONSUMER + name.len() + rax_usage(c.pel.len(), 1))
                    .sum();
                GROUP + rax_usage(g.pel.len(), 1) + NACK * g.pel.len() + consumers
            })
            .sum();
        STREAM + rax_usage(count, 2) + listpacks + groups
    }
}

/// A node as the RDB form writes it: its key (master ID), master fields, live entries, and the
/// ID of the last entry appended to it.
pub(crate) type NodeView<'a> = (
    StreamId,
    &'a [Bytes],
    Vec<(StreamId, &'a [Bytes])>,
    StreamId,
);

/// A trimming strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trim {
    /// Keep at most this many entries.
    MaxLen(usize),
    /// Keep entries with IDs at least this.
    MinId(StreamId),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(n: usize) -> Box<[Bytes]> {
        (0..n)
            .flat_map(|i| [Bytes::from(format!("f{i}")), Bytes::from_static(b"v")])
            .collect()
    }

    fn id(ms: u64) -> StreamId {
        StreamId { ms, seq: 0 }
    }

    #[test]
    fn ids_step_and_generate_as_redis() {
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::MIN.prev(), None);
        assert_eq!(
            StreamId {
                ms: 1,
                seq: u64::MAX
            }
            .next(),
            Some(StreamId { ms: 2, seq: 0 })
        );
        let mut s = Stream::default();
        assert_eq!(s.next_id(None, 5), Some(id(5)));
        s.append(id(5), fields(1), NodeLimits::default());
        assert_eq!(s.next_id(None, 3), Some(StreamId { ms: 5, seq: 1 }));
        assert_eq!(
            s.next_id(Some((id(5), false)), 0),
            Some(StreamId { ms: 5, seq: 1 })
        );
        assert_eq!(s.next_id(Some((id(5), true)), 0), None);
        assert_eq!(s.next_id(Some((id(4), false)), 0), None);
    }

    #[test]
    fn approximate_trimming_removes_whole_nodes_only() {
        let mut s = Stream::default();
        for ms in 1..=250 {
            s.append(id(ms), fields(1), NodeLimits::default());
        }
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first_id, id(131));
        assert_eq!(s.trim(Trim::MinId(id(240)), false, 0), 109);
        assert_eq!(s.first().map(|(i, _)| i), Some(id(240)));
    }

    #[test]
    fn deletes_keep_tombstone_counters() {
        let mut s = Stream::default();
        for ms in 1..=3 {
            s.append(id(ms), fields(2), NodeLimits::default());
        }
        assert!(s.delete(id(1)));
        assert!(!s.delete(id(1)));
        assert_eq!(s.max_deleted_id, id(1));
        assert_eq!(s.first_id, id(2));
        assert!(!s.range_has_tombstones(id(2), StreamId::MAX));
        assert_eq!(s.distance_from_first(id(2)), Some(2));
        assert!(s.delete(id(2)) && s.delete(id(3)));
        assert_eq!(s.first_id, StreamId::MIN);
        assert_eq!(s.node_count(), 0);
        assert_eq!(s.entries_added, 3);
    }
}
