//! `replay`: inspect, verify, compare and visualise replay logs, and launch programs under
//! record or replay. Each subcommand lives in `cmd/`; this file only parses and dispatches.

mod cmd;
mod log;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

const EXIT_CODES: &str = "\
Exit codes:
  0    success (verify: the log is complete and intact; diff: same event streams)
  1    the log is cut or corrupt (info, dump, verify, timeline; what was readable is still
       shown), verify found a sequence gap or duplicate, diff found a difference, or
       dump --around names an event the log does not have
  2    usage error (bad option or argument)
  3    the log cannot be read at all: missing or unreadable file, not a replay log,
       unsupported format version, or no whole header
  4    the output cannot be written (timeline -o FILE, or stdout; a closed pipe is not an
       error: `replay dump x | head` exits 0)
  record/replay exit with the program's status (128+N if signal N killed it; 126 if it
  cannot be run, 127 if it is not found); replay exits 86 when the program diverged
  from the recording: a call, its output (LOG.stdio) or its exit status.

Errors are one line on stderr: `replay: <LOG>: <reason>`, naming the byte offset when
there is one.";

#[derive(Parser)]
#[command(
    name = "replay",
    version,
    about = "Inspect, verify, compare and launch record/replay logs",
    long_about = "Inspect, verify, compare and visualise replay logs (.replay files), and run \
programs under record or replay.\n\nA program recorded with `replay record` (or \
`java -agentpath:libreplay.so=record,...`) writes every non-deterministic input into a log; \
`replay replay` runs it again with those inputs and stops at the first divergence.",
    after_long_help = EXIT_CODES,
    after_help = "Run `replay --help` for exit codes, `replay <command> --help` for examples."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    Info(cmd::info::Args),
    Dump(cmd::dump::Args),
    Verify(cmd::verify::Args),
    Diff(cmd::diff::Args),
    Timeline(cmd::timeline::Args),
    Record(cmd::launch::RecordArgs),
    Replay(cmd::launch::ReplayArgs),
    Ls(cmd::recordings::LsArgs),
    Hunt(cmd::hunt::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let r = match cli.cmd {
        Cmd::Info(a) => cmd::info::run(a),
        Cmd::Dump(a) => cmd::dump::run(a),
        Cmd::Verify(a) => cmd::verify::run(a),
        Cmd::Diff(a) => cmd::diff::run(a),
        Cmd::Timeline(a) => cmd::timeline::run(a),
        Cmd::Record(a) => cmd::launch::record(a),
        Cmd::Replay(a) => cmd::launch::replay(a),
        Cmd::Ls(a) => cmd::recordings::ls(a),
        Cmd::Hunt(a) => cmd::hunt::run(a),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if let Some(m) = f.msg {
                eprintln!("replay: {m}");
            }
            ExitCode::from(f.code)
        }
    }
}

/// Help and version as clap prints them; any other error as one line and exit 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
    }
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut first = lines
        .next()
        .unwrap_or("bad arguments")
        .trim_start_matches("error: ")
        .to_string();
    // "the following required arguments were not provided:" names them on the next line.
    if first.ends_with(':') {
        if let Some(next) = lines.next() {
            first = format!("{first} {next}");
        }
    }
    let hint = if e.kind() == ErrorKind::MissingRequiredArgument && first.contains("<CMD>") {
        " (the program goes after `--`: replay record -- CMD ARGS...)"
    } else {
        ""
    };
    eprintln!("replay: {first}{hint}; see `replay --help`");
    ExitCode::from(2)
}
