//! `MODULE LIST|LOAD|LOADEX|UNLOAD|HELP`. This server has no module API (Redis modules are
//! shared objects written against redis-server's C API), so no module is ever loaded: LIST is
//! empty, and LOAD/LOADEX fail as Redis's do when the library cannot be loaded, with the reason
//! in the server's log. LOAD, LOADEX and UNLOAD are protected by `enable-module-command`.

use super::client::help_lines;
use super::{flags::*, Args, CmdResult, CommandError, CommandSpec, Ctx};
use locksmith_resp::Frame;

/// `MODULE` and its subcommands.
pub(crate) static COMMANDS: &[CommandSpec] = &[CommandSpec::new("module", -2, module_container)
    .doc("server", "A container for module commands")
    .since("4.0.0", "Depends on subcommand.")
    .subs(MODULE_SUBCOMMANDS)];

/// In Redis's `COMMAND INFO` order.
static MODULE_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("help", 2, module_help)
        .flags(LOADING | STALE)
        .doc(
            "server",
            "Show helpful text about the different subcommands",
        )
        .since("5.0.0", "O(1)"),
    CommandSpec::new("list", 2, module_list)
        .flags(ADMIN | NOSCRIPT)
        .tips(&["nondeterministic_output_order"])
        .doc("server", "List all modules loaded by the server")
        .since("4.0.0", "O(N) where N is the number of loaded modules."),
    CommandSpec::new("loadex", -3, module_load)
        .flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING | PROTECTED_MODULE)
        .doc("server", "Load a module with extended parameters")
        .since("7.0.0", "O(1)"),
    CommandSpec::new("load", -3, module_load)
        .flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING | PROTECTED_MODULE)
        .doc("server", "Load a module")
        .since("4.0.0", "O(1)"),
    CommandSpec::new("unload", 3, module_unload)
        .flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING | PROTECTED_MODULE)
        .doc("server", "Unload a module")
        .since("4.0.0", "O(1)"),
];

/// Reached only for a bare `MODULE` (the table resolves subcommands and answers unknown ones).
fn module_container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::WrongArity("module".into()))
}

/// ```text
/// MODULE LIST
/// ```
fn module_list(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Array(Vec::new()))
}

/// ```text
/// MODULE LOAD path [arg ...]
/// MODULE LOADEX path [CONFIG name value ...] [ARGS arg ...]
/// ```
fn module_load(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let path = args.bytes()?;
    tracing::warn!(
        path = %String::from_utf8_lossy(path),
        "Module failed to load: this server has no module API"
    );
    Err(CommandError::err(
        "Error loading the extension. Please check the server logs.",
    ))
}

/// ```text
/// MODULE UNLOAD name
/// ```
fn module_unload(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Err(CommandError::err(
        "Error unloading module: no such module with that name",
    ))
}

/// ```text
/// MODULE HELP
/// ```
fn module_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_lines(
        "MODULE",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    ))
}
