//! The argument cursor handlers read their arguments through.

use super::CommandError;
use bytes::Bytes;

/// Cursor over a command's arguments (after the command and subcommand names).
#[derive(Debug)]
pub(crate) struct Args<'a> {
    argv: &'a [Bytes],
    pos: usize,
}

impl<'a> Args<'a> {
    /// A cursor over `argv` starting at index `pos`.
    pub(crate) fn new(argv: &'a [Bytes], pos: usize) -> Self {
        Args { argv, pos }
    }

    /// The whole command line, name included.
    pub(crate) fn argv(&self) -> &'a [Bytes] {
        self.argv
    }

    /// Arguments not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.argv.len().saturating_sub(self.pos)
    }

    /// Whether every argument was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The rest of the arguments, consumed.
    pub(crate) fn rest(&mut self) -> &'a [Bytes] {
        let rest = self.argv.get(self.pos..).unwrap_or_default();
        self.pos = self.argv.len();
        rest
    }

    /// The next argument, if any.
    pub(crate) fn next(&mut self) -> Option<&'a Bytes> {
        let arg = self.argv.get(self.pos)?;
        self.pos += 1;
        Some(arg)
    }

    /// The next argument without consuming it.
    pub(crate) fn peek(&self) -> Option<&'a Bytes> {
        self.argv.get(self.pos)
    }

    /// The next argument; a missing one is a syntax error.
    pub(crate) fn bytes(&mut self) -> Result<Bytes, CommandError> {
        self.next().cloned().ok_or(CommandError::Syntax)
    }

    /// The next argument as an i64 (Redis's strict `string2ll`).
    pub(crate) fn i64(&mut self) -> Result<i64, CommandError> {
        parse_i64(self.next().ok_or(CommandError::Syntax)?)
    }

    /// Consumes the next argument if it equals `word` ignoring ASCII case.
    pub(crate) fn eat(&mut self, word: &str) -> bool {
        match self.peek() {
            Some(arg) if arg.eq_ignore_ascii_case(word.as_bytes()) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }
}

/// Parses an integer argument as Redis does (`ERR value is not an integer or out of range`).
pub(crate) fn parse_i64(arg: &[u8]) -> Result<i64, CommandError> {
    locksmith_resp::parse_integer(arg).ok_or(CommandError::NotInteger)
}

/// Parses a float as Redis's `string2ld`/`strtold` does: no leading space, no trailing bytes,
/// `inf`/`-inf` allowed, NaN refused.
pub(crate) fn parse_f64(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let value = match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ if lower.contains("inf") || lower.contains("nan") => return None,
        _ => text.parse::<f64>().ok()?,
    };
    (!value.is_nan()).then_some(value)
}
