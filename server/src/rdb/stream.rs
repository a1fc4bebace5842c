//! Streams in RDB form (`RDB_TYPE_STREAM_LISTPACKS_2`, Valkey's `RDB_TYPE_STREAM_LISTPACKS_3`
//! with each consumer's active time, and reading the older `RDB_TYPE_STREAM_LISTPACKS`): each node as Redis's listpack (a master entry, then entries
//! delta-encoded against the node's ID, with the same-fields flag), the stream's counters,
//! and its consumer groups with their pending entries and consumers.

use super::listpack::Listpack;
use super::value::{listpack_elements, Element};
use super::{write_len, write_string, Malformed, Reader};
use crate::db::stream::{Consumer, Group, Pending, Stream, StreamId};
use bytes::Bytes;

/// Entry flag: deleted (a tombstone).
const FLAG_DELETED: i64 = 1;
/// Entry flag: same fields as the master entry (only values follow).
const FLAG_SAMEFIELDS: i64 = 2;

/// The 16 bytes of an ID as rax keys and PELs store it (big-endian).
fn raw_id(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

fn read_raw_id(r: &mut Reader<'_>) -> Result<StreamId, Malformed> {
    let b = r.take(16)?;
    let ms = u64::from_be_bytes(b[..8].try_into().map_err(|_| Malformed)?);
    let seq = u64::from_be_bytes(b[8..].try_into().map_err(|_| Malformed)?);
    Ok(StreamId { ms, seq })
}

/// Writes the body of `RDB_TYPE_STREAM_LISTPACKS_2` for `s`, or of
/// `RDB_TYPE_STREAM_LISTPACKS_3` with `active_time`.
pub(crate) fn write(out: &mut Vec<u8>, s: &Stream, compress: bool, active_time: bool) {
    let nodes = s.nodes();
    write_len(out, nodes.len() as u64);
    for (key, masters, entries, last) in nodes {
        write_string(out, &raw_id(key), compress);
        // When the last entry appended was deleted, it stays as a tombstone (as in Redis's
        // listpack), so trimming by MINID after a reload sees the same last ID.
        let tombstone = entries.last().is_none_or(|(id, _)| *id < last);
        let mut lp = Listpack::new();
        lp.int(entries.len() as i64);
        lp.int(i64::from(tombstone));
        lp.int(masters.len() as i64);
        for f in masters {
            lp.string(f);
        }
        lp.int(0);
        for (id, fields) in entries {
            let pairs = fields.len() / 2;
            let same = pairs == masters.len()
                && masters
                    .iter()
                    .zip(fields.iter().step_by(2))
                    .all(|(a, b)| a == b);
            lp.int(if same { FLAG_SAMEFIELDS } else { 0 });
            lp.int(id.ms.wrapping_sub(key.ms) as i64);
            lp.int(id.seq.wrapping_sub(key.seq) as i64);
            if same {
                for v in fields.iter().skip(1).step_by(2) {
                    lp.string(v);
                }
                lp.int((pairs + 3) as i64);
            } else {
                lp.int(pairs as i64);
                for f in fields {
                    lp.string(f);
                }
                lp.int((2 * pairs + 4) as i64);
            }
        }
        if tombstone {
            lp.int(FLAG_DELETED | FLAG_SAMEFIELDS);
            lp.int(last.ms.wrapping_sub(key.ms) as i64);
            lp.int(last.seq.wrapping_sub(key.seq) as i64);
            for _ in masters {
                lp.string(b"");
            }
            lp.int((masters.len() + 3) as i64);
        }
        write_string(out, &lp.finish(), compress);
    }
    write_len(out, s.len() as u64);
    for v in [
        s.last_id.ms,
        s.last_id.seq,
        s.first_id.ms,
        s.first_id.seq,
        s.max_deleted_id.ms,
        s.max_deleted_id.seq,
        s.entries_added,
    ] {
        write_len(out, v);
    }
    write_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        write_string(out, name, compress);
        write_len(out, g.last_id.ms);
        write_len(out, g.last_id.seq);
        write_len(out, g.entries_read.unwrap_or(u64::MAX));
        write_len(out, g.pel.len() as u64);
        for (id, p) in &g.pel {
            out.extend_from_slice(&raw_id(*id));
            out.extend_from_slice(&p.delivery_time.to_le_bytes());
            write_len(out, p.delivery_count);
        }
        write_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            write_string(out, cname, compress);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            if active_time {
                out.extend_from_slice(&c.active_time.to_le_bytes());
            }
            write_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&raw_id(*id));
            }
        }
    }
}

