//! Redis's RDB serialisation, as far as payloads go (`DUMP`/`RESTORE`, `FUNCTION DUMP`/
//! `FUNCTION RESTORE`): length and string encodings (integers, LZF), the version and CRC64
//! footer. Reading is strict and bounded: a payload is untrusted bytes, every length is checked
//! against what is left before anything is allocated.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

mod crc64;
pub(crate) mod file;
mod listpack;
mod lzf;
mod stream;
mod value;

pub(crate) use value::{dump as dump_value, restore as restore_value, serialized_len};

pub(crate) use crc64::crc64;

/// The RDB version Redis 7.0 writes (`RDB_VERSION`); Valkey 8.1 writes 11
/// ([`crate::compat::Encodings::rdb_version`]).
#[cfg(test)]
pub(crate) const RDB_VERSION: u16 = 10;
/// `RDB_OPCODE_FUNCTION2`: a library's code follows.
pub(crate) const OPCODE_FUNCTION2: u8 = 245;
/// `RDB_OPCODE_FUNCTION` (Redis 7.0 release candidates): name, engine, description, code.
pub(crate) const OPCODE_FUNCTION: u8 = 246;

/// `RDB_ENCVAL`: the length byte announces a specially encoded string.
const ENCVAL: u8 = 3;
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Redis's settings that change the bytes a value is written as: `rdbcompression` (strings of
/// more than 20 bytes LZF-compressed when that saves at least 4 bytes), the limits a list's
/// quicklist nodes are cut by (`list-max-listpack-size`, the packed-node threshold), and the
/// target's RDB version and stream type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Encoding {
    /// `rdbcompression`.
    pub(crate) compress: bool,
    /// `list-max-listpack-size`.
    pub(crate) list_fill: i64,
    /// Elements of this many bytes or more are a plain quicklist node of their own.
    pub(crate) packed_threshold: u64,
    /// What the target writes: the RDB version, the stream type, the file's version field.
    pub(crate) target: crate::compat::Encodings,
}

impl Encoding {
    /// Redis's defaults: compression on, 8 KB nodes, 1 GB plain elements.
    #[cfg(test)]
    pub(crate) const DEFAULT: Encoding = Encoding {
        compress: true,
        list_fill: -2,
        packed_threshold: 1 << 30,
        target: crate::compat::REDIS_7_0_ENCODINGS,
    };

    /// The encoding `config` sets now, with the node's packed-node threshold.
    pub(crate) fn of(
        config: &crate::config::runtime::RuntimeConfig,
        packed_threshold: u64,
    ) -> Self {
        let target = config.profile().encodings;
        let fill = config.list_max_listpack_size();
        Encoding {
            compress: config.rdbcompression(),
            list_fill: fill,
            packed_threshold: crate::db::memory::plain_threshold(
                packed_threshold,
                fill,
                target.large_elements_plain,
            ),
            target,
        }
    }
}

/// What decides how a payload or file is read: the newest RDB version the target reads (the
/// types it knows follow from it) and the limits values are kept under, as the server
/// converts what it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Load {
    /// The newest RDB version read (`RDB_VERSION`).
    pub(crate) version: u16,
    /// `hash-max-listpack-entries` and `hash-max-listpack-value`.
    pub(crate) hash: crate::db::ListpackLimits,
    /// The set encodings' limits.
    pub(crate) set: crate::db::SetLimits,
    /// What decides a list's encoding.
    pub(crate) list: crate::db::ListRules,
}

impl Load {
    /// Redis 7.0's defaults.
    #[cfg(test)]
    pub(crate) const DEFAULT: Load = Load {
        version: 10,
        hash: crate::db::ListpackLimits::DEFAULT,
        set: crate::db::SetLimits::REDIS_7_0,
        list: crate::db::ListRules {
            fill: -2,
            packed_threshold: 1 << 30,
            listpack: false,
        },
    };

