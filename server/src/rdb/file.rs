//! RDB files, as Redis 7.0 writes and reads them (`SAVE`, `BGSAVE`, loading at start): the
//! `REDIS0010` header, aux fields, function libraries, each database's keys with their
//! expiry, the end marker and the CRC64. Files from redis-server (RDB versions up to 10) load
//! here and ours load there. Under Valkey's target the header is `REDIS0011` and the version
//! field `valkey-ver`, as valkey-server 8.1 writes, and files up to version 11 load.

use super::{value, write_len, write_string, Encoding, Load, Malformed, Reader};
use crate::db::Value;
use bytes::Bytes;

const OPCODE_IDLE: u8 = 248;
const OPCODE_FREQ: u8 = 249;
const OPCODE_AUX: u8 = 250;
const OPCODE_RESIZEDB: u8 = 251;
const OPCODE_EXPIRETIME_MS: u8 = 252;
const OPCODE_EXPIRETIME: u8 = 253;
const OPCODE_SELECTDB: u8 = 254;
const OPCODE_EOF: u8 = 255;
const OPCODE_MODULE_AUX: u8 = 247;

/// One key as saved or loaded.
#[derive(Debug)]
pub(crate) struct Key {
    /// Its name.
    pub(crate) name: Bytes,
    /// Its value.
    pub(crate) value: Value,
    /// Unix ms deadline, if volatile.
    pub(crate) expire_at: Option<u64>,
}

/// A database to save: its index and its keys (name, value, Unix ms deadline).
pub(crate) type SavedDb<'a> = (usize, Vec<(&'a [u8], &'a Value, Option<u64>)>);

/// The contents of an RDB file.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    /// Keys by database index.
    pub(crate) dbs: Vec<(usize, Vec<Key>)>,
    /// Function libraries' code.
    pub(crate) functions: Vec<Bytes>,
}

