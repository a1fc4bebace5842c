//! RESP2/RESP3 for Locksmith: one [`Frame`] type, an incremental decoder for replies and
//! frames ([`FrameDecoder`]), Redis's request parser for servers ([`RequestDecoder`]: multibulk
//! and inline commands with Redis's limits and error texts), an encoder that downgrades RESP3
//! replies for RESP2 clients as Redis does, a tokio-util codec ([`RespCodec`]), and Redis
//! Cluster's key hash slots ([`slot`]), which servers route by and clients aim with.

mod codec;
mod decode;
mod encode;
mod error;
mod frame;
mod shortest_double;
pub mod slot;

pub use codec::RespCodec;
pub use decode::{
    split_inline_args as split_args, FrameDecoder, Limits, RequestDecoder, PEEK_ARGS,
    PROTO_INLINE_MAX_SIZE, PROTO_MAX_BULK_LEN,
};
pub use encode::{
    encode, encode_command, encode_to_vec, encode_with, encoded_len, format_double,
    format_human_double, Doubles,
};
pub use error::DecodeError;
pub use frame::{Frame, Version};
pub use shortest_double::{double_to_i64, format_shortest_double};

/// Redis's `string2ll`: parses a strict decimal i64 (optional `-`, no `+`, no leading zeros,
/// no spaces). Servers use it for every integer argument, as Redis does.
pub fn parse_integer(text: &[u8]) -> Option<i64> {
    decode::parse_strict_i64(text)
}
