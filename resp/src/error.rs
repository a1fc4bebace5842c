//! Decoder errors. Their `Display` text is Redis's wording after `Protocol error: `, so a server
//! can reply `-ERR Protocol error: <text>` and close, exactly as Redis does.

use thiserror::Error;

/// Why bytes could not be decoded. After any of these the stream is unusable and the peer
/// should be disconnected (Redis closes the connection after replying).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A `$` length that is not an integer, is negative where not allowed, or exceeds
    /// `proto-max-bulk-len`.
    #[error("invalid bulk length")]
    InvalidBulkLength,
    /// A `*` count that is not an integer or exceeds the multibulk limit.
    #[error("invalid multibulk length")]
    InvalidMultibulkLength,
    /// An inline command with an unterminated or misplaced quote.
    #[error("unbalanced quotes in request")]
    UnbalancedQuotes,
    /// An inline command line longer than `PROTO_INLINE_MAX_SIZE` without a newline.
    #[error("too big inline request")]
    TooBigInlineRequest,
    /// A `*` header line longer than `PROTO_INLINE_MAX_SIZE` without its CR.
    #[error("too big mbulk count string")]
    TooBigMultibulkCount,
    /// A `$` header line longer than `PROTO_INLINE_MAX_SIZE` without its CR.
    #[error("too big bulk count string")]
    TooBigBulkCount,
    /// Inside a request array, an element that is not a bulk string. The byte is the one found
    /// where `$` was expected.
    #[error("expected '$', got '{}'", reply_char(*.0))]
    ExpectedBulk(u8),
    /// More than 10 elements sent before authenticating.
    #[error("unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// A bulk longer than 16384 bytes sent before authenticating.
    #[error("unauthenticated bulk length")]
    UnauthenticatedBulkLength,
    /// A frame type byte that RESP2/RESP3 does not define.
    #[error("invalid frame type byte '{}'", char::from(*.0))]
    InvalidType(u8),
    /// An integer, boolean or double line that does not parse.
    #[error("invalid {0} value")]
    InvalidValue(&'static str),
    /// Aggregates nested deeper than the decoder's depth limit.
    #[error("too deeply nested aggregate")]
    TooDeep,
}

/// The byte as Redis prints it with `%c` in an error reply: `addReplyErrorFormat` turns CR and
/// LF into spaces so the reply stays one line. Bytes above 0x7f become the Latin-1 character
/// (Redis sends the raw byte, which a Rust `String` cannot hold).
fn reply_char(b: u8) -> char {
    match b {
        b'\r' | b'\n' => ' ',
        other => char::from(other),
    }
}
