//! `FrameDecoder` on raw bytes: see `locksmith_resp_fuzz::fuzz_frames`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| locksmith_resp_fuzz::fuzz_frames(data));
