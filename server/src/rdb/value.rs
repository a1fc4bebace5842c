//! Key values in RDB form, for `DUMP`, `RESTORE` and RDB files: written as Redis 7.0 writes
//! them, byte for byte (a list as quicklist nodes of listpacks, a small hash or sorted set as a
//! listpack, a set of integers as an intset, strings LZF-compressed under `rdbcompression`,
//! the rest in the plain encodings), and read in every encoding Redis 7.0 writes or loads.
//! Under Valkey's target a small set of strings is written as a listpack (type 20) and a
//! stream with its consumers' active times (type 21), as valkey-server 8.1 writes them, and
//! both are read.
//!
//! Which encoding a value is written in follows [`Value::encoding`], what `OBJECT ENCODING`
//! answers. A list is cut into nodes as Redis cuts a list built by appending (RPUSH, RESTORE,
//! a load); a list Redis shaped otherwise (LPUSH, LINSERT, LREM in the middle) may sit in other
//! nodes there, with the same elements. A large set, hash or sorted set is written in the
//! order of its table, as Redis writes its dict's, which Redis seeds at random per process.

use super::listpack::Listpack;
use super::Load;
use super::{Encoding, Malformed, Reader};
use crate::db::memory::{quicklist_cut, QuicklistNode};
use crate::db::{HashValue, SetEncoding, SetValue, Value, ZSet};
use bytes::Bytes;
use std::collections::VecDeque;

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
const TYPE_STREAM_LISTPACKS: u8 = 15;
const TYPE_STREAM_LISTPACKS_2: u8 = 19;
const TYPE_SET_LISTPACK: u8 = 20;
const TYPE_STREAM_LISTPACKS_3: u8 = 21;

/// `QUICKLIST_NODE_CONTAINER_PLAIN`: a node holding one element as a plain string.
const CONTAINER_PLAIN: u64 = 1;
/// `QUICKLIST_NODE_CONTAINER_PACKED`: a node holding a listpack.
const CONTAINER_PACKED: u64 = 2;

/// `DUMP`'s payload for `value`: its type, its body, the RDB version and the CRC64.
pub(crate) fn dump(value: &Value, encoding: Encoding) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, value, encoding);
    super::finish_payload(&mut out, encoding.target.rdb_version);
    out
}

/// Bytes of `value`'s serialization without its type byte (Redis's `rdbSavedObjectLen`,
/// `DEBUG OBJECT`'s `serializedlength`).
pub(crate) fn serialized_len(value: &Value, encoding: Encoding) -> usize {
    let mut out = Vec::new();
    write_value(&mut out, value, encoding);
    out.len().saturating_sub(1)
}

