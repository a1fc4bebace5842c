//! The import rule: the server's modules form layers, and a module may use its own layer and
//! the layers below, never one above. This test reads the sources and fails the build when a
//! module names (`crate::<module>`) a module of a higher layer, when a module is missing from
//! the table (a new module must be placed), or when an allowed exception is no longer needed
//! (so the list only shrinks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module's layer, lowest first.
const LAYERS: &[(&str, &[&str])] = &[
    // Leaves: errors, argument parsing, command descriptions (ours, Redis's, and their ACL
    // facts: categories, key specifications), command flags, clock, geohash math, glob, event
    // classes, the keyed hash, the process's memory and CPU time as the OS reports them, the lazy free
    // thread, the compatibility target's data.
    (
        "leaf",
        &[
            "args",
            "clock",
            "command_acl",
            "command_meta",
            "compat",
            "error",
            "flags",
            "geohash",
            "glob",
            "lazyfree",
            "notify",
            "process_cpu",
            "process_memory",
            "redis_table",
            "siphash",
        ],
    ),
    // Data: the keyspace, configuration, RDB encoding, per-command statistics, the slow log
    // and the latency monitor.
    (
        "data",
        &["cmdstats", "config", "db", "latency", "rdb", "slowlog"],
    ),
    // The node's state, in four layers: node on top; below it the subsystems that work on
    // the locked `State`; below them the per-connection client state and what watches
    // clients; at the bottom the parts that stand alone (ACL users and log, the journal,
    // MIGRATE's outbound connections, the Lua engine).
    ("state-leaf", &["acl", "journal", "outbound", "script"]),
    // Per-connection state and the client registry; monitors and write observers, which
    // hold client handles.
    ("clients", &["client", "monitor", "observe"]),
    // Pub/sub, blocking queues, transactions, replication, cluster view, eviction,
    // client-side caching.
    (
        "subsystems",
        &[
            "blocking",
            "cluster",
            "evict",
            "pubsub",
            "replication",
            "tracking",
            "transaction",
        ],
    ),
    // The node: `Node` (lock-free parts), `State` (everything behind the one lock) and
    // `Effects`, which own every subsystem's state.
    ("node", &["node"]),
    ("commands", &["cmd"]),
    ("pipeline", &["dispatch"]),
    // I/O and the public surface.
    (
        "io",
        &[
            "bin",
            "cli",
            "connection",
            "control",
            "lib",
            "local_client",
            "net_stream",
            "replica_link",
            "server",
            "write_round",
            "layer_tests",
        ],
    ),
];

/// The upward imports still there, each with its reason (the test fails when one is no longer
/// needed, so the list only shrinks). Between the big layers there are none: a served blocked
/// client's command and the replica's copy of its master's stream run as commands through the
/// hooks the commands layer gives the node (`node::CommandHooks`), and everything else a lower
/// layer needs of a command is its description (`command_meta`), a leaf. Inside the state,
/// the subsystems' functions take the node's one locked `State` (and record into its
/// `Effects`) as Redis's subsystems take `server`; the client's state holds the subsystems'
/// per-client parts as Redis's `client` struct does.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "client",
        "blocking",
        "ClientState holds the client's blocking request (Redis's client.bpop), defined with the code that serves it",
    ),
    (
        "client",
        "replication",
        "ClientState holds the replica link SYNC/PSYNC registered, for the connection to run",
    ),
    (
        "client",
        "transaction",
        "ClientState holds the client's MULTI queue (Redis's client.mstate), defined with EXEC's code",
    ),
    (
        "blocking",
        "node",
        "serving blocked clients runs their commands on the locked State and its Effects",
    ),
    (
        "cluster",
        "node",
        "each member of the cluster view holds its running Node, so PUBLISH reaches every node (the cluster bus)",
    ),
    (
        "evict",
        "node",
        "eviction deletes keys of the locked State and records them as Effects (expiry, tracking, replication)",
    ),
    (
        "pubsub",
        "node",
        "publishing reads the subscriptions in the locked State and turns keyspace events into Effects",
    ),
    (
        "replication",
        "node",
        "the master's stream is fed from State::finish_effects, a replica applies its master's stream to its Node",
    ),
    (
        "tracking",
        "node",
        "invalidation runs after each command on the locked State and its Effects, and for keys changed outside commands",
    ),
    (
        "transaction",
        "node",
        "WATCHed keys are checked and invalidated against the locked State (key_is_expired, touch_watched)",
    ),
];

