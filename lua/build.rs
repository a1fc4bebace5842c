//! Compiles the patched Lua 5.1.5 in `lua-5.1.5/` into the static library `lua5.1`, linked into
//! every binary that links this crate, with the defines the `lua-src` crate used for mlua's
//! `vendored` build.

// Cargo reads a build script's instructions from its standard output.
#![allow(clippy::print_stdout)]

use std::env;
use std::fs;
use std::path::Path;

fn main() {
    let source_dir = Path::new("lua-5.1.5");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=lua-5.1.5");

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_family = env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    let mut build = cc::Build::new();
    match target_os.as_str() {
        "linux" | "android" | "macos" | "freebsd" | "netbsd" | "openbsd" | "dragonfly" => {
            build.define("LUA_USE_LINUX", None);
        }
        "windows" => {}
        _ if target_family.split(',').any(|f| f == "unix") => {
            build.define("LUA_USE_POSIX", None);
        }
        other => panic!("don't know how to build Lua 5.1 for target OS {other:?}"),
    }
    // Lua's API argument checks in builds with debug assertions, as `lua-src` had them.
    if env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some() {
        build.define("LUA_USE_APICHECK", None);
    }

    let mut sources: Vec<_> = fs::read_dir(source_dir)
        .expect("lua-5.1.5/ is readable")
        .map(|entry| entry.expect("lua-5.1.5/ is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "c"))
        .collect();
    sources.sort();
    build
        .include(source_dir)
        .files(sources)
        .warnings(false)
        // Common globals as plain definitions, as `lua-src` compiles them.
        .flag_if_supported("-fno-common")
        // Whole: rustc puts this crate before mlua on the linker's command line, and GNU ld
        // reads an archive once, in order, keeping only the members that resolve references seen
        // so far, so mlua's `luaopen_*` would stay undefined. Sections nothing uses are still
        // dropped (`--gc-sections`). Not bundled into the rlib, as `lua-src` linked it.
        .link_lib_modifier("-bundle")
        .link_lib_modifier("+whole-archive")
        .compile("lua5.1");
}
