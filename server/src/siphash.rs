//! SipHash-1-2 of a byte string under a random key drawn once per process: the hash of the
//! keyspace and of every aggregate's elements, as Redis hashes its dicts (`siphash.c`: one
//! compression round, two finalization rounds, "the same speed as Murmurhash2").
//!
//! Clients choose the keys, so the hash must keep them from aiming at collisions; a random key
//! does that. std's `RandomState` is SipHash-1-3 behind the generic `Hasher` interface, which
//! buffers its input; this one reads the string in 8-byte words in one pass and runs one
//! finalization round fewer. On a pipelined `SET` it took a third of std's instructions.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

/// A 128-bit SipHash key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SipKey {
    k0: u64,
    k1: u64,
}

impl Default for SipKey {
    /// A fresh random key.
    fn default() -> SipKey {
        SipKey::random()
    }
}

impl SipKey {
    /// A fresh random key (from the operating system's randomness, through std's
    /// `RandomState`).
    pub(crate) fn random() -> SipKey {
        let seed = RandomState::new();
        SipKey {
            k0: seed.hash_one(0u64),
            k1: seed.hash_one(1u64),
        }
    }

    /// The key drawn once for this process (aggregates' elements: a SCAN cursor stays valid
    /// for the process's life, as Redis seeds its dict hash once at start).
    pub(crate) fn process() -> SipKey {
        static KEY: OnceLock<SipKey> = OnceLock::new();
        *KEY.get_or_init(SipKey::random)
    }

    /// SipHash-1-2 of `data` under this key.
    #[inline]
    pub(crate) fn hash(&self, data: &[u8]) -> u64 {
        siphash::<1, 2>(self.k0, self.k1, data)
    }
}

struct State {
    v0: u64,
    v1: u64,
    v2: u64,
    v3: u64,
}

impl State {
    #[inline(always)]
    fn round(&mut self) {
        self.v0 = self.v0.wrapping_add(self.v1);
        self.v1 = self.v1.rotate_left(13) ^ self.v0;
        self.v0 = self.v0.rotate_left(32);
        self.v2 = self.v2.wrapping_add(self.v3);
        self.v3 = self.v3.rotate_left(16) ^ self.v2;
        self.v0 = self.v0.wrapping_add(self.v3);
        self.v3 = self.v3.rotate_left(21) ^ self.v0;
        self.v2 = self.v2.wrapping_add(self.v1);
        self.v1 = self.v1.rotate_left(17) ^ self.v2;
        self.v2 = self.v2.rotate_left(32);
    }

    #[inline(always)]
    fn compress<const C: usize>(&mut self, m: u64) {
        self.v3 ^= m;
        for _ in 0..C {
            self.round();
        }
        self.v0 ^= m;
    }
}