/// Reads a stream body; `v2` for `RDB_TYPE_STREAM_LISTPACKS_2` and later, `active_time` for
/// `RDB_TYPE_STREAM_LISTPACKS_3`.
pub(crate) fn read(r: &mut Reader<'_>, v2: bool, active_time: bool) -> Result<Stream, Malformed> {
    let mut s = Stream::default();
    let nodes = r.count(2)?;
    let mut last_key: Option<StreamId> = None;
    for _ in 0..nodes {
        let key_bytes = r.string()?;
        if key_bytes.len() != 16 {
            return Err(Malformed);
        }
        let key = read_raw_id(&mut Reader::new(&key_bytes))?;
        if last_key.is_some_and(|k| k >= key) {
            return Err(Malformed);
        }
        last_key = Some(key);
        let blob = r.string()?;
        let els = listpack_elements(&blob)?;
        let mut it = els.iter();
        let mut next_int = || it.next().ok_or(Malformed).and_then(Element::int);
        let live = usize::try_from(next_int()?).map_err(|_| Malformed)?;
        let deleted = usize::try_from(next_int()?).map_err(|_| Malformed)?;
        let nmaster = usize::try_from(next_int()?).map_err(|_| Malformed)?;
        let mut it = els.iter().skip(3);
        let masters: Box<[Bytes]> = (0..nmaster)
            .map(|_| it.next().map(Element::bytes).ok_or(Malformed))
            .collect::<Result<_, _>>()?;
        if it.next().map(Element::int) != Some(Ok(0)) {
            return Err(Malformed);
        }
        let mut entries = Vec::with_capacity(live);
        let mut last = key;
        for _ in 0..live.saturating_add(deleted) {
            let mut int = || it.next().ok_or(Malformed).and_then(Element::int);
            let flags = int()?;
            let ms = key.ms.wrapping_add(int()? as u64);
            let seq = key.seq.wrapping_add(int()? as u64);
            let fields: Box<[Bytes]> = if flags & FLAG_SAMEFIELDS != 0 {
                let mut f = Vec::with_capacity(nmaster * 2);
                for m in masters.iter() {
                    f.push(m.clone());
                    f.push(it.next().map(Element::bytes).ok_or(Malformed)?);
                }
                f.into_boxed_slice()
            } else {
                let n =
                    usize::try_from(it.next().ok_or(Malformed)?.int()?).map_err(|_| Malformed)?;
                (0..n.saturating_mul(2))
                    .map(|_| it.next().map(Element::bytes).ok_or(Malformed))
                    .collect::<Result<_, _>>()?
            };
            it.next().ok_or(Malformed)?; // lp-count
            let id = StreamId { ms, seq };
            last = last.max(id);
            if flags & FLAG_DELETED == 0 {
                if entries
                    .last()
                    .is_some_and(|(last, _): &(StreamId, _)| *last >= id)
                {
                    return Err(Malformed);
                }
                entries.push((id, fields));
            }
        }
        if it.next().is_some() || entries.len() != live {
            return Err(Malformed);
        }
        s.push_node(key, masters, entries, (live + deleted, blob.len(), last));
    }
    let length = r.len()?;
    if length != s.len() as u64 {
        return Err(Malformed);
    }
    s.last_id = StreamId {
        ms: r.len()?,
        seq: r.len()?,
    };
    if v2 {
        s.first_id = StreamId {
            ms: r.len()?,
            seq: r.len()?,
        };
        s.max_deleted_id = StreamId {
            ms: r.len()?,
            seq: r.len()?,
        };
        s.entries_added = r.len()?;
    } else {
        s.entries_added = length;
        s.first_id = s.first().map_or(StreamId::MAX, |(id, _)| id);
    }
    let groups = r.count(3)?;
    for _ in 0..groups {
        let name = Bytes::from(r.string()?);
        let last_id = StreamId {
            ms: r.len()?,
            seq: r.len()?,
        };
        let entries_read = if v2 {
            match r.len()? {
                u64::MAX => None,
                n => Some(n),
            }
        } else {
            s.distance_from_first(last_id)
        };
        let mut g = Group {
            last_id,
            entries_read,
            ..Group::default()
        };
        let pel = r.count(17)?;
        for _ in 0..pel {
            let id = read_raw_id(r)?;
            let delivery_time = r.uint_le(8)?;
            let delivery_count = r.len()?;
            let pending = Pending {
                consumer: Bytes::new(),
                delivery_time,
                delivery_count,
            };
            if g.pel.insert(id, pending).is_some() {
                return Err(Malformed);
            }
        }
        let consumers = r.count(9)?;
        for _ in 0..consumers {
            let cname = Bytes::from(r.string()?);
            let seen_time = r.uint_le(8)?;
            // Before type 21 the active time is the seen time (Redis 7.2's `rdbLoadObject`).
            let active_time = if active_time {
                r.uint_le(8)? as i64
            } else {
                seen_time as i64
            };
            let mut c = Consumer {
                seen_time,
                active_time,
                pel: Default::default(),
            };
            let owned = r.count(16)?;
            for _ in 0..owned {
                let id = read_raw_id(r)?;
                let p = g.pel.get_mut(&id).ok_or(Malformed)?;
                p.consumer = cname.clone();
                if !c.pel.insert(id) {
                    return Err(Malformed);
                }
            }
            if g.consumers.insert(cname, c).is_some() {
                return Err(Malformed);
            }
        }
        // Every pending entry has an owner.
        if g.pel.values().any(|p| p.consumer.is_empty()) {
            return Err(Malformed);
        }
        if s.groups.insert(name, g).is_some() {
            return Err(Malformed);
        }
    }
    Ok(s)
}
