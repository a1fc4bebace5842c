//! What a key costs in memory, estimated as Redis 7.0 lays it out (dict entry, key sds, object
//! header, then the value in its encoding), so `INFO memory`, `MEMORY USAGE` and `maxmemory`
//! see numbers of the same size as a real Redis holding the same data.
//!
//! Two countings share the value estimate: [`entry_size`] counts what the allocator hands out
//! (a dict entry takes a 32-byte allocation), for `used_memory` and `maxmemory`; [`usage`] is
//! `MEMORY USAGE`, which Redis computes from the structures' sizes (`objectComputeSize`: a
//! dict entry is its 24-byte struct, the bucket array is counted whole).
//!
//! The estimate of an aggregate reads at most `samples` elements and scales their average by
//! the element count (as `MEMORY USAGE` does with its default `SAMPLES 5`), so keeping the
//! total up to date after every write stays cheap however large the value.

use super::stream::element_size as listpack_value;
use super::{Entry, Value};
use locksmith_resp as resp;

/// Elements of an aggregate read to estimate its size.
pub(crate) const SAMPLES: usize = 32;

/// A dict entry's allocation (24 bytes, served from the 32-byte class).
const DICT_ENTRY_ALLOC: usize = 32;
/// `sizeof(dictEntry)`, as `MEMORY USAGE` counts it.
const DICT_ENTRY_STRUCT: usize = 24;
/// A dict entry (24 bytes, served from the 32-byte class) with its share of the bucket array
/// (8 bytes per bucket, 1 to 2 buckets per entry).
const DICT_ENTRY: usize = DICT_ENTRY_ALLOC + 12;
/// `sizeof(robj)`: the object header of every value.
const ROBJ: usize = 16;
/// The main dict's entry and the object header (16) of every key.
const KEY_OVERHEAD: usize = DICT_ENTRY + ROBJ;
/// The entry in the `expires` dict of a key with a TTL.
const EXPIRE_OVERHEAD: usize = DICT_ENTRY;
/// The slot-to-keys links cluster mode adds to each key's dict entry
/// (`dictMetadataSize` of the main dict).
const CLUSTER_KEY_METADATA: usize = 16;
/// A listpack's header and end byte.
const LISTPACK_HEADER: usize = 7;
/// `sizeof(quicklist)`.
const QUICKLIST: usize = 40;
/// `sizeof(quicklistNode)`; each holds a listpack of up to 8 KB of elements.
const QUICKLIST_NODE: usize = 40;
/// Bytes a quicklist node's listpack holds at most (`list-max-listpack-size -2`).
const QUICKLIST_NODE_BYTES: usize = 8 * 1024;
/// `sizeof(dict)`.
const DICT_HEADER: usize = 56;
/// `sizeof(zset)` and `sizeof(zskiplist)`.
const ZSET_HEADERS: usize = 16 + 32;
/// The skiplist's header node (32 levels), in its allocation class.
const SKIPLIST_HEADER: usize = 640;
/// A skiplist node: element pointer, score, backward pointer and on average 1.33 levels of
/// 16 bytes, in its allocation class.
const SKIPLIST_NODE: usize = 56;

/// Estimated bytes `key` with `entry` occupies.
pub(crate) fn entry_size(key: &[u8], entry: &Entry) -> usize {
    let expire = if entry.expire_at().is_some() {
        EXPIRE_OVERHEAD
    } else {
        0
    };
    // A string, the most written value, is measured here without the call into the
    // aggregates' estimate.
    let value = match &entry.value {
        Value::String(s) => string_size(s),
        value => value_size(value, SAMPLES),
    };
    KEY_OVERHEAD + sds(key.len()) + expire + value
}

/// Bytes of a string value beyond its object header, in Redis's encoding: none for an
/// integer (held in the header), an embedded string up to 44 bytes, a separate sds beyond.
#[inline]
fn string_size(s: &[u8]) -> usize {
    if s.len() <= 20 && resp::parse_integer(s).is_some() {
        0
    } else if s.len() <= 44 {
        // embstr: the object header and the string in one allocation.
        allocation(ROBJ + 3 + s.len() + 1) - ROBJ
    } else {
        sds(s.len())
    }
}