/// Appends `value`'s RDB type byte and body (as in an RDB file, after the key).
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value, encoding: Encoding) {
    let compress = encoding.compress;
    let string = |out: &mut Vec<u8>, s: &[u8]| super::write_string(out, s, compress);
    match value {
        Value::Stream(s) => {
            let active_time = encoding.target.stream_active_time;
            out.push(if active_time {
                TYPE_STREAM_LISTPACKS_3
            } else {
                TYPE_STREAM_LISTPACKS_2
            });
            super::stream::write(out, s, compress, active_time);
        }
        Value::String(s) => {
            out.push(TYPE_STRING);
            string(out, s);
        }
        Value::List(items, _) => {
            // A listpack is written as a quicklist of one node (Redis 7.2's `rdbSaveObject`).
            out.push(TYPE_LIST_QUICKLIST_2);
            let nodes = quicklist_cut(
                items.iter().map(|e| &e[..]),
                encoding.list_fill,
                encoding.packed_threshold,
            );
            super::write_len(out, nodes.len() as u64);
            for node in nodes {
                match node {
                    QuicklistNode::Plain(element) => {
                        super::write_len(out, CONTAINER_PLAIN);
                        string(out, element);
                    }
                    QuicklistNode::Packed(elements) => {
                        super::write_len(out, CONTAINER_PACKED);
                        let mut lp = Listpack::new();
                        for element in elements {
                            lp.string(element);
                        }
                        string(out, &lp.finish());
                    }
                }
            }
        }
        Value::Set(members) if members.encoding() == SetEncoding::Intset => {
            out.push(TYPE_SET_INTSET);
            string(out, &intset_blob(members.intset().unwrap_or_default()));
        }
        Value::Set(members) if members.encoding() == SetEncoding::Listpack => {
            out.push(TYPE_SET_LISTPACK);
            let mut lp = Listpack::new();
            for member in members.iter() {
                lp.string(&member);
            }
            string(out, &lp.finish());
        }
        Value::Set(members) => {
            out.push(TYPE_SET);
            super::write_len(out, members.len() as u64);
            for member in members.iter() {
                string(out, &member);
            }
        }
        Value::Hash(hash) if value.encoding() == "listpack" => {
            out.push(TYPE_HASH_LISTPACK);
            let mut lp = Listpack::new();
            for (field, value) in hash.iter() {
                lp.string(field);
                lp.string(value);
            }
            string(out, &lp.finish());
        }
        Value::Hash(hash) => {
            out.push(TYPE_HASH);
            super::write_len(out, hash.len() as u64);
            for (field, value) in hash.iter() {
                string(out, field);
                string(out, value);
            }
        }
        Value::ZSet(zset) if value.encoding() == "listpack" => {
            out.push(TYPE_ZSET_LISTPACK);
            let mut lp = Listpack::new();
            for (member, score) in zset.ordered(false) {
                lp.string(member);
                // `zzlInsertAt`: an integral score as an integer, any other as `d2string`'s text.
                match locksmith_resp::double_to_i64(score) {
                    Some(v) => lp.int(v),
                    None => lp.string(encoding.target.doubles.string(score).as_bytes()),
                }
            }
            string(out, &lp.finish());
        }
        Value::ZSet(zset) => {
            out.push(TYPE_ZSET_2);
            super::write_len(out, zset.len() as u64);
            // Redis writes from the highest score down, so loading appends at the head.
            for (member, score) in zset.ordered(true) {
                string(out, member);
                super::write_binary_double(out, score);
            }
        }
    }
}

/// A list as loaded: a quicklist, converted as Redis 7.2's `rdbLoadObject` does
/// (`LIST_CONV_AUTO`).
fn list_loaded(items: VecDeque<Bytes>, load: Load) -> Value {
    let mut encoding = crate::db::ListEncoding::Quicklist;
    load.list.settle(&items, &mut encoding, false);
    Value::List(items, encoding)
}

