//! A stored key. Keys up to [`INLINE`] bytes (most keys) live inside the table's node, so a
//! lookup compares them on the cache line it already loaded instead of missing on the
//! request's allocation; longer keys share the request's bytes.

use bytes::Bytes;
use std::fmt;
use std::ops::Deref;

/// Longest key kept inline (with its length byte, as large as a `Bytes`).
pub(crate) const INLINE: usize = 23;

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
    Shared(Bytes),
}

impl Key {
    /// The key `bytes` names: copied when short, shared otherwise.
    pub(crate) fn new(bytes: &Bytes) -> Key {
        match (u8::try_from(bytes.len()), bytes.len() <= INLINE) {
            (Ok(len), true) => {
                let mut buf = [0; INLINE];
                if let Some(dst) = buf.get_mut(..bytes.len()) {
                    dst.copy_from_slice(bytes);
                }
                Key::Inline { len, buf }
            }
            _ => Key::Shared(bytes.clone()),
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
            Key::Shared(b) => b,
        }
    }

    /// The key as `Bytes` (a copy of an inline key).
    pub(crate) fn to_bytes(&self) -> Bytes {
        match self {
            Key::Inline { .. } => Bytes::copy_from_slice(self.as_bytes()),
            Key::Shared(b) => b.clone(),
        }
    }

    /// The key as `Bytes`, consuming it.
    pub(crate) fn into_bytes(self) -> Bytes {
        match self {
            Key::Inline { .. } => Bytes::copy_from_slice(self.as_bytes()),
            Key::Shared(b) => b,
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
    fn short_keys_are_inline_long_ones_shared_and_both_read_back() {
        for len in [0, 1, INLINE, INLINE + 1, 300] {
            let b = Bytes::from(vec![b'k'; len]);
            let k = Key::new(&b);
            assert_eq!(matches!(k, Key::Inline { .. }), len <= INLINE);
            assert_eq!(k.as_bytes(), &b[..]);
            assert_eq!(k.to_bytes(), b);
            assert_eq!(k.into_bytes(), b);
        }
        // As large as the `Bytes` it replaces: a keyspace node does not grow.
        assert_eq!(std::mem::size_of::<Key>(), std::mem::size_of::<Bytes>());
    }
}
