//! What a key costs in memory, estimated as Redis 7.0 lays it out (dict entry, key sds, object
//! header, then the value in its encoding), so `INFO memory`, `MEMORY USAGE` and `maxmemory`
//! see numbers of the same size as a real Redis holding the same data.
//!
//! The estimate of an aggregate reads at most [`SAMPLES`] elements and scales their average by
//! the element count (as `MEMORY USAGE` does with its default `SAMPLES 5`), so keeping the
//! total up to date after every write stays cheap however large the value.

use super::{Entry, Value};
use locksmith_resp as resp;

/// Elements of an aggregate read to estimate its size.
pub(crate) const SAMPLES: usize = 32;

/// A dict entry (24 bytes, served from the 32-byte class) with its share of the bucket array
/// (8 bytes per bucket, 1 to 2 buckets per entry).
const DICT_ENTRY: usize = 32 + 12;
/// The main dict's entry and the object header (16) of every key.
const KEY_OVERHEAD: usize = DICT_ENTRY + 16;
/// The entry in the `expires` dict of a key with a TTL.
const EXPIRE_OVERHEAD: usize = DICT_ENTRY;
/// A listpack's header and end byte.
const LISTPACK_HEADER: usize = 7;
/// One quicklist node, each holding a listpack of up to 8 KB of elements.
const QUICKLIST_NODE: usize = 32;
/// Bytes of elements a quicklist node holds (`list-max-listpack-size -2`).
const QUICKLIST_NODE_BYTES: usize = 8 * 1024;
/// A dict's own header.
const DICT_HEADER: usize = 56;
/// A skiplist node: element pointer, score, backward pointer and on average 1.33 levels of
/// 16 bytes, in its allocation class.
const SKIPLIST_NODE: usize = 56;

/// Estimated bytes `key` with `entry` occupies.
pub(crate) fn entry_size(key: &[u8], entry: &Entry) -> usize {
    let expire = if entry.expire_at.is_some() {
        EXPIRE_OVERHEAD
    } else {
        0
    };
    KEY_OVERHEAD + sds(key.len()) + expire + value_size(&entry.value, SAMPLES)
}

/// Estimated bytes of `value` beyond its object header, reading at most `samples` elements of
/// an aggregate (0: all of them).
pub(crate) fn value_size(value: &Value, samples: usize) -> usize {
    match value {
        Value::String(s) => {
            if s.len() <= 20 && resp::parse_integer(s).is_some() {
                0
            } else if s.len() <= 44 {
                // embstr: the object header and the string in one allocation.
                allocation(16 + 3 + s.len() + 1) - 16
            } else {
                sds(s.len())
            }
        }
        Value::List(l) => {
            let bytes = scaled(l.len(), samples, l.iter().map(|e| listpack_entry(e.len())));
            let nodes = bytes / QUICKLIST_NODE_BYTES + 1;
            let per_node = allocation(LISTPACK_HEADER + bytes / nodes);
            48 + nodes * (QUICKLIST_NODE + per_node)
        }
        Value::Hash(h) => {
            if Value::hash_is_listpack(h) {
                let bytes = scaled(
                    h.len(),
                    samples,
                    h.iter()
                        .map(|(f, v)| listpack_entry(f.len()) + listpack_entry(v.len())),
                );
                allocation(LISTPACK_HEADER + bytes)
            } else {
                let bytes = scaled(
                    h.len(),
                    samples,
                    h.iter()
                        .map(|(f, v)| DICT_ENTRY + sds(f.len()) + sds(v.len())),
                );
                DICT_HEADER + bytes
            }
        }
        Value::Set(s) => {
            if value.encoding() == "intset" {
                allocation(8 + 8 * s.len())
            } else {
                DICT_HEADER
                    + scaled(
                        s.len(),
                        samples,
                        s.iter().map(|m| DICT_ENTRY + sds(m.len())),
                    )
            }
        }
        Value::ZSet(z) => {
            if z.len() <= 128 && z.iter().take(samples.max(1)).all(|(m, _)| m.len() <= 64) {
                allocation(
                    LISTPACK_HEADER
                        + scaled(
                            z.len(),
                            samples,
                            z.iter().map(|(m, _)| listpack_entry(m.len()) + 4),
                        ),
                )
            } else {
                DICT_HEADER
                    + 32
                    + scaled(
                        z.len(),
                        samples,
                        z.iter()
                            .map(|(m, _)| DICT_ENTRY + SKIPLIST_NODE + sds(m.len())),
                    )
            }
        }
        Value::Stream(s) => allocation(s.approx_bytes()),
    }
}

/// The allocation of an sds string of `len` bytes (header, data, terminator).
fn sds(len: usize) -> usize {
    let header = match len {
        0..256 => 3,
        256..65_536 => 5,
        _ => 9,
    };
    allocation(header + len + 1)
}

/// The size class jemalloc serves a request of `n` bytes from: 8, then multiples of 16 up to
/// 128, then four classes per doubling (160, 192, 224, 256, 320, ...).
fn allocation(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let step = n.next_power_of_two() / 8;
    n.div_ceil(step) * step
}

/// Bytes of one listpack element of `len` bytes: encoding byte(s), data, back-length.
fn listpack_entry(len: usize) -> usize {
    let header = if len < 64 {
        1
    } else if len < 4096 {
        2
    } else {
        5
    };
    let backlen = if len < 127 { 1 } else { 2 };
    header + len + backlen
}

/// The sum of `sizes` over `count` elements, read in full up to `samples` of them (0: all) and
/// scaled from their average beyond that.
fn scaled(count: usize, samples: usize, sizes: impl Iterator<Item = usize>) -> usize {
    if samples == 0 || count <= samples {
        return sizes.sum();
    }
    let sampled: usize = sizes.take(samples).sum();
    sampled / samples * count + sampled % samples * count / samples
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::collections::VecDeque;

    fn entry(value: Value) -> Entry {
        Entry {
            value,
            expire_at: None,
            accessed: 0,
        }
    }

    #[test]
    fn strings_cost_their_length_and_integers_nothing_beyond_the_header() {
        let int = entry_size(b"k", &entry(Value::String(Bytes::from_static(b"12345"))));
        let short = entry_size(b"k", &entry(Value::String(Bytes::from_static(b"hello"))));
        let long = entry_size(b"k", &entry(Value::String(Bytes::from(vec![b'x'; 1000]))));
        assert!(int < short && short < long);
        assert!((1000..1100).contains(&(long - int)), "{}", long - int);
    }

    #[test]
    fn a_ttl_adds_the_expires_entry() {
        let mut e = entry(Value::String(Bytes::from_static(b"v")));
        let plain = entry_size(b"key", &e);
        e.expire_at = Some(5);
        assert_eq!(entry_size(b"key", &e), plain + EXPIRE_OVERHEAD);
    }

    #[test]
    fn allocations_follow_jemalloc_size_classes() {
        let classes: Vec<usize> = [1, 9, 17, 100, 129, 161, 257, 1000, 5000]
            .into_iter()
            .map(allocation)
            .collect();
        assert_eq!(classes, [8, 16, 32, 112, 160, 192, 320, 1024, 5120]);
    }

    #[test]
    fn sampled_sizes_scale_with_the_element_count() {
        let list: VecDeque<Bytes> = (0..10_000).map(|_| Bytes::from(vec![b'a'; 100])).collect();
        let full = value_size(&Value::List(list.clone()), 0);
        let sampled = value_size(&Value::List(list), SAMPLES);
        assert_eq!(full, sampled);
        assert!(full > 10_000 * 100);
    }
}