/// The intset of a set of integers (`intset.c`): its width (2, 4 or 8 bytes, the narrowest
/// that holds every member), its length and the members (`values`, ascending), little-endian.
fn intset_blob(values: &[i64]) -> Vec<u8> {
    let width: usize = if values.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if values.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * values.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// The value in a `DUMP` payload body (footer already checked and removed); the whole body
/// must be one value. Empty aggregates, duplicate members and NaN scores are malformed, as
/// Redis refuses them.
/// A hash or set is kept as the server would keep it under `load`'s limits.
pub(crate) fn restore(body: &[u8], load: Load) -> Result<Value, Malformed> {
    let mut r = Reader::new(body);
    let kind = r.byte()?;
    let value = read_value(&mut r, kind, load)?;
    if r.remaining() != 0 || value.is_empty_aggregate() {
        return Err(Malformed);
    }
    Ok(value)
}

/// Reads a value of RDB type `kind` (as in an RDB file, after the key). A hash or set takes
/// the encoding Redis's `rdbLoadObject` converts it to under `load`'s limits; the types of RDB
/// 11 (20 and 21) are read only where `load` reads that version.
pub(crate) fn read_value(r: &mut Reader<'_>, kind: u8, load: Load) -> Result<Value, Malformed> {
    let hash_limits = load.hash;
    let rdb_11 = load.version >= 11;
    Ok(match kind {
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 => Value::Stream(Box::new(
            super::stream::read(r, kind == TYPE_STREAM_LISTPACKS_2, false)?,
        )),
        TYPE_STREAM_LISTPACKS_3 if rdb_11 => {
            Value::Stream(Box::new(super::stream::read(r, true, true)?))
        }
        TYPE_STRING => Value::String(r.string()?.into()),
        TYPE_LIST => {
            let n = r.count(1)?;
            let mut items = VecDeque::with_capacity(n);
            for _ in 0..n {
                items.push_back(Bytes::from(r.string()?));
            }
            list_loaded(items, load)
        }
        TYPE_SET => {
            let n = r.count(1)?;
            let mut members = Vec::with_capacity(n);
            for _ in 0..n {
                members.push(Bytes::from(r.string()?));
            }
            Value::Set(SetValue::from_members(members, n, load.set).ok_or(Malformed)?)
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count(2)?;
            let mut zset = ZSet::default();
            for _ in 0..n {
                let member = Bytes::from(r.string()?);
                let score = if kind == TYPE_ZSET_2 {
                    r.binary_double()?
                } else {
                    r.string_double()?
                };
                if score.is_nan() || zset.insert(member, score).is_some() {
                    return Err(Malformed);
                }
            }
            Value::ZSet(zset)
        }
        TYPE_HASH => {
            let n = r.count(2)?;
            let mut hash = HashValue::new();
            for _ in 0..n {
                let field = Bytes::from(r.string()?);
                let value = Bytes::from(r.string()?);
                if !hash.insert(&field, &value, hash_limits) {
                    return Err(Malformed);
                }
            }
            Value::Hash(hash)
        }
        TYPE_SET_INTSET => {
            let values = intset(&r.string()?)?;
            let n = values.len();
            let members = values.into_iter().map(|v| Bytes::from(v.to_string()));
            Value::Set(SetValue::from_members(members, n, load.set).ok_or(Malformed)?)
        }
        TYPE_SET_LISTPACK if rdb_11 => {
            let members = listpack(&r.string()?)?;
            Value::Set(SetValue::from_listpack(members, load.set).ok_or(Malformed)?)
        }
        TYPE_HASH_LISTPACK => {
            let entries = listpack(&r.string()?)?;
            if entries.len() % 2 != 0 {
                return Err(Malformed);
            }
            let mut hash = HashValue::new();
            let mut it = entries.into_iter();
            while let (Some(field), Some(value)) = (it.next(), it.next()) {
                if !hash.insert(&field, &value, hash_limits) {
                    return Err(Malformed);
                }
            }
            Value::Hash(hash)
        }
        TYPE_ZSET_LISTPACK => {
            let entries = listpack(&r.string()?)?;
            if entries.len() % 2 != 0 {
                return Err(Malformed);
            }
            let mut zset = ZSet::default();
            let mut it = entries.into_iter();
            while let (Some(member), Some(score)) = (it.next(), it.next()) {
                let score = crate::args::parse_f64(&score).ok_or(Malformed)?;
                if score.is_nan() || zset.insert(member, score).is_some() {
                    return Err(Malformed);
                }
            }
            Value::ZSet(zset)
        }
        TYPE_LIST_QUICKLIST_2 => {
            let nodes = r.count(2)?;
            let mut items = VecDeque::new();
            for _ in 0..nodes {
                let container = r.len()?;
                let data = r.string()?;
                if data.is_empty() {
                    return Err(Malformed);
                }
                match container {
                    CONTAINER_PLAIN => items.push_back(Bytes::from(data)),
                    CONTAINER_PACKED => items.extend(listpack(&data)?),
                    _ => return Err(Malformed),
                }
            }
            list_loaded(items, load)
        }
        // Ziplists (Redis before 7.0), modules and streams are not read.
        _ => return Err(Malformed),
    })
}

/// The integers of an intset blob (`encoding` u32, `length` u32, then values, little-endian).
fn intset(blob: &[u8]) -> Result<Vec<i64>, Malformed> {
    let mut r = Reader::new(blob);
    let width = usize::try_from(r.uint_le(4)?).map_err(|_| Malformed)?;
    let len = usize::try_from(r.uint_le(4)?).map_err(|_| Malformed)?;
    if !matches!(width, 2 | 4 | 8) || len.checked_mul(width) != Some(r.remaining()) {
        return Err(Malformed);
    }
    (0..len)
        .map(|_| {
            let raw = r.uint_le(width)?;
            let shift = 64 - 8 * width as u32;
            Ok(((raw << shift) as i64) >> shift)
        })
        .collect()
}

/// The entries of a listpack blob, integers as their decimal text.
fn listpack(blob: &[u8]) -> Result<Vec<Bytes>, Malformed> {
    Ok(listpack_elements(blob)?
        .iter()
        .map(Element::bytes)
        .collect())
}

/// The elements of a listpack blob. The header's byte count must match the blob and the
/// elements must end with the terminator exactly at its end.
pub(super) fn listpack_elements(blob: &[u8]) -> Result<Vec<Element<'_>>, Malformed> {
    let mut r = Reader::new(blob);
    let total = usize::try_from(r.uint_le(4)?).map_err(|_| Malformed)?;
    let _count = r.uint_le(2)?;
    if total != blob.len() {
        return Err(Malformed);
    }
    let mut out = Vec::new();
    loop {
        let start = r.remaining();
        let first = r.byte()?;
        if first == 0xff {
            break;
        }
        let element = match first {
            0x00..=0x7f => Element::Int(i64::from(first)),
            0x80..=0xbf => Element::Str(r.take(usize::from(first & 0x3f))?),
            0xc0..=0xdf => {
                let v = (u64::from(first & 0x1f) << 8) | u64::from(r.byte()?);
                Element::Int(sign_extend(v, 13))
            }
            0xe0..=0xef => {
                let n = (usize::from(first & 0x0f) << 8) | usize::from(r.byte()?);
                Element::Str(r.take(n)?)
            }
            0xf0 => {
                let n = usize::try_from(r.uint_le(4)?).map_err(|_| Malformed)?;
                Element::Str(r.take(n)?)
            }
            0xf1 => Element::Int(sign_extend(r.uint_le(2)?, 16)),
            0xf2 => Element::Int(sign_extend(r.uint_le(3)?, 24)),
            0xf3 => Element::Int(sign_extend(r.uint_le(4)?, 32)),
            0xf4 => Element::Int(r.uint_le(8)? as i64),
            _ => return Err(Malformed),
        };
        // The back length: the entry's size, in 1 to 5 bytes.
        let size = start - r.remaining();
        // lpEncodeBacklen's widths.
        let backlen = match size {
            0..=127 => 1,
            128..=16_382 => 2,
            16_383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        };
        r.take(backlen)?;
        out.push(element);
    }
    if r.remaining() != 0 {
        return Err(Malformed);
    }
    Ok(out)
}

