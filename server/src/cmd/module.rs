//! `MODULE LIST|LOAD|LOADEX|UNLOAD|HELP`. This server has no module API (Redis modules are
//! shared objects written against redis-server's C API), so no module is ever loaded: LIST is
//! empty, and LOAD/LOADEX fail as Redis's do when the library cannot be loaded, with the reason
//! in the server's log. LOAD, LOADEX and UNLOAD are protected by `enable-module-command`.

use super::client::help_reply;
use super::{flags::*, Args, CmdResult, Command, CommandError, Ctx};
use locksmith_resp::Frame;

/// `MODULE` and its subcommands.
pub(crate) static COMMANDS: &[Command] =
    &[Command::new("module", module_container).subs(MODULE_SUBCOMMANDS)];

/// In Redis's `COMMAND INFO` order.
static MODULE_SUBCOMMANDS: &[Command] = &[
    Command::new("help", module_help),
    Command::new("list", module_list),
    Command::new("loadex", module_load).extra_flags(PROTECTED_MODULE),
    Command::new("load", module_load).extra_flags(PROTECTED_MODULE),
    Command::new("unload", module_unload).extra_flags(PROTECTED_MODULE),
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
fn module_help(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(help_reply(ctx, "MODULE"))
}
