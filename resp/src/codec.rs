//! tokio-util codec for RESP frames (client side: decodes any frame, encodes frames).

use crate::{encode, DecodeError, Frame, FrameDecoder, Limits, Version};
use bytes::BytesMut;
use std::io;
use tokio_util::codec::{Decoder, Encoder};

/// A `Decoder`/`Encoder` of [`Frame`]s for use with `tokio_util::codec::Framed`.
///
/// Decode errors surface as `io::ErrorKind::InvalidData` wrapping the [`DecodeError`].
#[derive(Debug, Default)]
pub struct RespCodec {
    decoder: FrameDecoder,
    version: Version,
}

impl RespCodec {
    /// A codec that encodes for `version` and decodes with `limits`.
    pub fn new(version: Version, limits: Limits) -> Self {
        RespCodec {
            decoder: FrameDecoder::new(limits),
            version,
        }
    }

    /// Switches the encoding version (after `HELLO 3`).
    pub fn set_version(&mut self, version: Version) {
        self.version = version;
    }
}

impl Decoder for RespCodec {
    type Item = Frame;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, io::Error> {
        self.decoder
            .decode(src)
            .map_err(|e: DecodeError| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

impl Encoder<Frame> for RespCodec {
    type Error = io::Error;

    fn encode(&mut self, frame: Frame, dst: &mut BytesMut) -> Result<(), io::Error> {
        encode(&frame, self.version, dst);
        Ok(())
    }
}

impl Encoder<&Frame> for RespCodec {
    type Error = io::Error;

    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), io::Error> {
        encode(frame, self.version, dst);
        Ok(())
    }
}