/// `MEMORY USAGE key SAMPLES samples` (0: every element), as Redis computes it: the key's
/// sds, its dict entry (with the slot links in cluster mode) and `objectComputeSize` of the
/// value. Like Redis, the key's TTL is not counted.
/// A listpack's scores are the target's text of them (`doubles`: Valkey's shortest form is
/// shorter than Redis's `%.17g`).
pub(crate) fn usage(
    key: &[u8],
    value: &Value,
    samples: usize,
    cluster: bool,
    doubles: resp::Doubles,
) -> usize {
    let metadata = if cluster { CLUSTER_KEY_METADATA } else { 0 };
    sds(key.len())
        + DICT_ENTRY_STRUCT
        + metadata
        + ROBJ
        + value_size_counting(value, samples, true, doubles)
}

/// Estimated bytes of `value` beyond its object header, reading at most `samples` elements of
/// an aggregate (0: all of them). A listpack's scores are counted as Redis 7.0 writes them
/// (the keyspace measures its entries without knowing the target; under Valkey's a score
/// that is no integer takes fewer bytes than counted).
pub(crate) fn value_size(value: &Value, samples: usize) -> usize {
    value_size_counting(value, samples, false, resp::Doubles::Redis)
}

/// [`value_size`] as the allocator sees it, or (`usage`) as `MEMORY USAGE` counts it: a dict
/// entry as its struct, compact encodings (listpacks, intsets) read whole as Redis reads their
/// allocation, and a list sampled by quicklist nodes (about 8 KB of elements each) instead of
/// by elements.
fn value_size_counting(
    value: &Value,
    samples: usize,
    usage: bool,
    doubles: resp::Doubles,
) -> usize {
    let dict_entry = if usage {
        DICT_ENTRY_STRUCT
    } else {
        DICT_ENTRY_ALLOC
    };
    // Compact encodings hold at most a few hundred elements.
    let compact_samples = if usage { 0 } else { samples };
    match value {
        Value::String(s) => string_size(s),
        Value::List(l, _) => {
            let sizes = l.iter().map(|e| listpack_value(e));
            let bytes = if usage {
                scaled_by_bytes(l.len(), samples * QUICKLIST_NODE_BYTES, sizes)
            } else {
                scaled(l.len(), samples, sizes)
            };
            QUICKLIST + quicklist_nodes(bytes)
        }
        Value::Hash(h) => {
            if Value::hash_is_listpack(h) {
                let bytes = scaled(
                    h.len(),
                    compact_samples,
                    h.iter().map(|(f, v)| listpack_value(f) + listpack_value(v)),
                );
                allocation(LISTPACK_HEADER + bytes)
            } else {
                // What the allocator holds is counted as written; `MEMORY USAGE` samples, as
                // Redis does, so its figure moves as Redis's does.
                let bytes = match h.table_bytes() {
                    Some(strings) if !usage => h.len() * dict_entry + strings,
                    _ => scaled(
                        h.len(),
                        samples,
                        h.iter()
                            .map(|(f, v)| dict_entry + sds(f.len()) + sds(v.len())),
                    ),
                };
                dict(h.len()) + bytes
            }
        }
        Value::Set(s) => {
            if let Some(ints) = s.intset() {
                // Every member takes the width of the widest (2, 4 or 8 bytes).
                let width = ints
                    .iter()
                    .map(|&v| {
                        if i16::try_from(v).is_ok() {
                            2
                        } else if i32::try_from(v).is_ok() {
                            4
                        } else {
                            8
                        }
                    })
                    .max()
                    .unwrap_or(2);
                allocation(8 + width * s.len())
            } else if s.encoding() == crate::db::SetEncoding::Listpack {
                let bytes = scaled(
                    s.len(),
                    compact_samples,
                    s.iter().map(|m| listpack_value(&m)),
                );
                allocation(LISTPACK_HEADER + bytes)
            } else {
                dict(s.len())
                    + scaled(
                        s.len(),
                        samples,
                        s.iter().map(|m| dict_entry + sds(m.len())),
                    )
            }
        }
        Value::ZSet(z) => {
            if z.len() <= 128 && z.iter().take(samples.max(1)).all(|(m, _)| m.len() <= 64) {
                allocation(
                    LISTPACK_HEADER
                        + scaled(
                            z.len(),
                            compact_samples,
                            z.iter()
                                .map(|(m, score)| listpack_value(m) + score_size(score, doubles)),
                        ),
                )
            } else {
                ZSET_HEADERS
                    + dict(z.len())
                    + SKIPLIST_HEADER
                    + scaled(
                        z.len(),
                        samples,
                        z.iter()
                            .map(|(m, _)| dict_entry + SKIPLIST_NODE + sds(m.len())),
                    )
            }
        }
        Value::Stream(s) => s.memory_usage(samples),
    }
}

