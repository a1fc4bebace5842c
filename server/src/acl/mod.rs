//! Redis 7.0's ACLs for one node: the users (flags, password hashes, selectors), the rules
//! that change them (`ACL SETUSER`'s language, [`Acl::set_user`]), authentication, the
//! permission check a command line goes through ([`User::check`]), the ACL log, and the ACL
//! file format (`ACL LOAD`/`ACL SAVE`).
//!
//! A client holds an `Arc<User>`; rule changes replace the user's rules in place, so every
//! client authenticated as that user sees them at its next command, as in Redis. The check's
//! fast path is one atomic load: a user whose first selector allows every command, key and
//! channel (the default user) skips everything else.
//!
//! Commands are known by id, the command table's statistics index, through a [`Catalog`]
//! the command layer builds once (names, categories, subcommands).

mod file;
mod log;
mod selector;
mod sha256;

pub(crate) use file::{load_file, save_file};
pub(crate) use log::{AclLog, Context, LogEntry, Reason};
pub(crate) use selector::{Denied, Line};

use bytes::Bytes;
use selector::{Selector, ALLCHANNELS, ROOT};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

/// One command or subcommand as ACL rules name it.
#[derive(Debug)]
pub(crate) struct CatalogEntry {
    /// Its id (below 1023).
    pub(crate) id: u32,
    /// Its full name, lowercase (`config|get`).
    pub(crate) fullname: String,
    /// Its ACL categories ([`crate::command_acl::CATEGORIES`] bits).
    pub(crate) categories: u32,
    /// Its subcommands (indexes into [`Catalog::entries`]).
    pub(crate) subs: Vec<usize>,
    /// Whether it is a subcommand.
    pub(crate) is_sub: bool,
}

/// Every command and subcommand, for rules (`+@read`, `-config|set`) and descriptions.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Every entry: each command followed by its subcommands.
    pub(crate) entries: Vec<CatalogEntry>,
    /// The top-level commands (indexes into `entries`), in table order.
    pub(crate) top: Vec<usize>,
    /// Full name to index.
    by_name: HashMap<String, usize>,
    /// Command id to index.
    by_id: HashMap<u32, usize>,
}

impl Catalog {
    /// Adds a top-level command and its subcommands ((id, full name, categories) each).
    pub(crate) fn add(&mut self, command: (u32, &str, u32), subs: &[(u32, String, u32)]) {
        let index = self.entries.len();
        let sub_indexes = (index + 1..index + 1 + subs.len()).collect();
        self.entries.push(CatalogEntry {
            id: command.0,
            fullname: command.1.to_string(),
            categories: command.2,
            subs: sub_indexes,
            is_sub: false,
        });
        self.by_name.insert(command.1.to_string(), index);
        self.by_id.insert(command.0, index);
        self.top.push(index);
        for (id, name, categories) in subs {
            self.by_name.insert(name.clone(), self.entries.len());
            self.by_id.insert(*id, self.entries.len());
            self.entries.push(CatalogEntry {
                id: *id,
                fullname: name.clone(),
                categories: *categories,
                subs: Vec::new(),
                is_sub: true,
            });
        }
    }

    /// The full name of the command with id `id`.
    pub(crate) fn name_of(&self, id: u32) -> Option<&str> {
        let index = self.by_id.get(&id)?;
        self.entries.get(*index).map(|e| e.fullname.as_str())
    }

    /// The entry named `name` (any case; `container|sub` for a subcommand).
    pub(crate) fn find(&self, name: &[u8]) -> Option<usize> {
        let lower = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.by_name.get(&lower).copied()
    }
}

/// Why a rule was refused (Redis's `errno` values and `ACLSetUserStringError` texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetError {
    /// `EINVAL`.
    Syntax,
    /// `ENOENT`.
    Unknown,
    /// `EEXIST`.
    KeyAfterAll,
    /// `EISDIR`.
    ChannelAfterAll,
    /// `ENODEV`.
    NoSuchPassword,
    /// `EBADMSG`.
    BadHash,
    /// `ECHILD`.
    FirstArgOfSubcommand,
}

