//! Function libraries, as Redis 7.0's `functions.c` keeps them: the libraries `FUNCTION LOAD`
//! created and the functions they registered (looked up ignoring case by `FCALL`), over one
//! functions interpreter; library metadata (`#!lua name=...`), and the `FUNCTION DUMP` payload.

use super::{script_flags, Engine, FunctionDef, RunShared};
use crate::rdb;
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// Redis's error for a library or function name that is not `[A-Za-z0-9_]+`.
pub(crate) const NAME_ERROR: &str = "Library names can only contain letters, numbers, or \
                                     underscores(_) and must be at least one character long";

/// Whether `name` is a valid library or function name (`functionsVerifyName`).
pub(crate) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The Rust primitives of the library API (`functions.lua` wraps them): whether a library is
/// loading, registering one function, and the flag names.
pub(super) fn primitives(lua: &mlua::Lua, shared: Arc<RunShared>) -> mlua::Result<mlua::Table> {
    let prims = lua.create_table()?;
    let s = shared.clone();
    prims.raw_set(
        "loading",
        lua.create_function(move |_, ()| {
            Ok(s.loading.lock().map(|l| l.is_some()).unwrap_or(false))
        })?,
    )?;
    prims.raw_set(
        "register",
        lua.create_function(
            move |lua,
                  (name, callback, description, flags): (
                mlua::String,
                mlua::Function,
                Option<mlua::String>,
                u32,
            )| {
                let Ok(mut loading) = shared.loading.lock() else {
                    return Ok(Some("the interpreter is busy".to_string()));
                };
                let Some(pending) = loading.as_mut() else {
                    return Ok(Some(
                        "redis.register_function can only be called on FUNCTION LOAD command"
                            .to_string(),
                    ));
                };
                let name = name.as_bytes();
                if !valid_name(&name) {
                    return Ok(Some(NAME_ERROR.to_string()));
                }
                let name = String::from_utf8_lossy(&name).into_owned();
                // Names are unique per library as written; across libraries, ignoring case.
                if pending.iter().any(|f| f.name == name) {
                    return Ok(Some("Function already exists in the library".to_string()));
                }
                pending.push(FunctionDef {
                    name,
                    description: description.map(|d| Bytes::copy_from_slice(&d.as_bytes())),
                    flags,
                    callback: lua.create_registry_value(callback)?,
                });
                Ok(None)
            },
        )?,
    )?;
    let names = lua.create_table()?;
    for (name, bit) in script_flags::NAMES {
        names.raw_set(*name, *bit)?;
    }
    prims.raw_set("flags", names)?;
    Ok(prims)
}

/// A loaded library.
#[derive(Debug)]
pub(crate) struct Library {
    /// Its name (case-sensitive, as Redis).
    pub(crate) name: String,
    /// Its whole code, `#!lua` line included (`FUNCTION LIST WITHCODE`, `FUNCTION DUMP`).
    pub(crate) code: Bytes,
    /// The functions it registered, in registration order.
    pub(crate) functions: Vec<FunctionDef>,
}

/// What `FUNCTION RESTORE` does with the libraries already loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestorePolicy {
    /// Add the payload's libraries; a name already loaded aborts (the default).
    Append,
    /// Add them, replacing libraries of the same name.
    Replace,
    /// Drop every library first.
    Flush,
}

/// Libraries and the index of their functions.
#[derive(Debug, Default)]
struct Registry {
    libraries: BTreeMap<String, Library>,
    /// Lowercase function name → its library's name.
    functions: HashMap<String, String>,
    /// Functions of every library (`FUNCTION STATS` after each load, without a walk).
    function_count: usize,
}

impl Registry {
    fn link(&mut self, library: Library) {
        for f in &library.functions {
            // A library may register `f` and `F`: the index keeps the first (as Redis's
            // case-insensitive dictionary does).
            self.functions
                .entry(f.name.to_ascii_lowercase())
                .or_insert_with(|| library.name.clone());
        }
        self.function_count += library.functions.len();
        if let Some(old) = self.libraries.insert(library.name.clone(), library) {
            self.function_count -= old.functions.len();
        }
    }

    fn unlink(&mut self, name: &str) -> Option<Library> {
        let library = self.libraries.remove(name)?;
        self.function_count -= library.functions.len();
        for f in &library.functions {
            let lower = f.name.to_ascii_lowercase();
            if self.functions.get(&lower) == Some(&library.name) {
                self.functions.remove(&lower);
            }
        }
        Some(library)
    }