/// A dict of `len` entries: its header and bucket arrays. Redis doubles the array when it
/// fills up and moves the entries over one bucket per later operation, both arrays allocated
/// meanwhile; the move is taken to end once the dict is half again as large as the old array.
/// Between 513 and 1024 entries a single array of 1024 is assumed: a hash or an intset
/// converted there starts with it.
fn dict(len: usize) -> usize {
    let size = len.next_power_of_two().max(4);
    let moving = len > 4 && !(513..=1024).contains(&len) && len * 4 <= size * 3;
    let old = if moving { size / 2 } else { 0 };
    DICT_HEADER + 8 * (size + old)
}

/// The quicklist nodes holding `bytes` of listpack elements: full nodes of up to 8 KB, the
/// last one holding the rest.
fn quicklist_nodes(bytes: usize) -> usize {
    let room = QUICKLIST_NODE_BYTES - LISTPACK_HEADER;
    let (full, rest) = (bytes / room, bytes % room);
    let last = if rest > 0 || full == 0 {
        QUICKLIST_NODE + allocation(LISTPACK_HEADER + rest)
    } else {
        0
    };
    full * (QUICKLIST_NODE + allocation(QUICKLIST_NODE_BYTES)) + last
}

/// The quicklist Redis would keep a list in, as `DEBUG OBJECT` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct QuicklistShape {
    /// Nodes (`ql_nodes`).
    pub(crate) nodes: usize,
    /// Bytes of the nodes' listpacks, and of the plain nodes' elements
    /// (`ql_uncompressed_size`).
    pub(crate) bytes: usize,
}

/// Bytes in a quicklist node above which only a `fill` that counts elements may grow it
/// (Redis's `SIZE_SAFETY_LIMIT`).
const QUICKLIST_SAFETY_LIMIT: usize = 8192;
/// The node sizes of `fill` -1 to -5 (Redis's `optimization_level`).
const QUICKLIST_SIZE_CLASSES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

/// The quicklist Redis builds from `elements` appended in order (as RPUSH, RESTORE or a load
/// do) under `list-max-listpack-size` `fill`, an element of `packed_threshold` bytes or more in
/// a plain node of its own (Redis's `_quicklistNodeAllowInsert`). A list shaped by other
/// writes may have been split differently by Redis; the elements are the same.
pub(crate) fn quicklist_shape<'a>(
    elements: impl IntoIterator<Item = &'a [u8]>,
    fill: i64,
    packed_threshold: u64,
) -> QuicklistShape {
    quicklist_shape_up_to(elements, fill, packed_threshold, usize::MAX)
}

/// Whether the quicklist of [`quicklist_shape`] has more than `nodes` nodes, reading only
/// the elements up to the first node past them.
pub(crate) fn quicklist_has_more_nodes_than<'a>(
    elements: impl IntoIterator<Item = &'a [u8]>,
    fill: i64,
    packed_threshold: u64,
    nodes: usize,
) -> bool {
    quicklist_shape_up_to(elements, fill, packed_threshold, nodes).nodes > nodes
}

/// [`quicklist_shape`], stopped once the list has more than `max_nodes` nodes.
fn quicklist_shape_up_to<'a>(
    elements: impl IntoIterator<Item = &'a [u8]>,
    fill: i64,
    packed_threshold: u64,
    max_nodes: usize,
) -> QuicklistShape {
    let mut list = QuicklistBuilder::new(fill, packed_threshold);
    for element in elements {
        list.push(element);
        if list.shape.nodes > max_nodes {
            break;
        }
    }
    list.shape
}

