//! A stored key. Keys up to [`INLINE`] bytes (most keys) live inside the table's node, so a
//! lookup compares them on the cache line it already loaded instead of missing on the
//! request's allocation; longer keys are copied into an allocation of their own (a boxed
//! slice, 16 bytes in the node where a `Bytes` takes 32: the node stays in mimalloc's 96-byte
//! class, and the key holds no part of a request buffer alive).

use bytes::Bytes;
use std::fmt;
use std::ops::Deref;

/// Longest key kept inline (with its length byte and the variant's tag, 24 bytes).
pub(crate) const INLINE: usize = 22;

/// A key as the keyspace stores it.
#[derive(Clone)]
pub(crate) enum Key {
    /// Up to [`INLINE`] bytes.
    Inline {
        /// Bytes used in `buf`.
        len: u8,
        /// The key, then unused bytes.
        buf: [u8; INLINE],
    },
    /// A longer key.
    Boxed(Box<[u8]>),
}

impl Key {
    /// The key `bytes` names, copied (inline when short).
    pub(crate) fn new(bytes: &[u8]) -> Key {
        match (u8::try_from(bytes.len()), bytes.len() <= INLINE) {
            (Ok(len), true) => {
                let mut buf = [0; INLINE];
                if let Some(dst) = buf.get_mut(..bytes.len()) {
                    dst.copy_from_slice(bytes);
                }
                Key::Inline { len, buf }
            }
            _ => Key::Boxed(Box::from(bytes)),
        }
    }

    /// The empty key (a placeholder taking no allocation).
    pub(crate) const EMPTY: Key = Key::Inline {
        len: 0,
        buf: [0; INLINE],
    };

    /// The key's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, buf } => buf.get(..usize::from(*len)).unwrap_or(buf),
            Key::Boxed(b) => b,
        }
    }

    /// The key as `Bytes` (a copy).
    pub(crate) fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.as_bytes())
    }

    /// The key as `Bytes`, consuming it (a long key's allocation is handed over, not copied).
    pub(crate) fn into_bytes(self) -> Bytes {
        match self {
            Key::Inline { .. } => Bytes::copy_from_slice(self.as_bytes()),
            Key::Boxed(b) => Bytes::from(b),
        }
    }
}

impl Deref for Key {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq<Bytes> for Key {
    fn eq(&self, other: &Bytes) -> bool {
        self.as_bytes() == &other[..]
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Bytes::copy_from_slice(self.as_bytes()), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_are_inline_long_ones_boxed_and_both_read_back() {
        for len in [0, 1, INLINE, INLINE + 1, 300] {
            let b = Bytes::from(vec![b'k'; len]);
            let k = Key::new(&b);
            assert_eq!(matches!(k, Key::Inline { .. }), len <= INLINE);
            assert_eq!(k.as_bytes(), &b[..]);
            assert_eq!(k.to_bytes(), b);
            assert_eq!(k.into_bytes(), b);
        }
        // 24 bytes: the keyspace node's budget (`node_fits_its_size_class`).
        assert_eq!(std::mem::size_of::<Key>(), 24);
    }
}
