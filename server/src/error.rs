//! Command errors. Each becomes an error reply whose text matches Redis byte for byte (the
//! first word is the error code clients classify by); the connection carries on.

use locksmith_resp::Frame;

/// Why a command failed. `Display` is the exact reply line without the leading `-`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// Arity check failed; holds the lowercase command name (`config|get` for subcommands).
    #[error("ERR wrong number of arguments for '{0}' command")]
    WrongArity(String),
    /// No such command.
    #[error("ERR unknown command '{name}', with args beginning with: {args}")]
    UnknownCommand {
        /// The name as sent (at most 128 bytes).
        name: String,
        /// `'a' 'b' ` as Redis formats them.
        args: String,
    },
    /// A container command without that subcommand.
    #[error("ERR unknown subcommand '{sub}'. Try {container} HELP.")]
    UnknownSubcommand {
        /// Uppercase container name.
        container: String,
        /// The subcommand as sent (at most 128 bytes).
        sub: String,
    },
    /// Key holds another type.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// Bad option combination.
    #[error("ERR syntax error")]
    Syntax,
    /// Argument or stored value is not an i64.
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    /// Argument or stored value is not a float.
    #[error("ERR value is not a valid float")]
    NotFloat,
    /// INCR family overflow.
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    /// Key must exist (RENAME, LSET…).
    #[error("ERR no such key")]
    NoSuchKey,
    /// `requirepass` is set and the client has not authenticated.
    #[error("NOAUTH Authentication required.")]
    NoAuth,
    /// Any other error; the text includes its code (`ERR …`, `BUSYKEY …`, `NOSCRIPT …`).
    #[error("{0}")]
    Raw(String),
}

impl CommandError {
    /// An `ERR <msg>` error.
    pub fn err(msg: impl std::fmt::Display) -> Self {
        CommandError::Raw(format!("ERR {msg}"))
    }

    /// The unknown-command error for `argv`, formatted as Redis 7's `processCommand` does.
    pub fn unknown_command(argv: &[bytes::Bytes]) -> Self {
        let name = argv.first().map(|n| lossy(n, 128)).unwrap_or_default();
        let mut args = String::new();
        for arg in argv.iter().skip(1) {
            if args.len() >= 128 {
                break;
            }
            let room = 128 - args.len();
            args.push('\'');
            args.push_str(&lossy(arg, room));
            args.push_str("' ");
        }
        CommandError::UnknownCommand { name, args }
    }

    /// Redis's `addReplySubcommandSyntaxError`: the subcommand in `argv[1]` as sent, then
    /// `Try <container> HELP.`
    pub fn subcommand_syntax(container: &str, argv: &[bytes::Bytes]) -> Self {
        let sub = argv.get(1).map(|s| lossy(s, 128)).unwrap_or_default();
        CommandError::err(format!(
            "unknown subcommand or wrong number of arguments for '{sub}'. Try {container} HELP."
        ))
    }
}

/// Up to `max` bytes of `b` as text (Redis prints `%.128s`).
pub(crate) fn lossy(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(b.get(..max.min(b.len())).unwrap_or(b)).into_owned()
}

impl From<CommandError> for Frame {
    fn from(e: CommandError) -> Frame {
        Frame::error(e.to_string())
    }
}

/// What a command handler returns.
pub(crate) type CmdResult = Result<Frame, CommandError>;