/// The top-level module a source file belongs to.
fn module_of(relative: &Path) -> String {
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.strip_suffix(".rs").unwrap_or(&first).to_string()
}

/// Every `crate::<module>` a source names outside comments.
fn named_modules(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = rest.get(at + "crate::".len()..).unwrap_or_default();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot read {}", dir.display());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.push((module_of(relative), text));
        }
    }
}

/// ARCHITECTURE.md's list of the layers (`- layer: \`module\`, ...` lines, continued on
/// indented lines), as (layer, modules) in its order.
fn documented_layers(text: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut layers: Vec<(String, BTreeSet<String>)> = Vec::new();
    let names = |line: &str| -> Vec<String> {
        line.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut open = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("- ") {
            match rest.split_once(": `") {
                Some((layer, _)) if LAYERS.iter().any(|(l, _)| *l == layer) => {
                    layers.push((layer.to_string(), names(rest).into_iter().collect()));
                    open = true;
                    continue;
                }
                _ => open = false,
            }
        } else if open && line.starts_with("  ") {
            if let Some((_, modules)) = layers.last_mut() {
                modules.extend(names(line));
            }
            continue;
        } else {
            open = false;
        }
    }
    layers
}

/// The workspace's root: the nearest directory above the package's (the server's or
/// `locksmith-server-unit`'s, which compiles the same sources) that holds ARCHITECTURE.md.
fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("ARCHITECTURE.md").is_file())
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

#[test]
fn architecture_md_lists_the_layers_of_this_table() {
    let path = workspace_root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let documented = documented_layers(&text);
    let table: Vec<(String, BTreeSet<String>)> = LAYERS
        .iter()
        .map(|(layer, modules)| {
            (
                layer.to_string(),
                modules.iter().map(|m| m.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        documented, table,
        "ARCHITECTURE.md's layer list (left) differs from layer_tests.rs's LAYERS (right)"
    );
}

#[test]
fn no_module_imports_a_higher_layer() {
    let layer: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, modules))| modules.iter().map(move |m| (*m, i)))
        .collect();
    // This file's directory: `src` of the server package (rustc names it from the workspace's
    // root, also when `locksmith-server-unit` compiles these sources).
    let root = workspace_root()
        .join(file!())
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 50, "found only {} sources", files.len());
    let mut upward = BTreeSet::new();
    let mut unplaced = BTreeSet::new();
    for (module, text) in &files {
        let Some(&from) = layer.get(module.as_str()) else {
            unplaced.insert(module.clone());
            continue;
        };
        for named in named_modules(text) {
            // `crate::parse_memory_size` and the like: items of the crate root.
            let Some(&to) = layer.get(named.as_str()) else {
                continue;
            };
            if to > from {
                upward.insert((module.clone(), named));
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS: {unplaced:?}"
    );
    let allowed: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .map(|(from, to, _)| (from.to_string(), to.to_string()))
        .collect();
    let new: Vec<_> = upward.difference(&allowed).collect();
    assert!(
        new.is_empty(),
        "modules importing a higher layer (move the item down, or invert the dependency): {new:?}"
    );
    let stale: Vec<_> = allowed.difference(&upward).collect();
    assert!(
        stale.is_empty(),
        "exceptions no longer needed, remove them from ALLOWED: {stale:?}"
    );
}

/// The `[dependencies]` and `[features]` of `manifest` (the text from the first to the line
/// before `[lib]` or `[[bin]]`), without comments.
fn dependencies_of(manifest: &str) -> Vec<&str> {
    let start = manifest.find("[dependencies]").unwrap_or(manifest.len());
    manifest[start..]
        .lines()
        .take_while(|line| !line.starts_with("[lib]") && !line.starts_with("[[bin]]"))
        .take_while(|line| !line.starts_with("[dev-dependencies]"))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

#[test]
fn the_unit_test_package_has_the_server_packages_dependencies() {
    let root = workspace_root();
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap_or_default();
    let (server, unit) = (read("server/Cargo.toml"), read("server/unit/Cargo.toml"));
    let ours = dependencies_of(&server);
    assert!(
        ours.len() > 20,
        "server/Cargo.toml's dependencies not found"
    );
    assert_eq!(
        ours,
        dependencies_of(&unit),
        "server/unit/Cargo.toml (right) must compile the server's sources with the server \
         package's dependencies and features (left)"
    );
}
