//! `RequestDecoder` on raw bytes, with and without `auth_required`: see
//! `locksmith_resp_fuzz::fuzz_requests`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| locksmith_resp_fuzz::fuzz_requests(data));