    /// Valkey 8.1's defaults.
    #[cfg(test)]
    pub(crate) const VALKEY: Load = Load {
        version: 11,
        hash: crate::db::ListpackLimits::DEFAULT,
        set: crate::db::SetLimits::VALKEY_8_1,
        list: crate::db::ListRules {
            fill: -2,
            packed_threshold: 1 << 30,
            listpack: true,
        },
    };

    /// What `config` sets now, under its target, with the node's packed-node threshold.
    pub(crate) fn of(
        config: &crate::config::runtime::RuntimeConfig,
        packed_threshold: u64,
    ) -> Self {
        let encodings = config.profile().encodings;
        let fill = config.list_max_listpack_size();
        Load {
            version: encodings.rdb_version,
            hash: crate::db::ListpackLimits::of_hashes(config),
            set: crate::db::SetLimits::of(config),
            list: crate::db::ListRules {
                fill,
                packed_threshold: crate::db::memory::plain_threshold(
                    packed_threshold,
                    fill,
                    encodings.large_elements_plain,
                ),
                listpack: encodings.list_listpack,
            },
        }
    }
}

/// A payload that cannot be read (truncated, a length past its end, a bad encoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// Reads RDB items from a byte slice.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let end = self.pos.checked_add(n).ok_or(Malformed)?;
        let out = self.data.get(self.pos..end).ok_or(Malformed)?;
        self.pos = end;
        Ok(out)
    }

    /// One byte.
    pub(crate) fn byte(&mut self) -> Result<u8, Malformed> {
        Ok(*self.take(1)?.first().ok_or(Malformed)?)
    }

    /// A length (`rdbLoadLen`): `Ok((value, encoded))`, where `encoded` means the value is a
    /// string encoding ([`ENCVAL`]), not a length.
    fn len_or_encoding(&mut self) -> Result<(u64, bool), Malformed> {
        let first = self.byte()?;
        match first >> 6 {
            0 => Ok((u64::from(first & 0x3f), false)),
            1 => Ok((
                (u64::from(first & 0x3f) << 8) | u64::from(self.byte()?),
                false,
            )),
            2 => match first {
                0x80 => {
                    let b = self.take(4)?;
                    let b: [u8; 4] = b.try_into().map_err(|_| Malformed)?;
                    Ok((u64::from(u32::from_be_bytes(b)), false))
                }
                0x81 => {
                    let b = self.take(8)?;
                    let b: [u8; 8] = b.try_into().map_err(|_| Malformed)?;
                    Ok((u64::from_be_bytes(b), false))
                }
                _ => Err(Malformed),
            },
            _ => Ok((u64::from(first & 0x3f), true)),
        }
    }

    /// A length (an encoded string marker there is malformed).
    pub(crate) fn len(&mut self) -> Result<u64, Malformed> {
        match self.len_or_encoding()? {
            (n, false) => Ok(n),
            (_, true) => Err(Malformed),
        }
    }

    /// A length that counts items still to be read, each at least `min_item` bytes long: bounded
    /// by what is left, so no allocation is sized by a forged count.
    pub(crate) fn count(&mut self, min_item: usize) -> Result<usize, Malformed> {
        let n = usize::try_from(self.len()?).map_err(|_| Malformed)?;
        if n.saturating_mul(min_item.max(1)) > self.remaining() {
            return Err(Malformed);
        }
        Ok(n)
    }

    /// A string (`rdbGenericLoadStringObject`): raw, integer-encoded or LZF-compressed.
    pub(crate) fn string(&mut self) -> Result<Vec<u8>, Malformed> {
        let (n, encoded) = self.len_or_encoding()?;
        if !encoded {
            let n = usize::try_from(n).map_err(|_| Malformed)?;
            return Ok(self.take(n)?.to_vec());
        }
        let value: i64 = match n as u8 {
            ENC_INT8 => i64::from(self.byte()? as i8),
            ENC_INT16 => {
                let b: [u8; 2] = self.take(2)?.try_into().map_err(|_| Malformed)?;
                i64::from(i16::from_le_bytes(b))
            }
            ENC_INT32 => {
                let b: [u8; 4] = self.take(4)?.try_into().map_err(|_| Malformed)?;
                i64::from(i32::from_le_bytes(b))
            }
            ENC_LZF => {
                let compressed = usize::try_from(self.len()?).map_err(|_| Malformed)?;
                let plain = usize::try_from(self.len()?).map_err(|_| Malformed)?;
                let input = self.take(compressed)?;
                return lzf::decompress(input, plain).ok_or(Malformed);
            }
            _ => return Err(Malformed),
        };
        Ok(value.to_string().into_bytes())
    }

    /// A double in binary form (`rdbLoadBinaryDoubleValue`, little-endian).
    pub(crate) fn binary_double(&mut self) -> Result<f64, Malformed> {
        let b: [u8; 8] = self.take(8)?.try_into().map_err(|_| Malformed)?;
        Ok(f64::from_le_bytes(b))
    }

    /// A double in the old string form (`rdbLoadDoubleValue`): a length byte, then its text;
    /// 253/254/255 for NaN, +inf, -inf.
    pub(crate) fn string_double(&mut self) -> Result<f64, Malformed> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.take(usize::from(n))?;
                std::str::from_utf8(text)
                    .ok()
                    .and_then(|t| t.trim().parse::<f64>().ok())
                    .ok_or(Malformed)
            }
        }
    }

    /// A little-endian unsigned integer of `n` bytes (`n` ≤ 8).
    pub(crate) fn uint_le(&mut self, n: usize) -> Result<u64, Malformed> {
        let b = self.take(n)?;
        Ok(b.iter()
            .rev()
            .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte)))
    }
}