/// A quicklist built by appending, as far as its shape goes.
struct QuicklistBuilder {
    fill: i64,
    packed_threshold: u64,
    shape: QuicklistShape,
    /// The last node's listpack bytes and elements, when it is a packed node.
    tail: Option<(usize, i64)>,
}

impl QuicklistBuilder {
    fn new(fill: i64, packed_threshold: u64) -> Self {
        QuicklistBuilder {
            // Redis's `quicklistSetFill` bounds.
            fill: fill.clamp(-5, (1 << 15) - 1),
            packed_threshold,
            shape: QuicklistShape::default(),
            tail: None,
        }
    }

    /// Appends `element`; says where it went.
    fn push(&mut self, element: &[u8]) -> Placement {
        let sz = element.len();
        if u64::try_from(sz).unwrap_or(u64::MAX) >= self.packed_threshold {
            self.shape.nodes += 1;
            self.shape.bytes += sz;
            self.tail = None;
            return Placement::Plain;
        }
        let entry = listpack_value(element);
        let placement = match &mut self.tail {
            Some((bytes, count)) if quicklist_node_takes(*bytes, *count, sz, self.fill) => {
                *bytes += entry;
                *count += 1;
                Placement::Tail
            }
            _ => {
                self.shape.nodes += 1;
                self.shape.bytes += LISTPACK_HEADER;
                self.tail = Some((LISTPACK_HEADER + entry, 1));
                Placement::NewPacked
            }
        };
        self.shape.bytes += entry;
        placement
    }
}

/// Where [`QuicklistBuilder::push`] put an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// In the last packed node.
    Tail,
    /// In a new packed node.
    NewPacked,
    /// In a plain node of its own.
    Plain,
}

/// One node of a quicklist, as [`quicklist_cut`] cuts a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QuicklistNode<'a> {
    /// A listpack of these elements.
    Packed(Vec<&'a [u8]>),
    /// One element on its own (`QUICKLIST_NODE_CONTAINER_PLAIN`).
    Plain(&'a [u8]),
}

/// The nodes of the quicklist Redis builds from `elements` appended in order (see
/// [`quicklist_shape`]): what `DUMP` and an RDB file write for the list.
pub(crate) fn quicklist_cut<'a>(
    elements: impl IntoIterator<Item = &'a [u8]>,
    fill: i64,
    packed_threshold: u64,
) -> Vec<QuicklistNode<'a>> {
    let mut list = QuicklistBuilder::new(fill, packed_threshold);
    let mut nodes: Vec<QuicklistNode<'a>> = Vec::new();
    for element in elements {
        match (list.push(element), nodes.last_mut()) {
            (Placement::Tail, Some(QuicklistNode::Packed(tail))) => tail.push(element),
            (Placement::Plain, _) => nodes.push(QuicklistNode::Plain(element)),
            _ => nodes.push(QuicklistNode::Packed(vec![element])),
        }
    }
    nodes
}

/// The most bytes and elements one quicklist node of `fill` holds (`quicklistNodeLimit`; the
/// other bound unlimited).
fn node_limit(fill: i64) -> (usize, usize) {
    if fill < 0 {
        let class = usize::try_from(-fill - 1).unwrap_or(usize::MAX);
        let last = QUICKLIST_SIZE_CLASSES.len() - 1;
        let size = QUICKLIST_SIZE_CLASSES
            .get(class.min(last))
            .copied()
            .unwrap_or(QUICKLIST_SAFETY_LIMIT);
        (size, usize::MAX)
    } else {
        (
            usize::MAX,
            usize::try_from(fill.max(1)).unwrap_or(usize::MAX),
        )
    }
}

/// The size from which an element of a list is a plain quicklist node of its own:
/// `packed_threshold`, or (`large_plain`, Redis 7.2's `isLargeElement`) anything larger than
/// one node of `fill` holds, whichever is smaller.
pub(crate) fn plain_threshold(packed_threshold: u64, fill: i64, large_plain: bool) -> u64 {
    if !large_plain {
        return packed_threshold;
    }
    let (size, _) = node_limit(fill);
    let largest = if size == usize::MAX {
        QUICKLIST_SAFETY_LIMIT
    } else {
        size
    };
    packed_threshold.min(u64::try_from(largest).unwrap_or(u64::MAX).saturating_add(1))
}