impl SetError {
    /// Redis's text.
    pub(crate) fn message(self) -> &'static str {
        match self {
            SetError::Syntax => "Syntax error",
            SetError::Unknown => "Unknown command or category name in ACL",
            SetError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            SetError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list \
                 of channels"
            }
            SetError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            SetError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            SetError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// User flags, in the order Redis describes them (`ACLUserFlags`).
const ENABLED: u8 = 1;
const DISABLED: u8 = 1 << 1;
const NOPASS: u8 = 1 << 2;
const SKIP_SANITIZE: u8 = 1 << 3;
const SANITIZE: u8 = 1 << 4;
const FLAG_NAMES: [(u8, &str); 5] = [
    (ENABLED, "on"),
    (DISABLED, "off"),
    (NOPASS, "nopass"),
    (SKIP_SANITIZE, "skip-sanitize-payload"),
    (SANITIZE, "sanitize-payload"),
];

/// A user's rules: flags, password hashes, selectors (the root one first).
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    flags: u8,
    passwords: Vec<String>,
    selectors: Vec<Selector>,
}

impl Rules {
    /// A new user's rules: disabled, no password, a root selector allowing nothing (and every
    /// channel if `acl-pubsub-default` is `allchannels`).
    fn new(all_channels: bool) -> Self {
        Rules {
            flags: DISABLED,
            passwords: Vec::new(),
            selectors: vec![Selector::new(ROOT, all_channels)],
        }
    }

    fn root(&mut self) -> &mut Selector {
        if self.selectors.is_empty() {
            self.selectors.push(Selector::new(ROOT, false));
        }
        // Just ensured there is one.
        &mut self.selectors[0]
    }

    /// Applies one rule (Redis's `ACLSetUser`).
    fn apply(&mut self, catalog: &Catalog, op: &[u8], all_channels: bool) -> Result<(), SetError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if op.is_empty() {
            return Ok(());
        }
        if is("on") {
            self.flags = (self.flags | ENABLED) & !DISABLED;
        } else if is("off") {
            self.flags = (self.flags | DISABLED) & !ENABLED;
        } else if is("skip-sanitize-payload") {
            self.flags = (self.flags | SKIP_SANITIZE) & !SANITIZE;
        } else if is("sanitize-payload") {
            self.flags = (self.flags | SANITIZE) & !SKIP_SANITIZE;
        } else if is("nopass") {
            self.flags |= NOPASS;
            self.passwords.clear();
        } else if is("resetpass") {
            self.flags &= !NOPASS;
            self.passwords.clear();
        } else if let Some(&first @ (b'>' | b'#')) = op.first() {
            let rest = op.get(1..).unwrap_or_default();
            let hash = if first == b'>' {
                sha256::hex(rest)
            } else {
                valid_hash(rest)?
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.flags &= !NOPASS;
        } else if let Some(&first @ (b'<' | b'!')) = op.first() {
            let rest = op.get(1..).unwrap_or_default();
            let hash = if first == b'<' {
                sha256::hex(rest)
            } else {
                valid_hash(rest)?
            };
            let at = self
                .passwords
                .iter()
                .position(|p| *p == hash)
                .ok_or(SetError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op.first() == Some(&b'(') && op.last() == Some(&b')') {
            let mut selector = Selector::new(0, all_channels);
            let inner = op.get(1..op.len() - 1).unwrap_or_default();
            for part in split_args(inner).ok_or(SetError::Syntax)? {
                selector.apply(catalog, &part)?;
            }
            self.selectors.push(selector);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            for rule in ["resetpass", "resetkeys", "resetchannels"] {
                self.apply(catalog, rule.as_bytes(), all_channels)?;
            }
            if all_channels {
                self.apply(catalog, b"allchannels", all_channels)?;
            }
            for rule in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                self.apply(catalog, rule.as_bytes(), all_channels)?;
            }
        } else {
            self.root().apply(catalog, op)?;
        }
        Ok(())
    }

    /// The user as rules (`ACLDescribeUser`), as `ACL LIST` shows it after `user <name> `.
    pub(crate) fn describe(&self, catalog: &Catalog) -> String {
        let mut out = String::new();
        for (flag, name) in FLAG_NAMES {
            if self.flags & flag != 0 {
                out.push_str(name);
                out.push(' ');
            }
        }
        for p in &self.passwords {
            out.push('#');
            out.push_str(p);
            out.push(' ');
        }
        for (i, s) in self.selectors.iter().enumerate() {
            if i == 0 {
                out.push_str(&s.describe(catalog));
            } else {
                out.push_str(" (");
                out.push_str(&s.describe(catalog));
                out.push(')');
            }
        }
        out
    }

    /// `ACL GETUSER`'s flags.
    pub(crate) fn flag_names(&self) -> Vec<&'static str> {
        FLAG_NAMES
            .iter()
            .filter(|(f, _)| self.flags & f != 0)
            .map(|(_, n)| *n)
            .collect()
    }