/// Appends a length (`rdbSaveLen`).
pub(crate) fn write_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(((n >> 8) as u8) | 0x40);
        out.push(n as u8);
    } else if let Ok(n32) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n32.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends a string (`rdbSaveRawString`): integer-encoded when it is the canonical text of a
/// 32-bit integer (as Redis does for strings of up to 11 bytes); LZF-compressed when
/// `compress` (`rdbcompression`) and it is longer than 20 bytes and compresses by at least 4
/// (`rdbSaveLzfStringObject`); raw otherwise.
pub(crate) fn write_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11 {
        if let Some(v) = canonical_i64(s) {
            if let Ok(v) = i8::try_from(v) {
                out.push((ENCVAL << 6) | ENC_INT8);
                out.push(v as u8);
                return;
            }
            if let Ok(v) = i16::try_from(v) {
                out.push((ENCVAL << 6) | ENC_INT16);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
            if let Ok(v) = i32::try_from(v) {
                out.push((ENCVAL << 6) | ENC_INT32);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    if compress && s.len() > 20 {
        if let Some(packed) = lzf::compress(s, s.len() - 4) {
            out.push((ENCVAL << 6) | ENC_LZF);
            write_len(out, packed.len() as u64);
            write_len(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends a double in binary form (`rdbSaveBinaryDoubleValue`).
pub(crate) fn write_binary_double(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// `s` as an integer if it is exactly the text Redis would print for it (no sign on zero, no
/// leading zeros or spaces).
fn canonical_i64(s: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(s).ok()?;
    let v: i64 = text.parse().ok()?;
    (v.to_string() == text).then_some(v)
}

/// Appends the `DUMP` footer: the RDB `version` (2 bytes, little-endian) and the CRC64 of
/// everything before it, itself included (8 bytes, little-endian).
pub(crate) fn finish_payload(out: &mut Vec<u8>, version: u16) {
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(0, out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Checks a `DUMP` payload's footer (`verifyDumpPayload`): at least 10 bytes, an RDB version
/// up to `max_version` (what the target reads), and the CRC64. Returns the body before the
/// footer.
pub(crate) fn verify_payload(payload: &[u8], max_version: u16) -> Option<&[u8]> {
    if payload.len() < 10 {
        return None;
    }
    let (body_and_version, crc) = payload.split_at(payload.len() - 8);
    let body = body_and_version.get(..body_and_version.len() - 2)?;
    let version = u16::from_le_bytes(body_and_version.get(body.len()..)?.try_into().ok()?);
    if version > max_version {
        return None;
    }
    let crc = u64::from_le_bytes(crc.try_into().ok()?);
    (crc64(0, body_and_version) == crc).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_in_every_width() {
        for n in [0u64, 1, 63, 64, 16383, 16384, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            write_len(&mut out, n);
            let mut r = Reader::new(&out);
            assert_eq!(r.len(), Ok(n));
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn strings_round_trip_raw_and_integer_encoded() {
        for s in [
            &b""[..],
            b"0",
            b"-1",
            b"127",
            b"128",
            b"-32768",
            b"2147483647",
            b"2147483648",
            b"007",
            b"-0",
            b" 1",
            b"hello",
            &[b'x'; 21][..],
            &[b'y'; 5000][..],
            b"twenty-one bytes, all different!",
        ] {
            for compress in [false, true] {
                let mut out = Vec::new();
                write_string(&mut out, s, compress);
                assert_eq!(Reader::new(&out).string().as_deref(), Ok(s), "{s:?}");
            }
        }
        let mut out = Vec::new();
        write_string(&mut out, b"-5", true);
        assert_eq!(out, [0xc0, 0xfb]);
    }

    #[test]
    fn truncated_and_forged_lengths_are_malformed() {
        assert_eq!(Reader::new(&[0x05, b'a']).string(), Err(Malformed));
        assert_eq!(
            Reader::new(&[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).string(),
            Err(Malformed)
        );
        assert_eq!(Reader::new(&[0x80, 0, 0, 1, 0]).count(1), Err(Malformed));
        assert_eq!(Reader::new(&[0xc4]).string(), Err(Malformed));
    }

    #[test]
    fn payload_footer_is_checked() {
        let mut out = vec![0x00, 0x01, b'x'];
        finish_payload(&mut out, RDB_VERSION);
        assert_eq!(verify_payload(&out, 10), Some(&[0x00, 0x01, b'x'][..]));
        let mut bad = out.clone();
        bad[2] = b'y';
        assert_eq!(verify_payload(&bad, 10), None);
        assert_eq!(verify_payload(b"short", 10), None);
        // Valkey's version 11 is read by Valkey's target only, as redis-server 7.0.15 refuses
        // it.
        let mut v11 = vec![0x00, 0x01, b'x'];
        finish_payload(&mut v11, 11);
        assert_eq!(verify_payload(&v11, 10), None);
        assert_eq!(verify_payload(&v11, 11), Some(&[0x00, 0x01, b'x'][..]));
    }
}

/// What `INFO persistence` and `LASTSAVE` report, readable without the state lock (a
/// background save finishes on its own thread).
#[derive(Debug, Default)]
pub(crate) struct SaveStatus {
    /// Unix seconds of the last successful save (the start time before any).
    pub(crate) last_save_unix: AtomicU64,
    /// A background save is writing.
    pub(crate) in_progress: AtomicBool,
    /// The last background save failed.
    pub(crate) last_bgsave_failed: AtomicBool,
    /// Successful saves.
    pub(crate) saves: AtomicU64,
    /// `State::dirty` as of the last successful save (`rdb_changes_since_last_save`).
    pub(crate) dirty_at_save: AtomicU64,
}

impl SaveStatus {
    /// Records a successful save, at `now_ms`, of the data as of `dirty`.
    pub(crate) fn saved(&self, now_ms: u64, dirty: u64) {
        self.last_save_unix.store(now_ms / 1000, Ordering::Relaxed);
        self.saves.fetch_add(1, Ordering::Relaxed);
        self.dirty_at_save.store(dirty, Ordering::Relaxed);
    }
}
