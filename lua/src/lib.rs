//! Lua 5.1.5 with Redis's patches, as a static library: read-only tables
//! (`lua_enablereadonlytable`, `lua_isreadonlytable`) and a string hash over every character.
//! See the crate's README.md.
//!
//! The crate has no Rust API. Its build script compiles the C sources and links them into this
//! crate, so a crate that uses it (`use locksmith_lua as _;`) links the interpreter; the
//! declarations come from `mlua-sys` built with its `external` feature (mlua's `ffi` module).
#![no_std]
