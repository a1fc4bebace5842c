//! Redis's CRC64 (`crc64.c`): the Jones polynomial, reflected input and output, no final xor.

/// The Jones polynomial, bit-reflected.
const POLY: u64 = reflect(0xad93_d235_94c9_35a9);

const fn reflect(mut v: u64) -> u64 {
    let mut out = 0u64;
    let mut i = 0;
    while i < 64 {
        out = (out << 1) | (v & 1);
        v >>= 1;
        i += 1;
    }
    out
}

const fn table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
}

static TABLE: [u64; 256] = table();

/// Continues `crc` over `data` (start with 0).
pub(crate) fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_redis_test_vector() {
        // crc64.c's own test: crc64(0, "123456789", 9) == 0xe9c6d914c4b8d9ca.
        assert_eq!(super::crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }
}
