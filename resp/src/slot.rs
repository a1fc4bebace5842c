//! Redis Cluster's key hash slots, as servers route and clients aim (Redis's `keyHashSlot` and
//! `crc16.c`): the slot of a key is the CRC16 of its `{hash tag}` (or the whole key) modulo
//! [`SLOTS`]. The server's routing and `CLUSTER KEYSLOT` and the lock library's cluster client
//! both use this one copy.

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: usize = 16384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), as Redis's `crc16.c`.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The part of `key` that is hashed: the bytes between the first `{` and the first `}` after
/// it, unless there is no such `}` or they are empty, in which case the whole key.
pub fn hash_tag(key: &[u8]) -> &[u8] {
    key.iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = key.get(open + 1..)?;
            let close = rest.iter().position(|&b| b == b'}')?;
            rest.get(..close).filter(|tag| !tag.is_empty())
        })
        .unwrap_or(key)
}

/// The hash slot of `key`, as Redis's `keyHashSlot` (`CLUSTER KEYSLOT`).
pub fn key_slot(key: &[u8]) -> u16 {
    // SLOTS is a power of two below 2^16: the mask keeps the low 14 bits.
    crc16(hash_tag(key)) & (SLOTS as u16 - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_is_xmodem() {
        // The check value of CRC-16/XMODEM, as in Redis's crc16.c test.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn hash_tags_follow_key_hash_slot() {
        // The slots redis-server's CLUSTER KEYSLOT gives these keys.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{foo}bar"), 12182);
        assert_eq!(key_slot(b"{}a"), 10875);
        assert_eq!(key_slot(b"a{}"), 6082);
        assert_eq!(key_slot(b"{a}{b}"), 15495);
        assert_eq!(key_slot(b"a{b"), 13340);
        assert_eq!(key_slot(b"{{a}}"), 10276);
        assert_eq!(key_slot(b""), 0);
        assert_eq!(
            key_slot(b"redisson_lock__channel:{my_first_lock_name}"),
            key_slot(b"my_first_lock_name")
        );
    }

    #[test]
    fn the_hash_tag_is_the_first_non_empty_braces() {
        assert_eq!(hash_tag(b"{user1000}.following"), b"user1000");
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"no tag"), b"no tag");
    }
}