    /// The first of `functions` whose name another library already has.
    fn collision<'f>(&self, functions: &'f [FunctionDef]) -> Option<&'f FunctionDef> {
        functions
            .iter()
            .find(|f| self.functions.contains_key(&f.name.to_ascii_lowercase()))
    }

    /// `functionsCreateWithLibraryCtx`: parses, runs and links a library's code.
    fn create(
        &mut self,
        engine: &Engine,
        code: &Bytes,
        replace: bool,
        timeout: Option<Duration>,
    ) -> Result<String, String> {
        let meta = Metadata::parse(code)?;
        if !valid_name(meta.name.as_bytes()) {
            return Err(NAME_ERROR.into());
        }
        if !meta.engine.eq_ignore_ascii_case("lua") {
            return Err(format!("Engine '{}' not found", meta.engine));
        }
        if self.libraries.contains_key(&meta.name) && !replace {
            return Err(format!("Library '{}' already exists", meta.name));
        }
        let old = self.unlink(&meta.name);
        let outcome = (|| {
            let functions = engine.load_library(meta.code, timeout)?;
            if functions.is_empty() {
                return Err("No functions registered".to_string());
            }
            if let Some(f) = self.collision(&functions) {
                return Err(format!("Function {} already exists", f.name));
            }
            Ok(functions)
        })();
        match outcome {
            Ok(functions) => {
                self.link(Library {
                    name: meta.name.clone(),
                    code: code.clone(),
                    functions,
                });
                Ok(meta.name)
            }
            Err(e) => {
                if let Some(old) = old {
                    self.link(old);
                }
                Err(e)
            }
        }
    }

    /// `libraryJoin`: moves every library of `other` in; on a collision nothing changes.
    fn join(&mut self, other: Registry, replace: bool) -> Result<(), String> {
        let mut replaced = Vec::new();
        let mut outcome = Ok(());
        for name in other.libraries.keys() {
            if self.libraries.contains_key(name) {
                if !replace {
                    outcome = Err(format!("Library {name} already exists"));
                    break;
                }
                replaced.extend(self.unlink(name));
            }
        }
        if outcome.is_ok() {
            for library in other.libraries.values() {
                if let Some(f) = self.collision(&library.functions) {
                    outcome = Err(format!("Function {} already exists", f.name));
                    break;
                }
            }
        }
        if outcome.is_err() {
            for library in replaced {
                self.link(library);
            }
            return outcome;
        }
        for (_, library) in other.libraries {
            self.link(library);
        }
        Ok(())
    }
}

/// A library's `#!<engine> name=<name>` line, parsed as `functionExtractLibMetaData`.
struct Metadata<'c> {
    engine: String,
    name: String,
    /// The code after the metadata line, from its newline (so line numbers stay right).
    code: &'c [u8],
}

impl<'c> Metadata<'c> {
    fn parse(payload: &'c [u8]) -> Result<Self, String> {
        if !payload.starts_with(b"#!") {
            return Err("Missing library metadata".into());
        }
        let Some(newline) = payload.iter().position(|&b| b == b'\n') else {
            return Err("Invalid library metadata".into());
        };
        let (line, code) = payload.split_at(newline);
        let parts = match locksmith_resp::split_args(line) {
            Some(parts) if !parts.is_empty() => parts,
            _ => return Err("Invalid library metadata".into()),
        };
        let engine = String::from_utf8_lossy(parts[0].get(2..).unwrap_or_default()).into_owned();
        let mut name = None;
        for part in &parts[1..] {
            match part.get(..5) {
                Some(prefix) if prefix.eq_ignore_ascii_case(b"name=") => {
                    if name.is_some() {
                        return Err(
                            "Invalid metadata value, name argument was given multiple times".into(),
                        );
                    }
                    name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
                }
                _ => {
                    return Err(format!(
                        "Invalid metadata value given: {}",
                        String::from_utf8_lossy(part)
                    ))
                }
            }
        }
        let Some(name) = name else {
            return Err("Library name was not given".into());
        };
        Ok(Metadata { engine, name, code })
    }
}

/// A node's function libraries over their interpreter (created on first use).
#[derive(Debug, Default)]
pub(crate) struct Libraries {
    engine: Option<Box<Engine>>,
    current: Registry,
}

impl Libraries {
    /// The interpreter, created by `make` if there is none yet.
    fn engine(&mut self, make: impl FnOnce() -> Result<Engine, String>) -> Result<&Engine, String> {
        if self.engine.is_none() {
            self.engine = Some(Box::new(make()?));
        }
        self.engine
            .as_deref()
            .ok_or_else(|| "Lua interpreter unavailable".to_string())
    }

    /// `FUNCTION LOAD`: creates (or with `replace`, replaces) a library from its code; returns
    /// its name, or the error text (without its `ERR` code).
    pub(crate) fn load(
        &mut self,
        code: &Bytes,
        replace: bool,
        timeout: Option<Duration>,
        make: impl FnOnce() -> Result<Engine, String>,
    ) -> Result<String, String> {
        self.engine(make)?;
        let (Some(engine), current) = (self.engine.as_deref(), &mut self.current) else {
            return Err("Lua interpreter unavailable".into());
        };
        current.create(engine, code, replace, timeout)
    }

    /// `FUNCTION DELETE`: whether the library existed.
    pub(crate) fn delete(&mut self, name: &[u8]) -> bool {
        let name = String::from_utf8_lossy(name);
        self.current.unlink(&name).is_some()
    }