/// One listpack element.
pub(super) enum Element<'a> {
    /// An integer-encoded element.
    Int(i64),
    /// A string element, borrowed from the blob.
    Str(&'a [u8]),
}

impl Element<'_> {
    /// The element as an integer (a string element must hold one).
    pub(super) fn int(&self) -> Result<i64, Malformed> {
        match self {
            Element::Int(v) => Ok(*v),
            Element::Str(s) => locksmith_resp::parse_integer(s).ok_or(Malformed),
        }
    }

    /// The element as bytes, integers as their decimal text.
    pub(super) fn bytes(&self) -> Bytes {
        match self {
            Element::Int(v) => Bytes::from(v.to_string()),
            Element::Str(s) => Bytes::copy_from_slice(s),
        }
    }
}

/// `v` (its low `bits` bits) as a signed integer.
fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: Value) -> Value {
        let payload = dump(&value, Encoding::DEFAULT);
        let body = super::super::verify_payload(&payload, 10).expect("valid footer");
        restore(body, Load::DEFAULT).expect("restores")
    }

    #[test]
    fn every_type_round_trips() {
        let s = Value::String(Bytes::from_static(b"12345").into());
        assert!(matches!(round_trip(s), Value::String(b) if &b[..] == b"12345"));
        let list = Value::List(
            ["a", "", "3"].iter().map(|s| Bytes::from(*s)).collect(),
            crate::db::ListEncoding::Quicklist,
        );
        assert!(matches!(round_trip(list), Value::List(l, _) if l.len() == 3 && l[2] == "3"));
        let mut zset = ZSet::default();
        zset.insert(Bytes::from_static(b"m"), -1.5);
        zset.insert(Bytes::from_static(b"n"), f64::INFINITY);
        assert!(
            matches!(round_trip(Value::ZSet(zset)), Value::ZSet(z) if z.score(b"n") == Some(f64::INFINITY))
        );
    }

    /// `DUMP`'s payload of `value` under Redis's default settings.
    fn dumped(value: &Value) -> Vec<u8> {
        dump(value, Encoding::DEFAULT)
    }

    #[test]
    fn payloads_are_redis_7_0_bytes() {
        // Each expected payload is what redis-server 7.0.15 answered to `DUMP` for the same
        // value (`redis-cli --no-raw`).
        let list = Value::List(
            ["a", "b"].iter().map(|s| Bytes::from(*s)).collect(),
            crate::db::ListEncoding::Quicklist,
        );
        assert_eq!(
            dumped(&list),
            b"\x12\x01\x02\r\r\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff\n\x00h\xeb\n\x89\x13A\xbb\xb1"
        );
        let long = Value::String(Bytes::from(vec![b'a'; 100]).into());
        assert_eq!(
            dumped(&long),
            b"\x00\xc3\t@d\x01aa\xe0W\x00\x01aa\n\x00\xe8\xa3\xb5\x07\xb0m\xf2q"
        );
        let mut hash = HashValue::default();
        for (f, v) in [("f", "v"), ("f2", "123")] {
            hash.insert(&Bytes::from(f), &Bytes::from(v), Load::DEFAULT.hash);
        }
        assert_eq!(
            dumped(&Value::Hash(hash)),
            b"\x10\x13\x13\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x82f2\x03{\x01\xff\n\x00:J\xa3\xf1\xde#Kk"
        );
        let mut set = SetValue::default();
        for m in ["3", "1", "2"] {
            set.insert(Bytes::from(m), Load::DEFAULT.set);
        }
        assert_eq!(
            dumped(&Value::Set(set)),
            b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mnM\x1b"
        );
        let mut zset = ZSet::default();
        zset.insert(Bytes::from_static(b"a"), 1.0);
        zset.insert(Bytes::from_static(b"b"), 2.5);
        zset.insert(Bytes::from_static(b"c"), -0.0);
        assert_eq!(
            dumped(&Value::ZSet(zset)),
            b"\x11\x19\x19\x00\x00\x00\x06\x00\x81c\x02\x00\x01\x81a\x02\x01\x01\x81b\x02\x832.5\x04\xff\n\x00dn]\x16N\xafXw"
        );
    }

    #[test]
    fn payloads_are_valkey_8_1_bytes_under_its_target() {
        // Each expected payload is what valkey-server 8.1.8 answered to `DUMP` for the same
        // commands (`valkey-cli --no-raw`).
        let valkey = Encoding {
            target: crate::compat::VALKEY_8_1_ENCODINGS,
            ..Encoding::DEFAULT
        };
        let lim = Load::VALKEY.set;
        let set_of = |members: &[&str]| {
            let first = members.first().copied().unwrap_or_default();
            let mut set = SetValue::for_member(first.as_bytes(), members.len(), lim);
            for m in members {
                set.insert(Bytes::copy_from_slice(m.as_bytes()), lim);
            }
            set
        };
        // SADD s a b c
        let abc = Value::Set(set_of(&["a", "b", "c"]));
        assert_eq!(abc.encoding(), "listpack");
        let payload = dump(&abc, valkey);
        assert_eq!(
            payload,
            b"\x14\x10\x10\x00\x00\x00\x03\x00\x81a\x02\x81b\x02\x81c\x02\xff\x0b\x00m5Tg\xcb\x08\x997"
        );
        // Read back under Valkey's target only: Redis 7.0 knows neither version 11 nor type 20.
        assert_eq!(super::super::verify_payload(&payload, 10), None);
        let body = super::super::verify_payload(&payload, 11).expect("valid footer");
        let back = restore(body, Load::VALKEY).expect("restores");
        assert_eq!(dump(&back, valkey), payload);
        assert!(restore(
            body,
            Load {
                version: 10,
                ..Load::VALKEY
            }
        )
        .is_err());
        // SADD i 3 1 2, then SADD i x: the intset becomes a listpack, its integers first.
        let mut ints = set_of(&["3", "1", "2"]);
        assert_eq!(ints.encoding(), SetEncoding::Intset);
        ints.insert(Bytes::from_static(b"x"), lim);
        assert_eq!(
            dump(&Value::Set(ints), valkey),
            b"\x14\x10\x10\x00\x00\x00\x04\x00\x01\x01\x02\x01\x03\x01\x81x\x02\xff\x0b\x00\x89'\x9e\x96~ `\t"
        );
        // RPUSH l a b: the same quicklist as Redis 7.0's, version 11.
        let list = Value::List(
            ["a", "b"].iter().map(|s| Bytes::from(*s)).collect(),
            crate::db::ListEncoding::Quicklist,
        );
        assert_eq!(
            dump(&list, valkey),
            b"\x12\x01\x02\r\r\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff\x0b\x00\x014\xb7\xfa\xee\xdeR8"
        );
    }

    #[test]
    fn a_set_listpack_with_a_repeated_member_is_malformed() {
        let mut lp = Listpack::new();
        lp.string(b"a");
        lp.string(b"a");
        let mut body = vec![TYPE_SET_LISTPACK];
        super::super::write_string(&mut body, &lp.finish(), false);
        assert!(restore(&body, Load::VALKEY).is_err());
    }

    #[test]
    fn listpack_entries_decode() {
        // A listpack of "ab", 5, -2 (13-bit), 1000 (13-bit) and a 16-bit integer.
        let mut lp = vec![0, 0, 0, 0, 5, 0];
        lp.extend_from_slice(&[0x82, b'a', b'b', 3]);
        lp.extend_from_slice(&[0x05, 1]);
        lp.extend_from_slice(&[0xdf, 0xfe, 2]);
        lp.extend_from_slice(&[0xc3, 0xe8, 2]);
        lp.extend_from_slice(&[0xf1, 0x30, 0x75, 3]);
        lp.push(0xff);
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        let got = listpack(&lp).unwrap();
        assert_eq!(got, vec!["ab", "5", "-2", "1000", "30000"]);
        lp[0] ^= 1;
        assert_eq!(listpack(&lp), Err(Malformed));
    }

    #[test]
    fn duplicates_empties_and_trailing_bytes_are_malformed() {
        let mut set = vec![TYPE_SET, 2, 1, b'a', 1, b'a'];
        assert!(restore(&set, Load::DEFAULT).is_err());
        set = vec![TYPE_SET, 0];
        assert!(restore(&set, Load::DEFAULT).is_err());
        assert!(restore(&[TYPE_STRING, 1, b'a', 0], Load::DEFAULT).is_err());
        assert!(restore(&[42], Load::DEFAULT).is_err());
        assert_eq!(intset(&[2, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff]), Ok(vec![-1]));
    }
}