    /// The password hashes.
    pub(crate) fn passwords(&self) -> &[String] {
        &self.passwords
    }

    /// For each selector (the root first): its commands, keys and channels as `ACL GETUSER`
    /// shows them.
    pub(crate) fn selector_descriptions(&self, catalog: &Catalog) -> Vec<[String; 3]> {
        self.selectors
            .iter()
            .map(|s| {
                [
                    s.describe_commands(catalog),
                    s.describe_keys(),
                    s.describe_channels(),
                ]
            })
            .collect()
    }

    /// `nopass`: any password authenticates.
    pub(crate) fn nopass(&self) -> bool {
        self.flags & NOPASS != 0
    }

    fn enabled(&self) -> bool {
        self.flags & DISABLED == 0 && self.flags & ENABLED != 0
    }

    /// Whether every channel any selector allows, literally, is among `other`'s patterns
    /// (Redis's `ACLKillPubsubClientsIfNeeded`'s superset test); `None` when some selector
    /// allows every channel.
    fn all_channel_patterns(&self) -> Option<Vec<Bytes>> {
        let mut out = Vec::new();
        for s in &self.selectors {
            if s.flags & ALLCHANNELS != 0 {
                return None;
            }
            out.extend(s.channels.iter().cloned());
        }
        Some(out)
    }
}

/// A `#hash` rule's hash: 64 lowercase hex characters.
fn valid_hash(hash: &[u8]) -> Result<String, SetError> {
    if hash.len() == 64 && hash.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(String::from_utf8_lossy(hash).into_owned())
    } else {
        Err(SetError::BadHash)
    }
}

/// Redis's `sdssplitargs` for a selector's inside: words separated by spaces, with double and
/// single quotes; `None` for unbalanced quotes.
fn split_args(s: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while s.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        if i >= s.len() {
            return Some(out);
        }
        let mut word = Vec::new();
        let mut quote = None;
        while let Some(&c) = s.get(i) {
            match quote {
                Some(q) if c == q => {
                    quote = None;
                    i += 1;
                    // A closing quote must be followed by a space or the end.
                    if s.get(i).is_some_and(|c| !c.is_ascii_whitespace()) {
                        return None;
                    }
                    break;
                }
                Some(_) => word.push(c),
                None if c.is_ascii_whitespace() => break,
                None if c == b'"' || c == b'\'' => quote = Some(c),
                None => word.push(c),
            }
            i += 1;
        }
        if quote.is_some() {
            return None;
        }
        out.push(word);
    }
}

/// A user. Its rules change in place (every client authenticated as it sees them).
#[derive(Debug)]
pub(crate) struct User {
    name: Bytes,
    rules: RwLock<Rules>,
    /// The fast path: the root selector allows every command, key and channel.
    unrestricted: AtomicBool,
    /// Enabled and `nopass`: clients of the default user need not authenticate.
    open: AtomicBool,
}

impl User {
    fn new(name: Bytes, rules: Rules) -> Arc<User> {
        let user = User {
            name,
            rules: RwLock::new(Rules::new(false)),
            unrestricted: AtomicBool::new(false),
            open: AtomicBool::new(false),
        };
        user.replace(rules);
        Arc::new(user)
    }

