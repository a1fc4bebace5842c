//! Keyspace notification classes (`notify-keyspace-events`) and their flag-string form.

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub(crate) const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub(crate) const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME…).
pub(crate) const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub(crate) const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub(crate) const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub(crate) const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub(crate) const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub(crate) const ZSET: u32 = 1 << 7;
/// `x`: a key expired.
pub(crate) const EXPIRED: u32 = 1 << 8;
/// `e`: a key was evicted.
pub(crate) const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub(crate) const STREAM: u32 = 1 << 10;
/// `m`: key miss.
pub(crate) const KEY_MISS: u32 = 1 << 11;
/// `n`: new key.
pub(crate) const NEW: u32 = 1 << 14;
/// `A`: alias for `g$lshzxet`.
pub(crate) const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM;

/// Parses a `notify-keyspace-events` value as Redis's `keyspaceEventsStringToFlags`;
/// `None` for an unknown character.
pub(crate) fn parse_flags(s: &[u8]) -> Option<u32> {
    let mut flags = 0;
    for &c in s {
        flags |= match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'n' => NEW,
            _ => return None,
        };
    }
    Some(flags)
}

/// Formats flags as Redis's `keyspaceEventsFlagsToString` does (what `CONFIG GET` shows).
pub(crate) fn format_flags(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
        ] {
            if flags & bit != 0 {
                out.push(c);
            }
        }
    }
    for (bit, c) in [
        (KEYSPACE, 'K'),
        (KEYEVENT, 'E'),
        (KEY_MISS, 'm'),
        (NEW, 'n'),
    ] {
        if flags & bit != 0 {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_like_redis() {
        assert_eq!(format_flags(parse_flags(b"Egx").unwrap_or(0)), "gxE");
        assert_eq!(format_flags(parse_flags(b"KEA").unwrap_or(0)), "AKE");
        assert_eq!(parse_flags(b"Q"), None);
        assert_eq!(format_flags(0), "");
    }
}
