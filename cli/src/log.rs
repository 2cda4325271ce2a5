//! What every reading subcommand shares: opening a log, telling how it ended, the exit
//! codes, output that survives a closed pipe. Events in order (with their checks) come from
//! the core's `Ordered`.

use replay_core::Ordered;
use replay_core::{End, LogError, LogReader};
use std::io::{self, Write};
use std::path::Path;

/// Exit codes (documented in `replay --help` and docs/cli.md).
pub const EXIT_OK: u8 = 0;
/// The log is cut or corrupt (or, for `diff`, the recordings differ).
pub const EXIT_PROBLEM: u8 = 1;
/// The log cannot be read at all: missing, not a log, unsupported version, no whole header.
pub const EXIT_UNREADABLE: u8 = 3;
/// An output file or stdout could not be written (a closed pipe is not an error).
pub const EXIT_OUTPUT: u8 = 4;

/// Why a command stops early. `msg` is printed as `replay: <msg>`; `None` stops silently
/// (stdout was closed by the reader, as in `replay dump x | head`).
#[derive(Debug)]
pub struct Fail {
    pub code: u8,
    pub msg: Option<String>,
}

impl Fail {
    pub fn new(code: u8, msg: impl Into<String>) -> Fail {
        Fail {
            code,
            msg: Some(msg.into()),
        }
    }

    /// A write to the command's output failed. A closed pipe ends the command quietly with
    /// success: the reader has what it asked for.
    pub fn output(what: &str, e: io::Error) -> Fail {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Fail {
                code: EXIT_OK,
                msg: None,
            }
        } else {
            Fail::new(EXIT_OUTPUT, format!("{what}: cannot write: {e}"))
        }
    }
}

pub type Res<T> = Result<T, Fail>;

/// Buffered stdout whose errors become [`Fail`]s.
pub fn stdout() -> io::BufWriter<io::StdoutLock<'static>> {
    io::BufWriter::with_capacity(1 << 16, io::stdout().lock())
}

pub trait WriteExt: Write {
    /// `writeln!` with the error turned into a [`Fail`] for stdout.
    fn line(&mut self, args: std::fmt::Arguments<'_>) -> Res<()> {
        self.write_fmt(args)
            .and_then(|_| self.write_all(b"\n"))
            .map_err(|e| Fail::output("stdout", e))
    }

    fn done(&mut self) -> Res<()> {
        self.flush().map_err(|e| Fail::output("stdout", e))
    }
}

impl<W: Write> WriteExt for W {}

/// Writes one formatted line to a writer, returning a [`Fail`] on error.
#[macro_export]
macro_rules! outln {
    ($w:expr, $($arg:tt)*) => { $crate::log::WriteExt::line(&mut $w, format_args!($($arg)*)) };
}

/// Opens a log and reads its header. Failing here is exit 3: there is nothing to show.
pub fn open(path: &Path) -> Res<LogReader> {
    let one;
    let path = if path.is_dir() {
        one = process_log(path)?;
        one.as_path()
    } else {
        path
    };
    LogReader::open(path).map_err(|e| {
        Fail::new(
            EXIT_UNREADABLE,
            format!("{}: {}", path.display(), open_reason(&e)),
        )
    })
}

/// The one process log of recording directory `dir` (a recording of one program, as most
/// are); a recording of several processes names them in the error, since each is a log of
/// its own.
fn process_log(dir: &Path) -> Res<std::path::PathBuf> {
    let unreadable = |why: String| Fail::new(EXIT_UNREADABLE, format!("{}: {why}", dir.display()));
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(format!("cannot open: {e}")))?;
    let mut logs: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| replay_core::tree::parse_name(n).is_some())
        .collect();
    logs.sort();
    match logs.len() {
        1 => Ok(dir.join(&logs[0])),
        0 => Err(unreadable(
            "a directory without process logs; give a log file".to_string(),
        )),
        n => Err(unreadable(format!(
            "a recording of {n} processes; give one of its logs: {} (see `replay info {}`)",
            logs.join(", "),
            dir.display()
        ))),
    }
}

fn open_reason(e: &LogError) -> String {
    match e {
        // The path is already at the front of the line.
        LogError::Open { source, .. } => format!("cannot open: {source}"),
        e => e.to_string(),
    }
}

/// How reading a log ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Complete {
        trailer_events: u64,
        chunks: u64,
    },
    /// No trailer, or the last frame is incomplete: the recorder did not close the log.
    Cut {
        offset: u64,
        why: String,
    },
    /// A frame failed its checks (or a read failed); nothing after it was read.
    Corrupt {
        offset: u64,
        why: String,
    },
}

impl Status {
    /// From a reader that returned `Ok(None)` or an error.
    pub fn of<R: io::Read>(reader: &LogReader<R>, error: Option<&LogError>) -> Status {
        if let Some(e) = error {
            let (offset, why) = match e {
                LogError::Corrupt { offset, why } => (*offset, why.clone()),
                LogError::Truncated { offset, why } => {
                    return Status::Cut {
                        offset: *offset,
                        why: why.clone(),
                    }
                }
                LogError::Io { offset, source } => (*offset, format!("read error: {source}")),
                other => (reader.offset(), other.to_string()),
            };
            return Status::Corrupt { offset, why };
        }
        match reader.end() {
            Some(End::Complete(t)) => Status::Complete {
                trailer_events: t.events,
                chunks: t.chunks,
            },
            Some(End::Cut { offset, why }) => Status::Cut {
                offset: *offset,
                why: why.clone(),
            },
            // Reading stopped before the end (the caller had what it wanted).
            None => Status::Cut {
                offset: reader.offset(),
                why: "not read to the end".into(),
            },
        }
    }

    /// How an ordered read ended; meaningful once it returned `None`.
    pub fn of_ordered<R: io::Read>(o: &Ordered<R>) -> Status {
        Status::of(&o.reader, o.error())
    }

    pub fn is_complete(&self) -> bool {
        matches!(self, Status::Complete { .. })
    }

    /// `complete`, `cut at offset N: why`, `corrupt at offset N: why`.
    pub fn text(&self) -> String {
        match self {
            Status::Complete { .. } => "complete".into(),
            Status::Cut { offset, why } => format!("cut at offset {offset}: {why}"),
            Status::Corrupt { offset, why } => format!("corrupt at offset {offset}: {why}"),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        match self {
            Status::Complete { .. } => serde_json::json!({"state": "complete"}),
            Status::Cut { offset, why } => {
                serde_json::json!({"state": "cut", "offset": offset, "why": why})
            }
            Status::Corrupt { offset, why } => {
                serde_json::json!({"state": "corrupt", "offset": offset, "why": why})
            }
        }
    }
}

/// Unix nanoseconds as ISO-8601 UTC with milliseconds, `2024-05-01T12:00:00.123Z`.
pub fn iso8601(unix_ns: i64) -> String {
    let secs = unix_ns.div_euclid(1_000_000_000);
    let ms = unix_ns.rem_euclid(1_000_000_000) / 1_000_000;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm, proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// Digest as printed everywhere: 16 hex digits.
pub fn hex_digest(d: u64) -> String {
    format!("{d:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123_000_000), "2000-02-29T00:00:00.123Z");
        assert_eq!(
            iso8601(1_714_564_800_000_000_000),
            "2024-05-01T12:00:00.000Z"
        );
        assert_eq!(iso8601(-1_000_000), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            iso8601(4_102_444_799_000_000_000),
            "2099-12-31T23:59:59.000Z"
        );
    }
}