    /// The user's name.
    pub(crate) fn name(&self) -> &Bytes {
        &self.name
    }

    /// A read view of the rules.
    pub(crate) fn rules(&self) -> RwLockReadGuard<'_, Rules> {
        match self.rules.read() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn replace(&self, rules: Rules) {
        let unrestricted = rules.selectors.first().is_some_and(Selector::unrestricted);
        let open = rules.enabled() && rules.flags & NOPASS != 0;
        match self.rules.write() {
            Ok(mut r) => *r = rules,
            Err(poisoned) => *poisoned.into_inner() = rules,
        }
        self.unrestricted.store(unrestricted, Ordering::Release);
        self.open.store(open, Ordering::Release);
    }

    /// Whether the user may run every command on every key and channel (no check needed).
    pub(crate) fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Acquire)
    }

    /// Redis's `ACLCheckAllUserCommandPerm`: allowed if any selector allows the line;
    /// otherwise the most relevant refusal.
    pub(crate) fn check(&self, line: &Line<'_>) -> Result<(), Denied> {
        if self.unrestricted() {
            return Ok(());
        }
        let rules = self.rules();
        let mut keys = selector::KeyCache::default();
        let mut relevant = Denied::Command;
        for s in &rules.selectors {
            match s.check(line, &mut keys) {
                Ok(()) => return Ok(()),
                Err(denied) => relevant = selector::more_relevant(relevant, denied),
            }
        }
        Err(relevant)
    }

    /// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess` for reads: some selector allows the
    /// line and can read every key (`SORT ... BY/GET`).
    pub(crate) fn may_read_any_key(&self, line: &Line<'_>) -> bool {
        if self.unrestricted() {
            return true;
        }
        let rules = self.rules();
        let mut keys = selector::KeyCache::default();
        rules
            .selectors
            .iter()
            .any(|s| s.check(line, &mut keys).is_ok() && s.reads_every_key())
    }

    /// Redis's `ACLCheckUserCredentials`.
    fn credentials_ok(&self, password: &[u8]) -> bool {
        let rules = self.rules();
        if !rules.enabled() {
            return false;
        }
        if rules.flags & NOPASS != 0 {
            return true;
        }
        let hashed = sha256::hex(password);
        // Compared without an early exit, as Redis's `time_independent_strcmp`.
        rules.passwords.iter().fold(false, |found, p| {
            let diff = p
                .bytes()
                .zip(hashed.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            found | (diff == 0 && p.len() == hashed.len())
        })
    }
}

/// What changed for whom after a rule change that must disconnect clients.
#[derive(Debug, Default)]
pub(crate) struct Fallout {
    /// A user whose channel permissions shrank: its pub/sub clients subscribed to a channel
    /// or pattern no longer in `allowed` (`None`: every channel) are disconnected.
    pub(crate) channels_revoked: Option<(Arc<User>, Vec<Bytes>)>,
}

/// The node's ACLs: users by name and the ACL log.
#[derive(Debug)]
pub(crate) struct Acl {
    users: RwLock<BTreeMap<Bytes, Arc<User>>>,
    default: Arc<User>,
    /// The ACL log.
    pub(crate) log: Mutex<AclLog>,
}

impl Default for Acl {
    fn default() -> Self {
        Acl::new()
    }
}

/// The default user's rules at start (`ACLCreateDefaultUser`): `on nopass ~* &* +@all`.
fn default_rules() -> Rules {
    let mut rules = Rules::new(false);
    rules.flags = ENABLED | NOPASS;
    if let Some(root) = rules.selectors.first_mut() {
        let catalog = Catalog::default();
        for op in ["+@all", "~*", "&*"] {
            let _ = root.apply(&catalog, op.as_bytes());
        }
    }
    rules
}

impl Acl {
    /// ACLs with only the default user.
    pub(crate) fn new() -> Self {
        let default = User::new(Bytes::from_static(b"default"), default_rules());
        let mut users = BTreeMap::new();
        users.insert(default.name.clone(), default.clone());
        Acl {
            users: RwLock::new(users),
            default,
            log: Mutex::new(AclLog::default()),
        }
    }

