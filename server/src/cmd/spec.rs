//! What a command family declares ([`Command`]: a name, its handler, its subcommands, and the
//! few facts of ours its description lacks) and what the table builds of it
//! ([`CommandSpec`]: the command's description, read from the table's source, with the
//! handler).

use super::{Args, CmdResult, Ctx};
use crate::command_meta::CommandMeta;
use crate::node::Node;
use crate::redis_table::Described;
use bytes::Bytes;
use locksmith_resp::Frame;
use std::collections::HashMap;

/// A command handler.
pub(crate) type Handler = fn(&mut Ctx<'_>, &mut Args<'_>) -> CmdResult;

/// What an `allow_busy` command does without the state lock while a script is busy
/// (`SCRIPT KILL`): it gets the node and the command line.
pub(crate) type BusyHandler = fn(&Node, &[Bytes]) -> Frame;

/// One entry of a family's table: a command the server runs, by the name its description
/// has in the table's source ([`crate::redis_table`]), which gives everything else (arity,
/// flags, keys, ACL categories, documentation).
#[derive(Debug)]
pub(crate) struct Command {
    /// Lowercase name (a subcommand's without its container).
    pub(crate) name: &'static str,
    /// The handler (for a container, runs when no subcommand is given or matched).
    pub(crate) handler: Handler,
    /// Subcommands (`CONFIG GET`…); empty for plain commands.
    pub(crate) subcommands: &'static [Command],
    /// Run instead of `handler`, without the state lock, while a script is busy.
    pub(crate) busy_handler: Option<BusyHandler>,
    /// Flags of ours that no `COMMAND INFO` shows: [`crate::flags::RUNS_SCRIPT`],
    /// [`crate::flags::PROTECTED`], [`crate::flags::PROTECTED_MODULE`], and
    /// [`crate::flags::MAY_REPLICATE`] (which Redis hides there).
    pub(crate) extra_flags: u32,
}

impl Command {
    /// The command `name`, run by `handler`.
    pub(crate) const fn new(name: &'static str, handler: Handler) -> Self {
        Command {
            name,
            handler,
            subcommands: &[],
            busy_handler: None,
            extra_flags: 0,
        }
    }

    /// Sets the subcommands.
    pub(crate) const fn subs(mut self, subs: &'static [Command]) -> Self {
        self.subcommands = subs;
        self
    }

    /// Sets the handler used while a script is busy (`allow_busy` commands).
    pub(crate) const fn busy(mut self, handler: BusyHandler) -> Self {
        self.busy_handler = Some(handler);
        self
    }

    /// Adds flags of ours (see [`Command::extra_flags`]).
    pub(crate) const fn extra_flags(mut self, flags: u32) -> Self {
        self.extra_flags |= flags;
        self
    }
}

/// One entry of the command table: the command's description ([`CommandMeta`], which
/// `CommandSpec` derefs to) and how it runs.
#[derive(Debug)]
pub(crate) struct CommandSpec {
    /// Name, arity, flags, keys, categories, the description itself.
    pub(crate) meta: CommandMeta,
    /// The handler (for a container, runs when no subcommand is given or matched).
    pub(crate) handler: Handler,
    /// Subcommands (`CONFIG GET`…) the source describes; empty for plain commands.
    pub(crate) subcommands: &'static [CommandSpec],
    /// Run instead of `handler`, without the state lock, while a script is busy.
    pub(crate) busy_handler: Option<BusyHandler>,
}

impl std::ops::Deref for CommandSpec {
    type Target = CommandMeta;

    fn deref(&self) -> &CommandMeta {
        &self.meta
    }
}

impl CommandSpec {
    /// `command` (a subcommand of `container`) as `source` describes it, with its described
    /// subcommands; `None` when the source does not describe it (the server then does not
    /// have it). The subcommands live as long as the process, as the table does.
    pub(crate) fn build(
        command: &'static Command,
        container: Option<&str>,
        source: &'static HashMap<String, Described>,
    ) -> Option<CommandSpec> {
        let full = match container {
            Some(container) => format!("{container}|{}", command.name),
            None => command.name.to_string(),
        };
        let described = source.get(&full)?;
        let meta = CommandMeta::describe(command.name, described, command.extra_flags)?;
        let subcommands: Vec<CommandSpec> = command
            .subcommands
            .iter()
            .filter_map(|sub| CommandSpec::build(sub, Some(command.name), source))
            .collect();
        Some(CommandSpec {
            meta,
            handler: command.handler,
            subcommands: Box::leak(subcommands.into_boxed_slice()),
            busy_handler: command.busy_handler,
        })
    }
}