/// Whether a listpack of `bytes` holding `count` elements is more than one quicklist node of
/// `fill` holds (Redis 7.2's `quicklistNodeExceedsLimit`, which also bounds a list kept as a
/// listpack).
pub(crate) fn listpack_exceeds(fill: i64, bytes: usize, count: usize) -> bool {
    let (size, elements) = node_limit(fill);
    if size != usize::MAX {
        bytes > size
    } else {
        bytes > QUICKLIST_SAFETY_LIMIT || count > elements
    }
}

/// Bytes of the listpack holding `elements` (header and end byte included), counted until
/// they pass `cap`.
pub(crate) fn listpack_bytes_up_to<'a>(
    elements: impl IntoIterator<Item = &'a [u8]>,
    cap: usize,
) -> usize {
    let mut bytes = LISTPACK_HEADER;
    for e in elements {
        bytes += listpack_value(e);
        if bytes > cap {
            break;
        }
    }
    bytes
}

/// Whether a list of `len` `elements` in a quicklist goes back to one listpack (Redis 7.2's
/// `listTypeTryConvertQuicklist`): it is one packed node, within a node's limits under
/// `fill`, halved when it got there by `shrinking`. Reads at most one node's elements.
pub(crate) fn list_fits_listpack<'a, I>(
    elements: I,
    len: usize,
    fill: i64,
    packed_threshold: u64,
    shrinking: bool,
) -> bool
where
    I: IntoIterator<Item = &'a [u8]>,
    I::IntoIter: Clone,
{
    let (mut size, mut count) = node_limit(fill);
    if shrinking {
        size /= 2;
        count /= 2;
    }
    let elements = elements.into_iter();
    if len > count || quicklist_has_more_nodes_than(elements.clone(), fill, packed_threshold, 1) {
        return false;
    }
    let plain = |e: &[u8]| u64::try_from(e.len()).unwrap_or(u64::MAX) >= packed_threshold;
    if elements.clone().any(plain) {
        return false;
    }
    listpack_bytes_up_to(elements, size) <= size
}

/// Whether a packed node of `bytes` holding `count` elements takes one more of `sz` bytes
/// under `fill` (Redis 7.0.15's `_quicklistNodeAllowInsert`, which counts the entry as its
/// length plus `SIZE_ESTIMATE_OVERHEAD`, 8 bytes).
fn quicklist_node_takes(bytes: usize, count: i64, sz: usize, fill: i64) -> bool {
    let new_sz = bytes + sz + 8;
    if fill < 0 {
        let class = usize::try_from(-fill - 1).unwrap_or(usize::MAX);
        if QUICKLIST_SIZE_CLASSES
            .get(class)
            .is_some_and(|&limit| new_sz <= limit)
        {
            return true;
        }
    }
    new_sz <= QUICKLIST_SAFETY_LIMIT && count < fill
}

/// Bytes of a sorted set score in a listpack: the server stores its `d2string` text (an
/// integral score within 2^62 as an integer, which the listpack encodes as one).
fn score_size(score: f64, doubles: resp::Doubles) -> usize {
    listpack_value(doubles.string(score).as_bytes())
}

/// The allocation of an sds string of `len` bytes (header, data, terminator), as `sdsnewlen`
/// makes it: a 1-byte header below 32 bytes (`SDS_TYPE_5`), then 3, 5 or 9.
pub(crate) fn sds(len: usize) -> usize {
    let header = match len {
        0..32 => 1,
        32..256 => 3,
        256..65_536 => 5,
        _ => 9,
    };
    allocation(header + len + 1)
}

/// The size class jemalloc serves a request of `n` bytes from: 8, then multiples of 16 up to
/// 128, then four classes per doubling (160, 192, 224, 256, 320, ...).
pub(crate) fn allocation(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let step = n.next_power_of_two() / 8;
    n.div_ceil(step) * step
}