    fn users(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Bytes, Arc<User>>> {
        match self.users.read() {
            Ok(u) => u,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn users_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<Bytes, Arc<User>>> {
        match self.users.write() {
            Ok(u) => u,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The default user.
    pub(crate) fn default_user(&self) -> &Arc<User> {
        &self.default
    }

    /// Redis's `authRequired` for a client that did not authenticate: the default user has
    /// a password or is off.
    pub(crate) fn requires_auth(&self) -> bool {
        !self.default.open.load(Ordering::Acquire)
    }

    /// The user named `name`.
    pub(crate) fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users().get(name).cloned()
    }

    /// Every user, by name.
    pub(crate) fn all(&self) -> Vec<Arc<User>> {
        self.users().values().cloned().collect()
    }

    /// The user if `name`/`password` authenticate (Redis's `ACLCheckUserCredentials`).
    pub(crate) fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        let user = self.user(name)?;
        user.credentials_ok(password).then_some(user)
    }

    /// `requirepass`: the default user's only password, or `nopass` when empty
    /// (`ACLUpdateDefaultUserPassword`).
    pub(crate) fn set_default_password(&self, password: Option<&[u8]>) {
        // Password rules name no command: an empty catalog does.
        let catalog = &Catalog::default();
        let mut rules = self.default.rules().clone();
        let _ = rules.apply(catalog, b"resetpass", false);
        let _ = match password {
            Some(p) => {
                let mut op = b">".to_vec();
                op.extend_from_slice(p);
                rules.apply(catalog, &op, false)
            }
            None => rules.apply(catalog, b"nopass", false),
        };
        self.default.replace(rules);
    }

    /// `ACL SETUSER name rules...` (Redis's `ACLStringSetUser`): selectors spread over
    /// several arguments are joined, every rule is applied to a copy, and only if all apply
    /// does the user (created if new) get them. `all_channels` is `acl-pubsub-default`.
    ///
    /// # Errors
    ///
    /// Redis's error text (without the `ERR ` prefix).
    pub(crate) fn set_user(
        &self,
        catalog: &Catalog,
        name: &[u8],
        ops: &[Bytes],
        all_channels: bool,
    ) -> Result<Fallout, String> {
        let merged = merge_selectors(ops).map_err(|at| {
            format!(
                "Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(ops.get(at).map_or(&[][..], |o| &o[..]))
            )
        })?;
        let existing = self.user(name);
        let mut rules = match &existing {
            Some(user) => user.rules().clone(),
            None => Rules::new(all_channels),
        };
        for op in &merged {
            rules.apply(catalog, op, all_channels).map_err(|e| {
                format!(
                    "Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.message()
                )
            })?;
        }
        let mut fallout = Fallout::default();
        match existing {
            Some(user) => {
                if let Some(allowed) = rules.all_channel_patterns() {
                    let before = user.rules().all_channel_patterns();
                    let superset = match before {
                        None => false,
                        Some(old) => old.iter().all(|c| allowed.contains(c)),
                    };
                    if !superset {
                        fallout.channels_revoked = Some((user.clone(), allowed));
                    }
                }
                user.replace(rules);
            }
            None => {
                let user = User::new(Bytes::copy_from_slice(name), rules);
                self.users_mut().insert(user.name.clone(), user);
            }
        }
        Ok(fallout)
    }

    /// `ACL DELUSER`: removes the named users (not `default`); returns the removed ones.
    pub(crate) fn delete(&self, names: &[Bytes]) -> Vec<Arc<User>> {
        let mut users = self.users_mut();
        names
            .iter()
            .filter(|n| n[..] != b"default"[..])
            .filter_map(|n| users.remove(n))
            .collect()
    }

    /// Replaces every user with `loaded` (`ACL LOAD`): the default user keeps its identity
    /// and takes the loaded rules (or the start-up ones if the file has none); every other
    /// old user is removed and returned.
    pub(crate) fn replace_all(&self, loaded: Vec<(Bytes, Rules)>) -> Vec<Arc<User>> {
        let mut users = self.users_mut();
        let old = std::mem::take(&mut *users);
        let mut default_rules_loaded = None;
        for (name, rules) in loaded {
            if name[..] == b"default"[..] {
                default_rules_loaded = Some(rules);
            } else {
                users.insert(name.clone(), User::new(name, rules));
            }
        }
        self.default
            .replace(default_rules_loaded.unwrap_or_else(default_rules));
        users.insert(self.default.name.clone(), self.default.clone());
        old.into_values()
            .filter(|u| !Arc::ptr_eq(u, &self.default))
            .collect()
    }
}

/// Redis's `ACLMergeSelectorArguments`: a selector spread over several arguments (`(~a`,
/// `+get)`) becomes one; `Err(index)` of an unmatched opening parenthesis.
fn merge_selectors(ops: &[Bytes]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, op) in ops.iter().enumerate() {
        if let Some((_, selector)) = open.as_mut() {
            selector.push(b' ');
            selector.extend_from_slice(op);
            if op.last() == Some(&b')') {
                if let Some((_, selector)) = open.take() {
                    out.push(selector);
                }
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((j, op.to_vec()));
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((at, _)) => Err(at),
        None => Ok(out),
    }
}

/// Whether `channel` (a pattern if `is_pattern`, compared literally) is among the channel
/// patterns `allowed` (Redis's `ACLCheckChannelAgainstList`).
pub(crate) fn channel_in(allowed: &[Bytes], channel: &[u8], is_pattern: bool) -> bool {
    selector::channel_allowed(allowed, channel, is_pattern)
}

/// Whether a username is acceptable (no spaces or NUL).
pub(crate) fn valid_username(name: &[u8]) -> bool {
    !selector::has_spaces(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        let read = crate::command_acl::category_bit(b"read").unwrap_or(0);
        let write = crate::command_acl::category_bit(b"write").unwrap_or(0);
        c.add((0, "get", read), &[]);
        c.add((1, "set", write), &[]);
        c.add(
            (2, "config", 0),
            &[
                (3, "config|get".into(), read),
                (4, "config|set".into(), write),
            ],
        );
        c
    }

    fn ops(list: &[&str]) -> Vec<Bytes> {
        list.iter().map(|s| Bytes::from(s.to_string())).collect()
    }

    #[test]
    fn default_user_is_unrestricted_and_open() {
        let acl = Acl::new();
        assert!(acl.default_user().unrestricted());
        assert!(!acl.requires_auth());
        let c = catalog();
        acl.set_default_password(Some(b"pw"));
        assert!(acl.requires_auth());
        assert!(acl.authenticate(b"default", b"pw").is_some());
        assert!(acl.authenticate(b"default", b"no").is_none());
        assert_eq!(
            acl.default_user().rules().describe(&c),
            format!("on #{} ~* &* +@all", sha256::hex(b"pw"))
        );
    }

    #[test]
    fn rules_apply_atomically_and_describe_back() {
        let acl = Acl::new();
        let c = catalog();
        assert!(acl
            .set_user(&c, b"u", &ops(&["on", "nopass", "+get", "bogus"]), false)
            .is_err());
        assert!(acl.user(b"u").is_none());
        acl.set_user(
            &c,
            b"u",
            &ops(&["on", "nopass", "-@all", "+@read", "~k*"]),
            false,
        )
        .map(|_| ())
        .unwrap_or_default();
        let user = acl.user(b"u");
        let described = user.map(|u| u.rules().describe(&c)).unwrap_or_default();
        assert_eq!(described, "on nopass ~k* resetchannels -@all +@read");
        let err = acl
            .set_user(&c, b"u", &ops(&["(~a", "+get"]), false)
            .err()
            .unwrap_or_default();
        assert_eq!(
            err,
            "Unmatched parenthesis in acl selector starting at '(~a'."
        );
    }

    #[test]
    fn selectors_split_like_sdssplitargs() {
        assert_eq!(
            split_args(b" ~a  \"+get\" "),
            Some(vec![b"~a".to_vec(), b"+get".to_vec()])
        );
        assert_eq!(split_args(b"\"open"), None);
    }
}