    /// `FUNCTION FLUSH`: drops every library and the interpreter.
    pub(crate) fn flush(&mut self) {
        self.current = Registry::default();
        self.engine = None;
    }

    /// The function named `name` (any case) and the interpreter it runs on.
    pub(crate) fn function(&self, name: &[u8]) -> Option<(&Engine, &FunctionDef)> {
        let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
        let library = self.current.functions.get(&lower)?;
        let function = self
            .current
            .libraries
            .get(library)?
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&lower))?;
        // (The first of a library's `f` and `F`, as linked.)
        Some((self.engine.as_deref()?, function))
    }

    /// The libraries, by name.
    pub(crate) fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.current.libraries.values()
    }

    /// (libraries, functions) loaded.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.current.libraries.len(), self.current.function_count)
    }

    /// Bytes the interpreter holds (`used_memory_vm_functions`).
    pub(crate) fn memory_used(&self) -> usize {
        self.engine.as_deref().map_or(0, Engine::memory_used)
    }

    /// The libraries as a `FUNCTION DUMP` payload of RDB version 10, for the node's own
    /// copies (journal, replication).
    pub(crate) fn dump(&self, compress: bool) -> Vec<u8> {
        self.dump_as(compress, 10)
    }

    /// `FUNCTION DUMP`: every library's code as `RDB_OPCODE_FUNCTION2` records (compressed as
    /// Redis's `rdbSaveRawString` under `rdbcompression`, `compress`), then the RDB `version`
    /// and CRC64.
    pub(crate) fn dump_as(&self, compress: bool, version: u16) -> Vec<u8> {
        let mut out = Vec::new();
        for library in self.current.libraries.values() {
            out.push(rdb::OPCODE_FUNCTION2);
            rdb::write_string(&mut out, &library.code, compress);
        }
        rdb::finish_payload(&mut out, version);
        out
    }

    /// `FUNCTION RESTORE`: loads the libraries of a `FUNCTION DUMP` payload (from this server
    /// or from Redis, of an RDB version up to `max_version`) under `policy`; on any error
    /// nothing changes.
    pub(crate) fn restore(
        &mut self,
        payload: &[u8],
        max_version: u16,
        policy: RestorePolicy,
        make: impl FnOnce() -> Result<Engine, String>,
    ) -> Result<(), String> {
        let Some(body) = rdb::verify_payload(payload, max_version) else {
            return Err("DUMP payload version or checksum are wrong".into());
        };
        self.engine(make)?;
        let Some(engine) = self.engine.as_deref() else {
            return Err("Lua interpreter unavailable".into());
        };
        let mut loaded = Registry::default();
        let mut reader = rdb::Reader::new(body);
        while reader.remaining() > 0 {
            match reader.byte() {
                Ok(rdb::OPCODE_FUNCTION2) => {}
                Ok(rdb::OPCODE_FUNCTION) => {
                    return Err("Pre-GA function format not supported".into())
                }
                Ok(_) => return Err("given type is not a function".into()),
                Err(_) => return Err("can not read data type".into()),
            }
            let code = reader
                .string()
                .map_err(|_| "Failed loading library payload".to_string())?;
            loaded.create(engine, &Bytes::from(code), false, None)?;
        }
        if policy == RestorePolicy::Flush {
            self.current = loaded;
            return Ok(());
        }
        self.current.join(loaded, policy == RestorePolicy::Replace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_parses_as_redis() {
        let m = Metadata::parse(b"#!lua name=lib\nreturn 1").map(|m| (m.engine, m.name));
        assert_eq!(m, Ok(("lua".into(), "lib".into())));
        let quoted = Metadata::parse(b"#!lua name=\"foo\"\nx").map(|m| m.name);
        assert_eq!(quoted, Ok("foo".into()));
        let err = |p: &[u8]| Metadata::parse(p).err();
        assert_eq!(err(b"return 1"), Some("Missing library metadata".into()));
        assert_eq!(
            err(b"#!lua name=x"),
            Some("Invalid library metadata".into())
        );
        assert_eq!(err(b"#!"), Some("Invalid library metadata".into()));
        assert_eq!(err(b"#!\n"), Some("Library name was not given".into()));
        assert_eq!(err(b"#!lua\n"), Some("Library name was not given".into()));
        assert_eq!(
            err(b"#!lua name=a foo=bar\n"),
            Some("Invalid metadata value given: foo=bar".into())
        );
        assert_eq!(
            err(b"#!lua name=a name=b\n"),
            Some("Invalid metadata value, name argument was given multiple times".into())
        );
        assert_eq!(
            Metadata::parse(b"#! name=t\n").map(|m| m.engine).ok(),
            Some(String::new())
        );
    }

    #[test]
    fn names_are_letters_digits_and_underscores() {
        assert!(valid_name(b"a_Z9"));
        assert!(!valid_name(b""));
        assert!(!valid_name(b"a-b"));
        assert!(!valid_name(b"a\0b"));
    }
}