/// The sum of `sizes` over `count` elements, read until their sum reaches `bytes` (0: all)
/// and scaled from their average beyond that.
fn scaled_by_bytes(count: usize, bytes: usize, sizes: impl Iterator<Item = usize>) -> usize {
    let (mut sum, mut read) = (0usize, 0usize);
    for size in sizes {
        if bytes != 0 && sum >= bytes {
            break;
        }
        sum += size;
        read += 1;
    }
    if read == 0 || read == count {
        return sum;
    }
    sum / read * count + sum % read * count / read
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
    use crate::db::ListEncoding;
    use bytes::Bytes;
    use std::collections::VecDeque;

    fn entry(value: Value) -> Entry {
        Entry::new(value, None, 0)
    }

    #[test]
    fn strings_cost_their_length_and_integers_nothing_beyond_the_header() {
        let int = entry_size(
            b"k",
            &entry(Value::String(Bytes::from_static(b"12345").into())),
        );
        let short = entry_size(
            b"k",
            &entry(Value::String(Bytes::from_static(b"hello").into())),
        );
        let long = entry_size(
            b"k",
            &entry(Value::String(Bytes::from(vec![b'x'; 1000]).into())),
        );
        assert!(int < short && short < long);
        assert!((1000..1100).contains(&(long - int)), "{}", long - int);
    }

    #[test]
    fn a_ttl_adds_the_expires_entry() {
        let mut e = entry(Value::String(Bytes::from_static(b"v").into()));
        let plain = entry_size(b"key", &e);
        e.set_expire_at(Some(5));
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

    fn bytes(s: &str) -> Bytes {
        Bytes::from(s.to_string())
    }

    /// `MEMORY USAGE` as redis-server 7.0.15 answered it for the same data.
    #[test]
    fn usage_matches_redis_for_strings_and_small_aggregates() {
        let string = |s: &str| Value::String(bytes(s).into());
        let cases = [
            ("str1", string("hello"), 64),
            ("str2", string("12345"), 48),
            ("str3", string(&"a".repeat(44)), 96),
            ("str4", string(&"a".repeat(45)), 112),
            ("str5", string(&"a".repeat(1000)), 1072),
            ("str6", string(&"a".repeat(100_000)), 114_736),
            (
                "l10",
                Value::List(
                    (1..=10).map(|i| bytes(&format!("element-{i}"))).collect(),
                    ListEncoding::Quicklist,
                ),
                256,
            ),
            (
                "is100",
                Value::Set((1..=100).map(|i| bytes(&i.to_string())).collect()),
                272,
            ),
            (
                "s100",
                Value::Set((1..=100).map(|i| bytes(&format!("member-{i}"))).collect()),
                5128,
            ),
        ];
        for (key, value, redis) in cases {
            assert_eq!(
                usage(key.as_bytes(), &value, 5, false, resp::Doubles::Redis),
                redis,
                "{key}"
            );
        }
        // Cluster mode adds the slot links of the key's dict entry.
        let v = string("hello");
        assert_eq!(usage(b"str1", &v, 5, true, resp::Doubles::Redis), 64 + 16);
    }

    #[test]
    fn lists_are_sampled_by_quicklist_nodes_for_usage() {
        // 10 000 elements of 10-14 bytes fill 17 nodes; Redis reads the first 5 nodes.
        let list: VecDeque<Bytes> = (1..=10_000)
            .map(|i| bytes(&format!("element-{i}")))
            .collect();
        let value = Value::List(list, ListEncoding::Quicklist);
        let all = usage(b"l10000", &value, 0, false, resp::Doubles::Redis);
        let sampled = usage(b"l10000", &value, 5, false, resp::Doubles::Redis);
        // redis-server: 140 032 for both.
        assert_eq!(all, 140_032);
        assert!(sampled.abs_diff(140_032) * 50 < 140_032, "{sampled}");
    }

    #[test]
    fn sampled_sizes_scale_with_the_element_count() {
        let list: VecDeque<Bytes> = (0..10_000).map(|_| Bytes::from(vec![b'a'; 100])).collect();
        let full = value_size(&Value::List(list.clone(), ListEncoding::Quicklist), 0);
        let sampled = value_size(&Value::List(list, ListEncoding::Quicklist), SAMPLES);
        assert_eq!(full, sampled);
        assert!(full > 10_000 * 100);
    }
}