/// SipHash-C-D (the reference algorithm with C compression and D finalization rounds).
#[inline]
fn siphash<const C: usize, const D: usize>(k0: u64, k1: u64, data: &[u8]) -> u64 {
    let mut s = State {
        v0: k0 ^ 0x736f_6d65_7073_6575,
        v1: k1 ^ 0x646f_7261_6e64_6f6d,
        v2: k0 ^ 0x6c79_6765_6e65_7261,
        v3: k1 ^ 0x7465_6462_7974_6573,
    };
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        s.compress::<C>(u64::from_le_bytes(bytes));
    }
    // The last block: the remaining 0-7 bytes, little-endian, under the length's low byte.
    let mut last = (data.len() as u64) << 56;
    for (i, &b) in words.remainder().iter().enumerate() {
        last |= u64::from(b) << (8 * i);
    }
    s.compress::<C>(last);
    s.v2 ^= 0xff;
    for _ in 0..D {
        s.round();
    }
    s.v0 ^ s.v1 ^ s.v2 ^ s.v3
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference implementation's SipHash-2-4 vectors (key 00..0f, message 00..n-1 for
    /// n = 0..63), as Redis's `siphash_test` checks them.
    const VECTORS_2_4: [u64; 64] = [
        0x726fdb47dd0e0e31,
        0x74f839c593dc67fd,
        0x0d6c8009d9a94f5a,
        0x85676696d7fb7e2d,
        0xcf2794e0277187b7,
        0x18765564cd99a68d,
        0xcbc9466e58fee3ce,
        0xab0200f58b01d137,
        0x93f5f5799a932462,
        0x9e0082df0ba9e4b0,
        0x7a5dbbc594ddb9f3,
        0xf4b32f46226bada7,
        0x751e8fbc860ee5fb,
        0x14ea5627c0843d90,
        0xf723ca908e7af2ee,
        0xa129ca6149be45e5,
        0x3f2acc7f57c29bdb,
        0x699ae9f52cbe4794,
        0x4bc1b3f0968dd39c,
        0xbb6dc91da77961bd,
        0xbed65cf21aa2ee98,
        0xd0f2cbb02e3b67c7,
        0x93536795e3a33e88,
        0xa80c038ccd5ccec8,
        0xb8ad50c6f649af94,
        0xbce192de8a85b8ea,
        0x17d835b85bbb15f3,
        0x2f2e6163076bcfad,
        0xde4daaaca71dc9a5,
        0xa6a2506687956571,
        0xad87a3535c49ef28,
        0x32d892fad841c342,
        0x7127512f72f27cce,
        0xa7f32346f95978e3,
        0x12e0b01abb051238,
        0x15e034d40fa197ae,
        0x314dffbe0815a3b4,
        0x027990f029623981,
        0xcadcd4e59ef40c4d,
        0x9abfd8766a33735c,
        0x0e3ea96b5304a7d0,
        0xad0c42d6fc585992,
        0x187306c89bc215a9,
        0xd4a60abcf3792b95,
        0xf935451de4f21df2,
        0xa9538f0419755787,
        0xdb9acddff56ca510,
        0xd06c98cd5c0975eb,
        0xe612a3cb9ecba951,
        0xc766e62cfcadaf96,
        0xee64435a9752fe72,
        0xa192d576b245165a,
        0x0a8787bf8ecb74b2,
        0x81b3e73d20b49b6f,
        0x7fa8220ba3b2ecea,
        0x245731c13ca42499,
        0xb78dbfaf3a8d83bd,
        0xea1ad565322a1a0b,
        0x60e61c23a3795013,
        0x6606d7e446282b93,
        0x6ca4ecb15c5f91e1,
        0x9f626da15c9625f3,
        0xe51b38608ef25f57,
        0x958a324ceb064572,
    ];

    fn reference_key() -> (u64, u64) {
        let k: Vec<u8> = (0..16).collect();
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
        (word(&k[..8]), word(&k[8..]))
    }

    #[test]
    fn the_rounds_match_the_reference_vectors() {
        let (k0, k1) = reference_key();
        let data: Vec<u8> = (0..64).collect();
        for (n, want) in VECTORS_2_4.iter().enumerate() {
            assert_eq!(siphash::<2, 4>(k0, k1, &data[..n]), *want, "{n} bytes");
        }
    }

    #[test]
    fn one_two_is_redis_s_variant_of_the_same_function() {
        // Fewer rounds give a different function over the same state: every length differs
        // from 2-4, and the key matters.
        let (k0, k1) = reference_key();
        let data: Vec<u8> = (0..64).collect();
        for n in 0..64 {
            let h = siphash::<1, 2>(k0, k1, &data[..n]);
            assert_ne!(h, VECTORS_2_4[n], "{n} bytes");
            assert_ne!(h, siphash::<1, 2>(k0 ^ 1, k1, &data[..n]), "{n} bytes");
        }
        let key = SipKey { k0, k1 };
        assert_eq!(key.hash(b"hello"), siphash::<1, 2>(k0, k1, b"hello"));
    }

    #[test]
    fn keys_are_random_and_the_process_key_is_stable() {
        assert_ne!(SipKey::random(), SipKey::random());
        assert_eq!(SipKey::process(), SipKey::process());
        assert_ne!(SipKey::process().hash(b"k"), SipKey::random().hash(b"k"));
    }
}
