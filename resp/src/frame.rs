//! The [`Frame`] type: every RESP2 and RESP3 value.

use bytes::Bytes;
use std::fmt;

/// Protocol version spoken on a connection (`HELLO 2` / `HELLO 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// RESP2, the default for a new connection.
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// One RESP value. RESP3-only variants are downgraded by the encoder for RESP2 peers.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// `+OK`
    Simple(Bytes),
    /// `-ERR message` (the bytes hold the whole line, error code included)
    Error(Bytes),
    /// `:42`
    Integer(i64),
    /// `$3\r\nfoo`
    Bulk(Bytes),
    /// The null bulk (`$-1` in RESP2, `_` in RESP3).
    Null,
    /// The null array (`*-1` in RESP2, `_` in RESP3), used by e.g. `EXEC` after a failed `WATCH`
    /// and blocking pops that time out.
    NullArray,
    /// `*N` followed by N frames.
    Array(Vec<Frame>),
    /// RESP3 map `%N` (N key/value pairs); flattened to an array for RESP2.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 set `~N`; an array for RESP2.
    Set(Vec<Frame>),
    /// RESP3 double `,1.5`; a bulk string for RESP2.
    Double(f64),
    /// A double as Redis formats it for people (`addReplyHumanLongDouble`: `%.17Lf`, trailing
    /// zeros trimmed, see [`crate::format_human_double`]), as GEOPOS coordinates are:
    /// RESP3 double `,13.36138933897018433`; a bulk string of the same text for RESP2.
    HumanDouble(f64),
    /// RESP3 boolean `#t`/`#f`; integer 1/0 for RESP2.
    Boolean(bool),
    /// RESP3 big number `(123…`; a bulk string for RESP2.
    BigNumber(Bytes),
    /// RESP3 verbatim string `=N\r\ntxt:…`; a bulk string of the text for RESP2.
    Verbatim {
        /// Three-byte format, e.g. `txt` or `mkd`.
        format: [u8; 3],
        /// The text after the `fmt:` prefix.
        text: Bytes,
    },
    /// RESP3 push `>N` (pub/sub messages, invalidations); an array for RESP2.
    Push(Vec<Frame>),
    /// RESP3 attribute `|N` attached to the frame that follows it; dropped for RESP2.
    Attribute {
        /// Attribute key/value pairs.
        attrs: Vec<(Frame, Frame)>,
        /// The frame the attributes describe.
        frame: Box<Frame>,
    },
}

impl Frame {
    /// `+OK`.
    pub fn ok() -> Frame {
        Frame::Simple(Bytes::from_static(b"OK"))
    }

    /// A simple string from static text.
    pub fn simple(s: &'static str) -> Frame {
        Frame::Simple(Bytes::from_static(s.as_bytes()))
    }

    /// An error line; `msg` must include the error code (`ERR …`, `WRONGTYPE …`).
    pub fn error(msg: impl Into<String>) -> Frame {
        Frame::Error(Bytes::from(msg.into()))
    }

    /// A bulk string copied from `data`.
    pub fn bulk(data: impl Into<Bytes>) -> Frame {
        Frame::Bulk(data.into())
    }

    /// An array of bulk strings.
    pub fn bulk_array<I, B>(items: I) -> Frame
    where
        I: IntoIterator<Item = B>,
        B: Into<Bytes>,
    {
        Frame::Array(items.into_iter().map(|b| Frame::Bulk(b.into())).collect())
    }

    /// Whether this frame is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }

    /// The payload of a bulk, simple string or verbatim string.
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match self {
            Frame::Bulk(b) | Frame::Simple(b) | Frame::BigNumber(b) => Some(b),
            Frame::Verbatim { text, .. } => Some(text),
            _ => None,
        }
    }
}

impl fmt::Display for Frame {
    /// A human-readable rendering close to `redis-cli`'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Simple(s) => write!(f, "{}", String::from_utf8_lossy(s)),
            Frame::Error(s) => write!(f, "(error) {}", String::from_utf8_lossy(s)),
            Frame::Integer(i) => write!(f, "(integer) {i}"),
            Frame::Bulk(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Frame::BigNumber(b) => write!(f, "(big number) {}", String::from_utf8_lossy(b)),
            Frame::Verbatim { text, .. } => write!(f, "{}", String::from_utf8_lossy(text)),
            Frame::Null | Frame::NullArray => write!(f, "(nil)"),
            Frame::Double(d) => write!(f, "(double) {}", crate::format_double(*d)),
            Frame::HumanDouble(d) => write!(f, "(double) {}", crate::format_human_double(*d)),
            Frame::Boolean(b) => write!(f, "({})", if *b { "true" } else { "false" }),
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
                if items.is_empty() {
                    return write!(f, "(empty array)");
                }
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{}) {item}", i + 1)?;
                }
                Ok(())
            }
            Frame::Map(pairs) => {
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{}# {k} => {v}", i + 1)?;
                }
                Ok(())
            }
            Frame::Attribute { frame, .. } => write!(f, "{frame}"),
        }
    }
}
