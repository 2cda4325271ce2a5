//! `replay record` and `replay replay`: thin launchers. They put the mode, the log and any
//! `-k KEY=VALUE` options into the child's environment (`REPLAY_MODE`, `REPLAY_LOG`,
//! `REPLAY_<KEY>`), which the C header and the Node addon read, run the program and exit
//! with its status. The JVM agent takes its options from `-agentpath:...=` instead.

use crate::log::{self, Fail, Res};
use replay_core::options::OptError;
use replay_core::Options;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

const EXIT_USAGE: u8 = 2;
const EXIT_CANNOT_RUN: u8 = 126;
const EXIT_NOT_FOUND: u8 = 127;

#[derive(clap::Args)]
#[command(
    about = "Run a program (C header or Node addon) under record: REPLAY_MODE=record",
    after_help = "Examples:
  replay record --log app.replay -- ./app --port 8080
  replay record --log 'run-%p.replay' -k sync=true -- node --require replay-node app.js
  replay record -- ./app                        # the front end picks and names the log

Sets REPLAY_MODE=record, REPLAY_LOG=FILE (with --log) and REPLAY_<KEY>=VALUE for each
-k KEY=VALUE (KEY upper-cased, '-' becomes '_') in the program's environment; other
REPLAY_* variables already set are passed on. Exits with the program's status (128+N if
signal N killed it, 126 if it cannot be run, 127 if it is not found).
Java: use `java -agentpath:/path/libreplay.so=record,log=FILE[,key=value...]` instead."
)]
pub struct RecordArgs {
    /// The log to write (`%p` = pid, `%t` = time, expanded by the program's front end)
    #[arg(long, value_name = "FILE")]
    log: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
#[command(
    about = "Run a program (C header or Node addon) under replay of a log: REPLAY_MODE=replay",
    after_help = "Examples:
  replay replay --log app.replay -- ./app --port 8080
  replay replay --log app.replay -k policy=warn-live -k timeout=30s -- node --require replay-node app.js

Checks that LOG is a readable replay log (exit 3 if not), then sets REPLAY_MODE=replay,
REPLAY_LOG=LOG and REPLAY_<KEY>=VALUE for each -k, runs the program and exits with its
status: 86 means it diverged from the recording (the report is on stderr); 128+N if
signal N killed it, 126 if it cannot be run, 127 if it is not found.
Java: use `java -agentpath:/path/libreplay.so=replay,log=FILE[,key=value...]` instead."
)]
pub struct ReplayArgs {
    /// The log to replay
    #[arg(long, value_name = "FILE", required = true)]
    log: PathBuf,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct Common {
    /// An option for the front end, passed as REPLAY_<KEY>=VALUE (repeatable), e.g.
    /// policy=warn-live, order=relaxed, timeout=30s, flush=50ms, sync=true,
    /// compress=off
    #[arg(short = 'k', long = "key", value_name = "KEY=VALUE")]
    keys: Vec<String>,
    /// The program and its arguments (after `--`)
    #[arg(
        value_name = "CMD",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    cmd: Vec<OsString>,
}

pub fn record(a: RecordArgs) -> Res<u8> {
    let mut env = vec![("REPLAY_MODE".to_string(), OsString::from("record"))];
    if let Some(l) = &a.log {
        if l.is_empty() {
            return Err(Fail::new(EXIT_USAGE, "--log: empty file name"));
        }
        env.push(("REPLAY_LOG".into(), l.into()));
    }
    launch(env, &a.common, "record")
}

pub fn replay(a: ReplayArgs) -> Res<u8> {
    // Fail here, with the log's own error, rather than inside the program.
    log::open(&a.log)?;
    let env = vec![
        ("REPLAY_MODE".to_string(), OsString::from("replay")),
        ("REPLAY_LOG".into(), a.log.clone().into_os_string()),
    ];
    launch(env, &a.common, "replay")
}

/// `KEY=VALUE` → `REPLAY_KEY`, checking values of the keys the core knows.
fn key_var(kv: &str) -> Res<(String, OsString)> {
    let usage = |why: String| Fail::new(EXIT_USAGE, format!("-k {kv}: {why}"));
    let (k, v) = kv
        .split_once('=')
        .ok_or_else(|| usage("expected KEY=VALUE".into()))?;
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(usage("the key must be letters, digits, '-' or '_'".into()));
    }
    let norm = k.to_ascii_lowercase().replace('_', "-");
    if norm == "mode" || norm == "log" {
        return Err(usage(format!(
            "{norm} is set by the command itself (use --log for the log)"
        )));
    }
    match Options::default().set(k, Some(v)) {
        // The front end may know keys the core does not (it warns about unknown ones).
        Ok(()) | Err(OptError::Unknown(_)) => {}
        Err(e) => return Err(usage(e.to_string())),
    }
    Ok((
        format!("REPLAY_{}", k.to_ascii_uppercase().replace('-', "_")),
        v.into(),
    ))
}

fn launch(mut env: Vec<(String, OsString)>, c: &Common, mode: &str) -> Res<u8> {
    for kv in &c.keys {
        env.push(key_var(kv)?);
    }
    let Some((prog, args)) = c.cmd.split_first() else {
        return Err(Fail::new(EXIT_USAGE, "no program to run"));
    };
    let shown = prog.to_string_lossy().into_owned();
    let base = std::path::Path::new(prog)
        .file_name()
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    if base == "java"
        && !args
            .iter()
            .any(|a| a.to_string_lossy().starts_with("-agentpath"))
    {
        eprintln!(
            "replay: note: the JVM agent does not read REPLAY_* variables; run \
             java -agentpath:/path/to/libreplay.so={mode},log=FILE ... instead"
        );
    }
    let mut cmd = Command::new(prog);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd.spawn().map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            EXIT_NOT_FOUND
        } else {
            EXIT_CANNOT_RUN
        };
        Fail::new(code, format!("{shown}: cannot run: {e}"))
    })?;
    // Like system(3): a Ctrl-C at the terminal reaches the whole process group, so the
    // program gets it and decides; the launcher must outlive it to pass its status on.
    // Set only after spawn returned (the child has exec'd, with default dispositions).
    // SAFETY: signal() with SIG_IGN installs no handler code; it is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let status = child
        .wait()
        .map_err(|e| Fail::new(EXIT_CANNOT_RUN, format!("{shown}: cannot wait for it: {e}")))?;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
        (None, None) => 1,
    })
}
