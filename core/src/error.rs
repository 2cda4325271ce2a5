//! Errors of the log reader and writer. Each renders as one line a person can act on.

use std::io;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum LogError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: io::Error },
    #[error("read error at offset {offset}: {source}")]
    Io { offset: u64, source: io::Error },
    #[error("empty file: not a replay log (0 bytes)")]
    Empty,
    #[error("not a replay log: bad magic at offset 0 (expected \"REPLAY-LOG 1\")")]
    NotALog,
    #[error("log format generation {found} is not supported by this reader (it reads generation 1); use the replay build that wrote it")]
    Generation { found: String },
    #[error("log needs reader version {needed} or newer (this reader is version {ours}); upgrade replay")]
    TooNew { needed: u32, ours: u32 },
    #[error("log format version {found} is too old for this reader (oldest supported: 1)")]
    TooOld { found: u32 },
    #[error("corrupt log at offset {offset}: {why}")]
    Corrupt { offset: u64, why: String },
    #[error("log is cut at offset {offset}: {why}")]
    Truncated { offset: u64, why: String },
}

impl LogError {
    /// The byte offset the error names, if any.
    pub fn offset(&self) -> Option<u64> {
        match self {
            LogError::Io { offset, .. }
            | LogError::Corrupt { offset, .. }
            | LogError::Truncated { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}
