//! The ACL file (`aclfile`): one `user <name> <rules...>` line per user. Loading validates
//! every line and reports every problem in one line, as Redis's `ACLLoadFromFile` does;
//! saving writes a temporary file and renames it over the old one (`ACLSaveToFile`).

use super::{merge_selectors, selector::has_spaces, Acl, Catalog, Rules, SetError};
use bytes::Bytes;
use std::collections::BTreeSet;
use std::path::Path;

/// An I/O error's text as C's `strerror` gives it (without Rust's " (os error N)").
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text.get(..at).unwrap_or_default().to_string(),
        None => text,
    }
}

/// Reads and validates the ACL file at `path` (`shown` is the name errors give, the
/// `aclfile` setting); new users start with every channel if `all_channels`.
///
/// # Errors
///
/// Redis's one-line description of every problem found; nothing is to be changed then.
pub(crate) fn load_file(
    path: &Path,
    shown: &str,
    catalog: &Catalog,
    all_channels: bool,
) -> Result<Vec<(Bytes, Rules)>, String> {
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{}': {}",
            shown,
            strerror(&e)
        )
    })?;
    let mut errors = String::new();
    let mut users: Vec<(Bytes, Rules)> = Vec::new();
    let mut names = BTreeSet::new();
    for (i, line) in text.split(|&c| c == b'\n').enumerate() {
        let linenum = i + 1;
        let line = trim(line, b" \t\r\n");
        if line.is_empty() {
            continue;
        }
        let argv: Vec<Bytes> = line
            .split(|&c| c == b' ')
            .map(Bytes::copy_from_slice)
            .collect();
        if argv.first().map(|a| &a[..]) != Some(&b"user"[..]) || argv.len() < 2 {
            errors.push_str(&format!(
                "{shown}:{linenum} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = argv.get(1).cloned().unwrap_or_default();
        if has_spaces(&name) {
            errors.push_str(&format!(
                "'{shown}:{linenum}: username '{}' contains invalid characters. ",
                String::from_utf8_lossy(&name)
            ));
            continue;
        }
        if !names.insert(name.clone()) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {linenum}. ",
                String::from_utf8_lossy(&name)
            ));
            continue;
        }
        let mut rules = Rules::new(all_channels);
        let merged = match merge_selectors(argv.get(2..).unwrap_or_default()) {
            Ok(merged) => merged,
            Err(_) => {
                errors.push_str(&format!(
                    "{shown}:{linenum}: Unmatched parenthesis in selector definition."
                ));
                Vec::new()
            }
        };
        let mut syntax_error = false;
        for op in merged {
            let op = trim(&op, b"\t\r\n");
            if let Err(e) = rules.apply(catalog, op, all_channels) {
                if e == SetError::Unknown {
                    errors.push_str(&format!(
                        "{shown}:{linenum}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(op),
                        e.message()
                    ));
                } else if !syntax_error {
                    errors.push_str(&format!("{shown}:{linenum}: {}. ", e.message()));
                    syntax_error = true;
                }
            }
        }
        users.push((name, rules));
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was \
             performed",
        );
        Err(errors)
    }
}

/// `s` without the bytes of `set` at either end.
fn trim<'a>(s: &'a [u8], set: &[u8]) -> &'a [u8] {
    let start = s.iter().position(|c| !set.contains(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !set.contains(c))
        .map_or(start, |e| e + 1);
    s.get(start..end).unwrap_or_default()
}

/// Writes every user of `acl` to `path` in the ACL file format (through a temporary file
/// renamed into place). `tag` makes the temporary name unique.
///
/// # Errors
///
/// The I/O error (Redis logs it and answers a fixed text).
pub(crate) fn save_file(
    acl: &Acl,
    catalog: &Catalog,
    path: &Path,
    tag: u64,
) -> std::io::Result<()> {
    let mut text = String::new();
    for user in acl.all() {
        text.push_str("user ");
        text.push_str(&String::from_utf8_lossy(user.name()));
        text.push(' ');
        text.push_str(&user.rules().describe(catalog));
        text.push('\n');
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}-{tag}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