/// Serialises `dbs` (index, keys) and the function libraries' `functions` code as an RDB
/// file taken at `now_ms` (Unix ms), values written as `encoding` has them.
pub(crate) fn write(
    dbs: &[SavedDb<'_>],
    functions: &[Bytes],
    now_ms: u64,
    encoding: Encoding,
) -> Vec<u8> {
    let compress = encoding.compress;
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"REDIS");
    out.extend_from_slice(format!("{:04}", encoding.target.rdb_version).as_bytes());
    let aux = |out: &mut Vec<u8>, k: &str, v: &str| {
        out.push(OPCODE_AUX);
        write_string(out, k.as_bytes(), compress);
        write_string(out, v.as_bytes(), compress);
    };
    let (field, version) = encoding.target.rdb_server_version;
    aux(&mut out, field, version);
    aux(&mut out, "redis-bits", "64");
    aux(&mut out, "ctime", &(now_ms / 1000).to_string());
    aux(&mut out, "used-mem", "0");
    aux(&mut out, "aof-base", "0");
    for code in functions {
        out.push(super::OPCODE_FUNCTION2);
        write_string(&mut out, code, compress);
    }
    for (index, keys) in dbs {
        if keys.is_empty() {
            continue;
        }
        out.push(OPCODE_SELECTDB);
        write_len(&mut out, *index as u64);
        out.push(OPCODE_RESIZEDB);
        write_len(&mut out, keys.len() as u64);
        write_len(
            &mut out,
            keys.iter().filter(|(_, _, e)| e.is_some()).count() as u64,
        );
        let mut body = Vec::new();
        for (name, v, expire_at) in keys {
            if let Some(at) = expire_at {
                out.push(OPCODE_EXPIRETIME_MS);
                out.extend_from_slice(&at.to_le_bytes());
            }
            body.clear();
            value::write_value(&mut body, v, encoding);
            let Some((kind, rest)) = body.split_first() else {
                continue;
            };
            out.push(*kind);
            write_string(&mut out, name, compress);
            out.extend_from_slice(rest);
        }
    }
    out.push(OPCODE_EOF);
    let crc = super::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// `dbs` and the function libraries' code as an RDB file, without the keys expired at
/// `now_ms` (what a save writes, and a master sends a replica).
pub(crate) fn encode_dataset(
    dbs: &[crate::db::Db],
    functions: &[Bytes],
    now_ms: u64,
    encoding: Encoding,
) -> Vec<u8> {
    let dbs: Vec<SavedDb<'_>> = dbs
        .iter()
        .enumerate()
        .map(|(i, db)| {
            let keys = db
                .entries()
                .filter(|(_, e)| e.expire_at().is_none_or(|at| at > now_ms))
                .map(|(k, e)| (k.as_bytes(), &e.value, e.expire_at()))
                .collect();
            (i, keys)
        })
        .collect();
    write(&dbs, functions, now_ms, encoding)
}

/// Reads an RDB file; keys already expired at `now_ms` are dropped (as a master loading its
/// file does). `databases` bounds the database indexes; hashes and sets are kept as `load`
/// has the server keep them, and files up to its version are read.
pub(crate) fn read(
    data: &[u8],
    now_ms: u64,
    databases: usize,
    load: Load,
) -> Result<Contents, String> {
    let bad = |what: &str| format!("Short read or corrupt RDB file ({what})");
    let header = data.get(..9).ok_or_else(|| bad("header"))?;
    if &header[..5] != b"REDIS" {
        return Err("Wrong signature trying to load DB from file".into());
    }
    let version: u32 = std::str::from_utf8(&header[5..])
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("version"))?;
    if version < 1 || version > u32::from(load.version) {
        return Err(format!("Can't handle RDB format version {version}"));
    }
    let mut r = Reader::new(data.get(9..).unwrap_or_default());
    let mut contents = Contents::default();
    let mut db = 0usize;
    let mut current: Vec<Key> = Vec::new();
    // Signed, as Redis reads it (`rdbLoadMillisecondTime`, `rdbLoadTime`).
    let mut expire_at: Option<i64> = None;
    let malformed = |_: Malformed| bad("truncated or malformed item");
    loop {
        let op = r.byte().map_err(malformed)?;
        match op {
            OPCODE_EOF => break,
            OPCODE_AUX => {
                r.string().map_err(malformed)?;
                r.string().map_err(malformed)?;
            }
            OPCODE_RESIZEDB => {
                r.len().map_err(malformed)?;
                r.len().map_err(malformed)?;
            }
            OPCODE_EXPIRETIME_MS => expire_at = Some(r.uint_le(8).map_err(malformed)? as i64),
            OPCODE_EXPIRETIME => {
                let seconds = r.uint_le(4).map_err(malformed)? as u32 as i32;
                expire_at = Some(i64::from(seconds) * 1000)
            }
            OPCODE_IDLE => {
                r.len().map_err(malformed)?;
            }
            OPCODE_FREQ => {
                r.byte().map_err(malformed)?;
            }
            OPCODE_SELECTDB => {
                let index = usize::try_from(r.len().map_err(malformed)?).unwrap_or(usize::MAX);
                if index >= databases {
                    return Err(format!(
                        "FATAL: Data file was created with a Redis server configured to handle \
                         more than {databases} databases. Exiting"
                    ));
                }
                if !current.is_empty() {
                    contents.dbs.push((db, std::mem::take(&mut current)));
                }
                db = index;
            }
            super::OPCODE_FUNCTION2 => {
                contents
                    .functions
                    .push(Bytes::from(r.string().map_err(malformed)?));
            }
            super::OPCODE_FUNCTION => return Err("Pre-GA function format not supported".into()),
            OPCODE_MODULE_AUX => return Err("Module data in RDB files is not supported".into()),
            kind => {
                let name = Bytes::from(r.string().map_err(malformed)?);
                let value = value::read_value(&mut r, kind, load).map_err(malformed)?;
                // As Redis's rdbLoad: -1 is no deadline, and a key whose deadline passed is
                // not loaded, a negative one (i64::MIN) included.
                let deadline = match expire_at.take() {
                    None | Some(-1) => None,
                    Some(at) => match u64::try_from(at) {
                        Ok(at) if at > now_ms => Some(at),
                        _ => continue,
                    },
                };
                if value.is_empty_aggregate() {
                    continue;
                }
                current.push(Key {
                    name,
                    value,
                    expire_at: deadline,
                });
            }
        }
    }
    if !current.is_empty() {
        contents.dbs.push((db, current));
    }
    if version >= 5 {
        let body_len = data.len() - r.remaining();
        let stored = r.uint_le(8).map_err(malformed)?;
        if stored != 0 && stored != super::crc64(0, &data[..body_len]) {
            return Err("Wrong RDB checksum. Aborting now.".into());
        }
    }
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_round_trips_with_expiries_and_functions() {
        let (a, b) = (Bytes::from_static(b"a"), Bytes::from_static(b"b"));
        let (va, vb) = (
            Value::String(Bytes::from_static(b"1").into()),
            Value::String(Bytes::from_static(b"2").into()),
        );
        let code =
            Bytes::from_static(b"#!lua name=l\nredis.register_function('f', function() end)");
        let file = write(
            &[
                (0, vec![(&a, &va, None)]),
                (3, vec![(&b, &vb, Some(5_000))]),
            ],
            std::slice::from_ref(&code),
            1_000,
            Encoding::DEFAULT,
        );
        let back = read(&file, 1_000, 16, Load::DEFAULT).unwrap();
        assert_eq!(back.functions, vec![code]);
        assert_eq!(back.dbs.len(), 2);
        assert_eq!(back.dbs[1].0, 3);
        assert_eq!(back.dbs[1].1[0].expire_at, Some(5_000));
        // Expired by the time it loads: dropped.
        let later = read(&file, 6_000, 16, Load::DEFAULT).unwrap();
        assert_eq!(later.dbs.len(), 1);
        let mut corrupt = file.clone();
        corrupt[12] ^= 1;
        assert!(read(&corrupt, 1_000, 16, Load::DEFAULT).is_err());
        assert!(read(b"REDIS0011", 0, 16, Load::DEFAULT).is_err());
        assert!(read(&file, 1_000, 2, Load::DEFAULT).is_err());
    }

    #[test]
    fn a_deadline_is_read_signed_and_a_negative_one_drops_the_key() {
        let a = Bytes::from_static(b"a");
        let va = Value::String(Bytes::from_static(b"1").into());
        // Redis's rdbLoad: i64::MIN and any other negative deadline have passed, -1 is none.
        for (at, loaded) in [
            (i64::MIN, None),
            (-2, None),
            (999, None),
            (-1, Some(None)),
            (i64::MAX, Some(Some(i64::MAX as u64))),
        ] {
            let file = write(
                &[(0, vec![(&a, &va, Some(at as u64))])],
                &[],
                1_000,
                Encoding::DEFAULT,
            );
            let back = read(&file, 1_000, 16, Load::DEFAULT).unwrap();
            let got = back
                .dbs
                .first()
                .and_then(|(_, keys)| keys.first())
                .map(|k| k.expire_at);
            assert_eq!(got, loaded, "deadline {at}");
        }
    }
}
