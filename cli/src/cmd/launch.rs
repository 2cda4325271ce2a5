//! `replay record` and `replay replay`: launchers. They put the mode, the log and any
//! `-k KEY=VALUE` options into the child's environment (`REPLAY_MODE`, `REPLAY_LOG`,
//! `REPLAY_<KEY>`), which the C header and the Node addon read, run the program and exit
//! with its status. The JVM agent takes its options from `-agentpath:...=` instead.
//!
//! # Output verification for any runtime
//!
//! The front ends can only check what they see, and the C header sees no writes. So the
//! launcher itself records the program's stdout, stderr and exit status into a second log,
//! `<LOG>.stdio` (the same format, written by a [`Core`] of runtime `launcher` in this
//! process), and under replay compares them with it: the core reports the first difference
//! and decides, by the policy, whether the program is stopped. The child's stdout and stderr
//! are pipes that the launcher copies through to its own as bytes arrive, so the person
//! still sees the output live and unchanged.
//!
//! Every core call is made from the main thread: replay binds threads by identity, and the
//! thread that started the core is the recording's thread 0. So both pipes are read with
//! poll(2) in that thread.
//!
//! The replay front ends write their own lines to the program's stderr, starting with
//! `replay: ` (in stdout too, where a script merged the two). Those lines are neither
//! recorded nor compared (a note in replay that the record
//! run did not print must not count as a difference), and a divergence report of the front
//! end (`replay: DIVERGENCE: ...`) ends the comparison: the program reported itself, and a
//! second report of the launcher on the report's own text would only bury it.

use super::forward;
use super::inputs;
use super::recordings;
use super::runtime::{self, Kind};
use crate::log::{self, Fail, Res};
use replay_core::options::{expand_path, OptError};
use replay_core::{tree, Core, Frontend, Mode, Options, Stream, Verdict};
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};

const EXIT_USAGE: u8 = 2;
const EXIT_CANNOT_RUN: u8 = 126;
const EXIT_NOT_FOUND: u8 = 127;
/// The program exited with the status of a divergence its front end reported.
const EXIT_DIVERGENCE: u8 = replay_core::EXIT_DIVERGENCE as u8;

/// Appended to the program's log to name the log of its output.
const STDIO_SUFFIX: &str = ".stdio";

#[derive(clap::Args)]
#[command(
    about = "Record a program (Java, Node, C, or a script running them) and what it starts",
    after_help = "Examples:
  replay record -- java -cp build Main          # into the recordings directory
  replay record -- node app.js --port 8080
  replay record -- ./run-tests.sh               # a script: every JVM and Node it starts
  replay record -o /tmp/rec -- ./app            # into the directory /tmp/rec
  replay record -o app.replay -- ./app          # one process, one log (and app.replay.stdio)
  replay record -k sync=true -- node app.js

The program is started with the JVM agent (JAVA_TOOL_OPTIONS=-agentpath:libreplay.so=...),
the Node addon (NODE_OPTIONS=--require=...) and the C header's environment (REPLAY_MODE,
REPLAY_<KEY> for each -k KEY=VALUE), all taken from this build, whatever the program is:
every JVM and Node process it starts, at any depth, is recorded too, each into its own log
in the recording directory, named by its place in the process tree (`replay info DIR`).

Without -o, the recording goes into $REPLAY_DIR, else $XDG_DATA_HOME/replay/recordings,
else ~/.local/share/replay/recordings (`replay ls` lists them). The program's stdout,
stderr and exit status pass through unchanged and are recorded too (DIR/output.replay),
unless -k verify-output=off. A summary line (events, size, where) ends the run.

Exits with the program's status (128+N if signal N killed it, 126 if it cannot be run,
127 if it is not found); 2 for the launcher's own errors."
)]
pub struct RecordArgs {
    /// Where to record: a directory (the program and every process it starts), or a file
    /// ending in .replay (the program's one log)
    #[arg(short = 'o', long = "output", value_name = "DIR|FILE.replay")]
    output: Option<String>,
    /// One log FILE for the program (%p = pid, %t = time), its output in FILE.stdio
    #[arg(long, value_name = "FILE", conflicts_with = "output")]
    log: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
#[command(
    about = "Run a program again under replay of a recording (default: the latest)",
    after_help = "Examples:
  replay replay -- java -cp build Main            # the latest recording
  replay replay ~/.local/share/replay/recordings/node-20250101-120000 -- node app.js
  replay replay app.replay -- ./app
  replay replay -k policy=warn-live -k timeout=30s -- node app.js

Without LOG|DIR, replays the latest recording (`replay ls`) and says which. Every process
of the program that was recorded gets its own log back: the same process in the tree, by
its parent, program and arguments. The program's stdout and stderr pass through and are
compared with the recorded ones, each as one byte stream, and its exit status with the
recorded status. The first difference is a divergence, reported on stderr with the stream,
byte offset, line, and the recorded and replayed line; under the default policy abort the
program is stopped and the exit status is 86. -k verify-output=off compares nothing.

Exits with the program's status: 86 means it diverged from the recording (the report is
on stderr); 128+N if signal N killed it, 126 if it cannot be run, 127 if it is not found;
3 if the recording cannot be read or belongs to another program; 2 for usage errors."
)]
pub struct ReplayArgs {
    /// The recording: a directory `replay record` wrote, or a log file
    #[arg(value_name = "LOG|DIR")]
    target: Option<PathBuf>,
    /// The log to replay (its output log is LOG.stdio); the same as LOG|DIR
    #[arg(long, value_name = "FILE", conflicts_with = "target")]
    log: Option<PathBuf>,
    /// An option, as for record (repeatable)
    #[arg(short = 'k', long = "key", value_name = "KEY=VALUE")]
    keys: Vec<String>,
    /// The program and its arguments (after `--`, which tells them from LOG|DIR)
    #[arg(value_name = "CMD", required = true, last = true)]
    cmd: Vec<OsString>,
}

#[derive(clap::Args, Clone)]
pub struct Common {
    /// An option, passed as REPLAY_<KEY>=VALUE and to the JVM agent (repeatable), and used by
    /// the launcher's own output check, e.g. policy=warn-live, order=relaxed, timeout=30s,
    /// flush=50ms, sync=true, compress=off, verify-output=off
    #[arg(short = 'k', long = "key", value_name = "KEY=VALUE")]
    keys: Vec<String>,
    /// The program and its arguments (after `--`)
    #[arg(value_name = "CMD", required = true, trailing_var_arg = true)]
    pub cmd: Vec<OsString>,
}

impl Common {
    /// These options and the program, with one more `-k KEY=VALUE`.
    pub fn with_key(&self, kv: &str) -> Common {
        let mut c = self.clone();
        c.keys.push(kv.to_string());
        c
    }
}

/// The program's environment additions, and the options of the launcher's own core.
struct Setup {
    env: Vec<(String, OsString)>,
    /// Options appended to a space-separated variable (`NODE_OPTIONS`, `JAVA_TOOL_OPTIONS`)
    /// of the environment the program gets: this machine's, or in replay the recorded one.
    appends: Vec<(String, String)>,
    /// Variables of this process's environment the program must not inherit.
    remove: Vec<String>,
    options: Options,
    /// Said once the program runs: where the recording goes.
    announce: Option<String>,
}

impl Setup {
    fn new(c: &Common, mode: &str) -> Res<Setup> {
        // The launcher's core takes the options the program's front end takes: those in the
        // environment (except the mode and log, which the command sets), then the -k keys.
        let inherited = std::env::vars_os().filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            let own = k == "REPLAY_MODE" || k == "REPLAY_LOG";
            (k.starts_with("REPLAY_") && !own).then(|| (k, v.to_string_lossy().into_owned()))
        });
        let (mut options, _front_end_keys) = Options::from_env_vars(inherited)
            .map_err(|e| Fail::new(EXIT_USAGE, format!("environment: {e}")))?;
        let mut env = vec![("REPLAY_MODE".to_string(), OsString::from(mode))];
        for kv in &c.keys {
            let (k, v) = key_value(kv)?;
            // Checked by key_value: only an unknown key (the front end's own) fails here.
            let _ = options.set(k, Some(v));
            env.push((
                format!("REPLAY_{}", k.to_ascii_uppercase().replace('-', "_")),
                v.into(),
            ));
        }
        // A tree this launcher runs in (a recorded program running `replay`) is not the
        // program's: it starts a tree of its own, or none.
        let remove = [
            tree::ENV_TREE,
            tree::ENV_CLAIMS,
            tree::ENV_ID,
            "REPLAY_LOG",
            recordings::ENV_DIR,
        ]
        .map(String::from)
        .to_vec();
        Ok(Setup {
            env,
            appends: Vec::new(),
            remove,
            options,
            announce: None,
        })
    }

    /// Adds the runtimes' hooks for `mode`, with `log` for a one-log recording. Fails (one
    /// line) when the part the command itself needs is missing.
    fn hooks(&mut self, argv: &[OsString]) -> Res<Kind> {
        let cmd = argv.first().map(OsString::as_os_str).unwrap_or_default();
        let kind = runtime::detect(cmd);
        // A command that loads the agent or the addon itself keeps its own (loaded twice,
        // the agent would start two sessions).
        let args: Vec<String> = argv
            .iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let own_agent = args
            .iter()
            .any(|a| a.starts_with("-agentpath:") && a.contains("libreplay"));
        let own_addon = args
            .windows(2)
            .any(|w| (w[0] == "--require" || w[0] == "-r") && w[1].contains("replay"))
            || args
                .iter()
                .any(|a| a.starts_with("--require=") && a.contains("replay"));
        let missing = |part: &str, what: &str| {
            Fail::new(
                EXIT_USAGE,
                format!(
                    "cannot find {part} ({what}) next to the replay binary or in ../lib: build it with `cargo build --release --workspace`"
                ),
            )
        };
        match runtime::find_lib(runtime::AGENT) {
            _ if own_agent => {}
            Some(agent) => {
                // `env`: the agent reads REPLAY_MODE, REPLAY_LOG and REPLAY_<KEY> as the
                // C header does, so this text is the same in record and replay.
                let opt = format!("-agentpath:{}=env", agent.display());
                self.appends.push(("JAVA_TOOL_OPTIONS".into(), opt));
            }
            None if kind == Kind::Java => return Err(missing(runtime::AGENT, "the JVM agent")),
            None => {}
        }
        let addon = if own_addon {
            None
        } else {
            runtime::find_lib(runtime::NODE_ADDON)
        };
        let node = addon
            .ok_or_else(|| missing(runtime::NODE_ADDON, "the Node addon"))
            .and_then(|addon| {
                runtime::node_dir(&addon).map_err(|e| {
                    Fail::new(EXIT_USAGE, format!("cannot set up the Node addon: {e}"))
                })
            });
        match node {
            _ if own_addon => {}
            Ok(dir) => {
                let opt = format!("--require={}", runtime::node_quote(&dir.join("index.js")));
                self.appends.push(("NODE_OPTIONS".into(), opt));
            }
            Err(f) if kind == Kind::Node => return Err(f),
            Err(_) => {}
        }
        Ok(kind)
    }

    /// Makes the program's processes a tree recorded in (or replayed from) `dir`.
    fn tree(&mut self, dir: &Path, claims: &Claims) {
        self.env
            .push((tree::ENV_TREE.into(), dir.as_os_str().to_owned()));
        self.env
            .push((tree::ENV_CLAIMS.into(), claims.0.as_os_str().to_owned()));
    }

    /// The program's whole environment, made from `base` (this machine's, or the recorded
    /// one in replay).
    fn environment(&self, base: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = base
            .into_iter()
            .filter(|(k, _)| {
                !self.remove.iter().any(|r| k == r.as_str())
                    && !self.env.iter().any(|(e, _)| k == e.as_str())
            })
            .collect();
        env.extend(self.env.iter().map(|(k, v)| (k.into(), v.clone())));
        for (var, opt) in &self.appends {
            runtime::append_opt(var, opt, &mut env);
        }
        env
    }
}

/// This run's directory of places claimed in the process tree (`replay_core::tree`),
/// removed when the run ends: a replay claims afresh each time.
struct Claims(PathBuf);

impl Claims {
    fn new() -> Res<Claims> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p =
            std::env::temp_dir().join(format!("replay-tree-{}-{nanos:08x}", std::process::id()));
        std::fs::create_dir_all(&p)
            .map_err(|e| Fail::new(EXIT_USAGE, format!("{}: cannot create: {e}", p.display())))?;
        Ok(Claims(p))
    }

    /// The ids claimed so far.
    fn ids(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Claims {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where a recording goes.
#[derive(Clone)]
pub enum Dest {
    /// One log (REPLAY_LOG), its output in FILE.stdio.
    File(String),
    /// A recording directory: every process's log, and `output.replay`.
    Dir(PathBuf),
}

impl Dest {
    /// What `-o`/`--log` (or neither) asks for; `None`: a new directory in the recordings
    /// directory, made once the command is known.
    fn of(output: Option<&str>, log: Option<&str>) -> Res<Option<Dest>> {
        Ok(match (output, log) {
            (_, Some("")) | (Some(""), _) => {
                return Err(Fail::new(EXIT_USAGE, "-o/--log: empty file name"))
            }
            (_, Some(l)) => Some(Dest::File(l.to_string())),
            (Some(o), None) if o.ends_with(".replay") && !Path::new(o).is_dir() => {
                Some(Dest::File(o.to_string()))
            }
            (Some(o), None) => {
                let d = recordings::absolute(Path::new(o));
                if recordings::is_recording(&d) {
                    return Err(Fail::new(
                        EXIT_USAGE,
                        format!("{}: already holds a recording", d.display()),
                    ));
                }
                std::fs::create_dir_all(&d).map_err(|e| {
                    Fail::new(EXIT_USAGE, format!("{}: cannot create: {e}", d.display()))
                })?;
                Some(Dest::Dir(d))
            }
            (None, None) => None,
        })
    }

    pub fn describe(&self) -> String {
        match self {
            Dest::File(f) => f.clone(),
            Dest::Dir(d) => d.display().to_string(),
        }
    }
}

pub fn record(a: RecordArgs) -> Res<u8> {
    let dest = Dest::of(a.output.as_deref(), a.log.as_deref())?;
    let (code, dest, output) = record_into(&a.common, dest, true)?;
    summary(&dest, output);
    Ok(code)
}

/// The file name of the command, for names and messages.
pub fn program_name(cmd: &[OsString]) -> String {
    cmd.first()
        .and_then(|p| Path::new(p).file_name())
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Records `c.cmd` into `dest` (a new recording directory when `None`); the program's exit
/// status, where it was recorded, and whether its output was.
pub fn record_into(c: &Common, dest: Option<Dest>, announce: bool) -> Res<(u8, Dest, bool)> {
    let mut s = Setup::new(c, "record")?;
    let first = c.cmd.first().cloned().unwrap_or_default();
    // A program that cannot be found leaves no recording behind.
    if runtime::which(&first).is_none() {
        return Err(Fail::new(
            EXIT_NOT_FOUND,
            format!(
                "{}: cannot run: not found{}",
                first.to_string_lossy(),
                if first.as_encoded_bytes().contains(&b'/') {
                    ""
                } else {
                    " on PATH"
                }
            ),
        ));
    }
    // The hooks first: a missing part fails before a directory is made.
    // Expanded once, here, so that the program's log and its .stdio carry the same pid and
    // time (the front end would expand %p with its own pid).
    let file = match &dest {
        Some(Dest::File(l)) => Some(expand_path(l)),
        _ => None,
    };
    let kind = s.hooks(&c.cmd)?;
    let dest = match (dest, file) {
        (Some(Dest::File(_)), Some(f)) => Dest::File(f),
        (Some(d), _) => d,
        (None, _) => Dest::Dir(recordings::create(&program_name(&c.cmd))?),
    };
    let claims;
    let stdio = match &dest {
        Dest::File(f) => {
            // Recording to a file replaces what an earlier recording left there (logs are
            // created exclusively, so that a process never writes into another's).
            let old = tree::Tree::of(Path::new(f)).logs().unwrap_or_default();
            for p in old
                .into_iter()
                .map(|x| x.1)
                .chain([stdio_path(Path::new(f))])
            {
                let _ = std::fs::remove_file(p);
            }
            claims = Claims::new()?;
            s.tree(&recordings::absolute(Path::new(f)), &claims);
            // The launcher's log holds the environment and stdin whether or not it holds the
            // output.
            Some(stdio_path(Path::new(f)))
        }
        Dest::Dir(d) => {
            claims = Claims::new()?;
            s.tree(d, &claims);
            Some(d.join(recordings::OUTPUT))
        }
    };
    if announce {
        let what = match kind {
            Kind::Other => String::new(),
            k => format!(" ({} program)", k.name()),
        };
        s.announce = Some(format!("replay: recording{what} into {}", dest.describe()));
    }
    let output = s.options.verify_output;
    let code = launch(s, c, Mode::Record, stdio)?;
    Ok((code, dest, output))
}

/// Why a recording holds only the output: no process opened a log.
const NONE_RECORDED: &str = "no process opened a log (a C program records once it calls \
replay_init_from_env(); Java and Node ones do when this launcher starts them)";

/// The line after a recording: events, size, where.
fn summary(dest: &Dest, output: bool) {
    let only = if output {
        "environment, stdin and output"
    } else {
        "environment and stdin"
    };
    match dest {
        Dest::Dir(d) => {
            let r = recordings::Recording::read(d);
            if r.processes.is_empty() {
                eprintln!(
                    "replay: recorded only the program's {only} ({}) in {}: {NONE_RECORDED}",
                    recordings::human_size(r.size()),
                    d.display()
                );
                return;
            }
            let cut = if r.complete() { "" } else { ", cut" };
            eprintln!(
                "replay: recorded {} events from {} process{} ({}{cut}) in {}",
                r.events(),
                r.processes.len(),
                if r.processes.len() == 1 { "" } else { "es" },
                recordings::human_size(r.size()),
                d.display()
            );
        }
        Dest::File(f) => {
            let process_logs = tree::Tree::of(Path::new(f)).logs().unwrap_or_default();
            if !process_logs.iter().any(|x| x.1.is_file()) {
                let out = stdio_path(Path::new(f));
                let size = std::fs::metadata(&out).map_or(0, |m| m.len());
                eprintln!(
                    "replay: recorded only the program's {only} ({}) in {}: {NONE_RECORDED}",
                    recordings::human_size(size),
                    out.display()
                );
                return;
            }
            let logs: Vec<PathBuf> = process_logs
                .into_iter()
                .map(|x| x.1)
                .chain([stdio_path(Path::new(f))])
                .filter(|p| p.is_file())
                .collect();
            let sums: Vec<_> = logs
                .iter()
                .filter_map(|p| recordings::summarize(p).ok())
                .collect();
            let events: u64 = sums.iter().map(|s| s.events).sum();
            let size: u64 = sums.iter().map(|s| s.size).sum();
            eprintln!(
                "replay: recorded {events} events ({}) in {f}",
                recordings::human_size(size)
            );
        }
    }
}

pub fn replay(a: ReplayArgs) -> Res<u8> {
    let common = Common {
        keys: a.keys,
        cmd: a.cmd,
    };
    let mut s = Setup::new(&common, "replay")?;
    let target = match a.target.or(a.log) {
        Some(t) => t,
        None => {
            let l = recordings::latest()?;
            eprintln!("replay: replaying the latest recording, {}", l.display());
            l
        }
    };
    if target.is_dir() {
        let dir = recordings::absolute(&target);
        if !recordings::is_recording(&dir) {
            return Err(Fail::new(
                log::EXIT_UNREADABLE,
                format!(
                    "{}: not a recording (no {} and no process logs)",
                    dir.display(),
                    recordings::OUTPUT
                ),
            ));
        }
        s.hooks(&common.cmd)?;
        let claims = Claims::new()?;
        s.tree(&dir, &claims);
        let out = dir.join(recordings::OUTPUT);
        let stdio = out.is_file().then_some(out);
        let code = launch(s, &common, Mode::Replay, stdio)?;
        not_replayed(&dir, &claims, code);
        return Ok(children_diverged(&dir, &claims, code));
    }
    // One log. Fail here, with the log's own error, rather than inside the program. A
    // program without a front end has only its output recorded: LOG.stdio without LOG.
    let stdio = stdio_path(&target);
    if target.exists() || !stdio.exists() {
        log::open(&target)?;
    }
    s.hooks(&common.cmd)?;
    let claims = Claims::new()?;
    let tree_at = recordings::absolute(&target);
    s.tree(&tree_at, &claims);
    let stdio = if stdio.exists() {
        Some(stdio)
    } else if !s.options.verify_output {
        None
    } else {
        eprintln!(
            "replay: note: {} does not exist (recorded without the launcher, by an older version, or with verify-output=off): the program's output is not compared",
            stdio.display()
        );
        None
    };
    let code = launch(s, &common, Mode::Replay, stdio)?;
    not_replayed(&tree_at, &claims, code);
    Ok(children_diverged(&tree_at, &claims, code))
}

/// A process of the tree that diverged while the program as a whole did not stop (a child
/// whose stderr went to a pipe or file nobody shows, and whose status its parent ignored):
/// said here, and the replay's status is the divergence's. Never a faithful-looking replay
/// with a diverged process inside.
fn children_diverged(tree_at: &Path, claims: &Claims, code: u8) -> u8 {
    let found = tree::divergences(&claims.0);
    if found.is_empty() {
        return code;
    }
    let logs = tree::Tree::of(tree_at).logs().unwrap_or_default();
    let mut said = false;
    for (id, line) in found {
        // The top process's report went to the terminal itself.
        if id == "1" && code == EXIT_DIVERGENCE {
            continue;
        }
        let name = logs
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, p)| p.file_name())
            .map_or_else(|| id.clone(), |n| n.to_string_lossy().into_owned());
        eprintln!("replay: recorded process {id} ({name}) diverged in this replay: {line}");
        said = true;
    }
    if said && code != EXIT_DIVERGENCE {
        eprintln!(
            "replay: the replay is not faithful: a process diverged (exit status {EXIT_DIVERGENCE} instead of the program's {code})"
        );
        return EXIT_DIVERGENCE;
    }
    code
}

/// Says which recorded processes did not run again: the program took another path.
fn not_replayed(tree_at: &Path, claims: &Claims, code: u8) {
    // Stopped by a divergence, or refused before it ran: the report or error says it all.
    if code == EXIT_DIVERGENCE || i32::from(code) == replay_core::session::EXIT_WRONG_LOG {
        return;
    }
    let ran = claims.ids();
    for (id, p) in tree::Tree::of(tree_at).logs().unwrap_or_default() {
        if !ran.contains(&id) {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            eprintln!("replay: note: recorded process {id} ({name}) did not run in this replay");
        }
    }
}

/// `<LOG>.stdio`.
fn stdio_path(log: &Path) -> PathBuf {
    let mut p = log.as_os_str().to_owned();
    p.push(STDIO_SUFFIX);
    PathBuf::from(p)
}

/// `KEY=VALUE` → (KEY, VALUE), checking values of the keys the core knows.
fn key_value(kv: &str) -> Res<(&str, &str)> {
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
    Ok((k, v))
}

/// The launcher's exit status for the program's.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
        (None, None) => 1,
    }
}

/// Starts the launcher's core on the output log `stdio` (`Some`, so that a missing one can be
/// `?`-ed by the caller). `Err` is the status to exit with before running the program (the
/// log belongs to another program); `Ok(None)`: run the program without recording or
/// comparing its output (said on stderr).
fn start_core(
    mut options: Options,
    mode: Mode,
    stdio: &Path,
    cmd: &[OsString],
    program: &str,
) -> Option<Result<Option<Core>, u8>> {
    options.mode = mode;
    // Chaos perturbs the program's threads, not the launcher's reading of its output.
    options.chaos = None;
    // The core expands % sequences in its log name; this one is a real file name already.
    options.log = Some(stdio.to_string_lossy().replace('%', "%%"));
    let argv: Vec<String> = cmd
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let fe = Frontend {
        runtime: "launcher",
        runtime_version: env!("CARGO_PKG_VERSION"),
        program,
        default_log: "",
        output: true,
        // stdout and stderr are two pipes read as data arrives: how their writes interleave
        // is not the program's doing, so each stream is compared on its own.
        per_kind: true,
        argv: Some(&argv),
    };
    Some(match Core::start(options, &fe) {
        Ok(core) => Ok(core),
        Err(e) => {
            eprintln!("replay: {e}");
            match e.exit {
                Some(code) => Err(code.clamp(0, 255) as u8),
                None => {
                    let what = if mode == Mode::Record {
                        "recorded"
                    } else {
                        "compared"
                    };
                    eprintln!("replay: note: the program's output is not {what}");
                    Ok(None)
                }
            }
        }
    })
}

fn launch(s: Setup, c: &Common, mode: Mode, stdio: Option<PathBuf>) -> Res<u8> {
    let Some((prog, args)) = c.cmd.split_first() else {
        return Err(Fail::new(EXIT_USAGE, "no program to run"));
    };
    let shown = prog.to_string_lossy().into_owned();
    let base = Path::new(prog)
        .file_name()
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Replay checks its output log before the program runs (it may belong to another
    // program: exit 3); record creates its log only once the program runs.
    let start = || start_core(s.options.clone(), mode, stdio.as_deref()?, &c.cmd, &base);
    let mut core = match mode {
        Mode::Replay => match start() {
            Some(Ok(core)) => core,
            Some(Err(code)) => return Ok(code),
            None => None,
        },
        _ => None,
    };
    let piped = s.options.verify_output
        && match mode {
            Mode::Replay => core.is_some(),
            _ => stdio.is_some(),
        };
    let mut cmd = Command::new(prog);
    let mut base: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let mut inputs = None;
    match (mode, &core) {
        (Mode::Replay, Some(core)) => {
            let recorded = match inputs::Replaying::take(core) {
                Ok(r) => r,
                Err(code) => return Ok(code.clamp(0, 255) as u8),
            };
            if let Some(env) = &recorded.env {
                base = inputs::replay_env(env);
            }
            let (stdin, var) = recorded.stdin().map_err(|e| {
                Fail::new(
                    EXIT_CANNOT_RUN,
                    format!("cannot give the program its recorded stdin: {e}"),
                )
            })?;
            cmd.stdin(stdin);
            base.retain(|(k, _)| k != inputs::STDIN_VAR);
            base.extend(var);
        }
        (Mode::Record, _) if stdio.is_some() => {
            let (rec, stdin, var) = inputs::Recording::stdin();
            cmd.stdin(stdin);
            base.retain(|(k, _)| k != inputs::STDIN_VAR);
            base.extend(var);
            inputs = Some(rec);
        }
        _ => {}
    }
    cmd.args(args).env_clear().envs(s.environment(base));
    if piped {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    forward::prepare(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        let code = if e.kind() == io::ErrorKind::NotFound {
            EXIT_NOT_FOUND
        } else {
            EXIT_CANNOT_RUN
        };
        Fail::new(code, format!("{shown}: cannot run: {e}"))
    })?;
    // The program gets the signals sent to the launcher and decides; the launcher outlives
    // it to pass its status on. Set only after spawn returned (the child has exec'd, with
    // default dispositions).
    forward::start(child.id());
    let waited =
        |e: io::Error| Fail::new(EXIT_CANNOT_RUN, format!("{shown}: cannot wait for it: {e}"));
    if let Some(a) = &s.announce {
        eprintln!("{a}");
    }
    if mode == Mode::Record {
        // A log that cannot be created leaves the output unrecorded but still passed on.
        core = start().and_then(Result::ok).flatten();
        if let (Some(core), Some(i)) = (&core, &inputs) {
            i.start(core);
        }
    }
    // Stdin is recorded only once the log is open.
    let inputs = inputs.filter(|_| core.is_some());
    if !piped {
        let status = child.wait().map_err(waited)?;
        forward::stop();
        let code = exit_code(status);
        if let (Some(core), Some(i)) = (&core, &inputs) {
            i.drain(core);
            core.exit_status(i32::from(code));
            if let Err(m) = core.shutdown() {
                eprintln!("replay: {shown}: {m}");
            }
        }
        return Ok(code);
    }
    let (status, reported) = match pump(core.as_ref(), &mut child, mode, inputs.as_ref()) {
        Ok(Pumped::Exited { status, reported }) => (status, reported),
        Ok(Pumped::Stopped(code)) => return Ok(code.clamp(0, 255) as u8),
        Err(e) => {
            // The output can no longer be followed: do not leave the program running
            // unseen; its status is still the launcher's.
            let _ = child.kill();
            eprintln!("replay: {shown}: cannot read its output: {e}");
            return Ok(exit_code(child.wait().map_err(waited)?));
        }
    };
    let code = exit_code(status);
    let Some(core) = core else {
        return Ok(code);
    };
    if mode == Mode::Replay && (reported || code == EXIT_DIVERGENCE) {
        // The program's front end reported a divergence itself: its report is the one to
        // read, and its status passes through.
        return Ok(code);
    }
    core.exit_status(i32::from(code));
    Ok(match core.shutdown() {
        Ok(Verdict::Stop(c)) => c.clamp(0, 255) as u8,
        Ok(_) => code,
        Err(m) => {
            eprintln!("replay: {}: {m}", shown);
            code
        }
    })
}

enum Pumped {
    /// The program exited; `reported`: its front end wrote a divergence report.
    Exited { status: ExitStatus, reported: bool },
    /// The core stopped the replay: the program was killed, exit with this status.
    Stopped(i32),
}

/// One of the child's output pipes, and where its bytes go.
enum Pipe {
    Out(ChildStdout),
    Err(ChildStderr),
}

impl Pipe {
    fn stream(&self) -> Stream {
        match self {
            Pipe::Out(_) => Stream::Stdout,
            Pipe::Err(_) => Stream::Stderr,
        }
    }

    fn fd(&self) -> i32 {
        match self {
            Pipe::Out(p) => p.as_raw_fd(),
            Pipe::Err(p) => p.as_raw_fd(),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Pipe::Out(p) => p.read(buf),
            Pipe::Err(p) => p.read(buf),
        }
    }
}

/// The program's output, kept while `replay hunt` looks for a pattern in it.
pub static CAPTURE: std::sync::Mutex<Option<Vec<u8>>> = std::sync::Mutex::new(None);
/// How much of a run's output `replay hunt --match` looks at.
pub const CAPTURE_MAX: usize = 64 << 20;

/// Copies bytes to the launcher's own stdout or stderr, as they came.
fn pass_on(stream: Stream, bytes: &[u8]) -> io::Result<()> {
    if let Some(c) = CAPTURE.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        let room = CAPTURE_MAX.saturating_sub(c.len()).min(bytes.len());
        c.extend_from_slice(&bytes[..room]);
    }
    match stream {
        Stream::Stdout => {
            let mut o = io::stdout().lock();
            o.write_all(bytes)?;
            o.flush()
        }
        Stream::Stderr => io::stderr().lock().write_all(bytes),
    }
}

/// How long poll waits before checking whether the program exited while something it
/// started keeps its output pipes open.
const EXIT_CHECK_MS: i32 = 100;

/// Passes the program's output through and hands it to the core until both pipes end, or
/// the program exited and nothing more is ready (a process it left behind may hold the
/// pipes open for ever: [`forward_rest`] passes on what it writes later).
fn pump(
    core: Option<&Core>,
    child: &mut Child,
    mode: Mode,
    inputs: Option<&inputs::Recording>,
) -> io::Result<Pumped> {
    let drain = || {
        if let (Some(core), Some(i)) = (core, inputs) {
            i.drain(core);
        }
    };
    let mut pipes = [
        child.stdout.take().map(Pipe::Out),
        child.stderr.take().map(Pipe::Err),
    ];
    // Per stream: a script that merges stderr into stdout (`java ... 2>&1`) puts the front
    // ends' lines (a replay's end-of-run notes) into stdout, where they are no more the
    // program's than on stderr (kotlinc's wrapper replayed with a difference every time).
    let mut lines = [FrontEndLines::default(), FrontEndLines::default()];
    // Cleared when the program's front end reported a divergence itself.
    let mut comparing = core.is_some();
    let mut reported = false;
    let mut exited = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let mut fds: Vec<libc::pollfd> = pipes
            .iter()
            .map(|p| libc::pollfd {
                // A negative fd is skipped by poll: that pipe has ended.
                fd: p.as_ref().map_or(-1, Pipe::fd),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        drain();
        if fds.iter().all(|f| f.fd < 0) {
            break;
        }
        let timeout = if exited.is_some() { 0 } else { EXIT_CHECK_MS };
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            if exited.is_some() {
                break;
            }
            exited = child.try_wait()?;
            if exited.is_some() {
                // Reaped: its pid may be reused.
                forward::stop();
            }
            continue;
        }
        for (slot, f) in pipes.iter_mut().zip(&fds) {
            if f.revents == 0 {
                continue;
            }
            let Some(pipe) = slot else { continue };
            let stream = pipe.stream();
            let got = match pipe.read(&mut buf) {
                Ok(0) => None,
                Ok(k) => Some(k),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Any other read error ends this stream like an end of file.
                Err(_) => None,
            };
            let Some(k) = got else {
                *slot = None;
                continue;
            };
            let bytes = &buf[..k];
            if pass_on(stream, bytes).is_err() {
                // Our reader went away (`replay replay ... | head`): close the pipe, so the
                // program meets a closed output as it would without the launcher.
                *slot = None;
            }
            let Some(core) = core.filter(|_| comparing) else {
                continue;
            };
            let (own, report) = lines[(stream == Stream::Stderr) as usize].feed(bytes);
            // Recording keeps everything but the front end's lines; replay compares up to the
            // front end's report and then stops.
            let own = match report {
                Some(n) if mode == Mode::Replay => {
                    comparing = false;
                    reported = true;
                    &own[..n]
                }
                _ => &own[..],
            };
            let verdict = if own.is_empty() {
                Verdict::Live
            } else {
                core.output(stream, own, &|| None)
            };
            if let Verdict::Stop(code) = verdict {
                // SIGKILL and a wait: the program is gone when the launcher exits. The
                // pipes are not read to their end, since anything the program started may
                // hold them open.
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Pumped::Stopped(code));
            }
        }
    }
    if let Some(core) = core.filter(|_| comparing) {
        for (stream, l) in [Stream::Stdout, Stream::Stderr].into_iter().zip(&mut lines) {
            let rest = l.finish();
            if rest.is_empty() {
                continue;
            }
            if let Verdict::Stop(code) = core.output(stream, &rest, &|| None) {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Pumped::Stopped(code));
            }
        }
    }
    let status = match exited {
        Some(s) => s,
        None => child.wait()?,
    };
    drain();
    forward_rest(&pipes);
    Ok(Pumped::Exited { status, reported })
}

/// Output pipes still open once the program exited: a process it started and left running
/// (a detached child, a daemon) holds them. Without the launcher it would write to the
/// terminal; with the launcher gone it would die of SIGPIPE at its next write. So a forked
/// copy of the launcher goes on copying what they write to the launcher's stdout and stderr
/// until they close (unrecorded and uncompared: the program's run is over), and the launcher
/// exits with the program's status as usual.
fn forward_rest(pipes: &[Option<Pipe>; 2]) {
    let mut fds: Vec<libc::pollfd> = pipes
        .iter()
        .flatten()
        .map(|p| libc::pollfd {
            fd: p.fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if fds.is_empty() {
        return;
    }
    let outs: Vec<i32> = pipes
        .iter()
        .flatten()
        .map(|p| match p.stream() {
            Stream::Stdout => 1,
            Stream::Stderr => 2,
        })
        .collect();
    let mut buf = vec![0u8; 64 * 1024];
    let _ = io::stdout().flush();
    // SAFETY: the child of this multi-threaded process runs only async-signal-safe calls
    // (close, poll, read, write, _exit) on memory allocated before the fork.
    if unsafe { libc::fork() } != 0 {
        // The launcher (or a failed fork: the writers meet a closed pipe, as before).
        return;
    }
    // The copier passes no signal on: the program is gone.
    forward::stop();
    unsafe {
        // Hold nothing else open: the logs, the program's stdin pipe.
        for fd in 3..4096 {
            if !fds.iter().any(|f| f.fd == fd) {
                libc::close(fd);
            }
        }
        loop {
            if fds.iter().all(|f| f.fd < 0) {
                libc::_exit(0);
            }
            let n = libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1);
            if n < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                libc::_exit(0);
            }
            for (f, &out) in fds.iter_mut().zip(&outs) {
                if f.revents == 0 || f.fd < 0 {
                    continue;
                }
                let k = libc::read(f.fd, buf.as_mut_ptr().cast(), buf.len());
                if k < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                let mut done = k <= 0;
                let mut at = 0;
                while !done && at < k as usize {
                    let w = libc::write(out, buf[at..].as_ptr().cast(), k as usize - at);
                    if w < 0 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    if w <= 0 {
                        // Our reader went away: the writer meets a closed pipe, as it would.
                        done = true;
                    } else {
                        at += w as usize;
                    }
                }
                if done {
                    libc::close(f.fd);
                    f.fd = -1;
                }
            }
        }
    }
}

/// How the replay front ends' own lines on stderr start.
const FRONT_END: &[u8] = b"replay: ";
/// The line every JVM prints when JAVA_TOOL_OPTIONS is set: it names the agent's options,
/// which differ between record and replay, so it is the launcher's doing, not the program's.
const JAVA_NOTE: &[u8] = b"Picked up JAVA_TOOL_OPTIONS: ";
/// How a front end's divergence report starts: the first words of
/// `replay_core::report::Divergence::render` and of its one-line form for a cut log.
const REPORTS: [&[u8]; 3] = [
    b"replay: DIVERGENCE: ",
    b"replay: the recording ends at event #",
    // A front end that refused the log (another program): its status is the answer.
    b"replay: cannot replay: ",
];

/// Separates the program's stderr from the lines its replay front end writes there (see
/// the module comment), across chunks that split lines anywhere.
#[derive(Default)]
struct FrontEndLines {
    /// The start of the current line, while it is not yet known whose it is.
    held: Vec<u8>,
    state: Line,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Line {
    #[default]
    Undecided,
    Program,
    FrontEnd,
}

impl FrontEndLines {
    /// The program's own bytes of `chunk`, and, when a front end's divergence report starts
    /// in it, how many of those bytes came before the first report.
    fn feed(&mut self, chunk: &[u8]) -> (Vec<u8>, Option<usize>) {
        let mut own = Vec::with_capacity(chunk.len());
        let mut report = None;
        let mut rest = chunk;
        while !rest.is_empty() {
            let (piece, complete) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..=i], true),
                None => (rest, false),
            };
            rest = &rest[piece.len()..];
            match self.state {
                Line::Program => own.extend_from_slice(piece),
                Line::FrontEnd => {}
                Line::Undecided => {
                    self.held.extend_from_slice(piece);
                    let h = &self.held;
                    let maybe = |p: &[u8]| {
                        let n = h.len().min(p.len());
                        h[..n] == p[..n]
                    };
                    if !maybe(FRONT_END) && !maybe(JAVA_NOTE) {
                        own.append(&mut self.held);
                        self.state = Line::Program;
                    } else if h.starts_with(JAVA_NOTE) {
                        self.held.clear();
                        self.state = Line::FrontEnd;
                    } else if h.starts_with(FRONT_END) {
                        let is_report = REPORTS.iter().any(|r| h.starts_with(r));
                        if is_report && report.is_none() {
                            report = Some(own.len());
                        }
                        let maybe_report = REPORTS.iter().any(|r| r.starts_with(h));
                        if is_report || complete || !maybe_report {
                            self.held.clear();
                            self.state = Line::FrontEnd;
                        }
                    }
                }
            }
            if complete {
                self.state = Line::Undecided;
            }
        }
        (own, report)
    }

    /// At the end of the stream: the start of a last line that was held back, if it is
    /// the program's (too short to be a front end's).
    fn finish(&mut self) -> Vec<u8> {
        let h = std::mem::take(&mut self.held);
        if h.starts_with(FRONT_END) || h.starts_with(JAVA_NOTE) {
            Vec::new()
        } else {
            h
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` and returns what is compared and whether a report was seen.
    fn run(chunks: &[&[u8]]) -> (Vec<u8>, bool) {
        let mut f = FrontEndLines::default();
        let mut own = Vec::new();
        for c in chunks {
            let (o, r) = f.feed(c);
            if let Some(n) = r {
                own.extend(&o[..n]);
                return (own, true);
            }
            own.extend(o);
        }
        own.extend(f.finish());
        (own, false)
    }

    #[test]
    fn program_lines_pass_whole_in_any_split() {
        let text: &[u8] = b"err\nrepl\nreplay:x\n replay: y\nno newline at the end: rep";
        for cut in 0..text.len() {
            for cut2 in cut..text.len() {
                let (a, rest) = text.split_at(cut);
                let (b, c) = rest.split_at(cut2 - cut);
                assert_eq!(run(&[a, b, c]), (text.to_vec(), false), "{cut} {cut2}");
            }
        }
        assert_eq!(run(&[b"rep"]), (b"rep".to_vec(), false));
    }

    #[test]
    fn front_end_lines_are_left_out_and_a_report_ends_the_comparison() {
        let text: &[u8] =
            b"a\nreplay: note: something\nb\nreplay: DIVERGENCE: x\n  recorded: 1\nc\n";
        for cut in 0..text.len() {
            let (x, y) = text.split_at(cut);
            assert_eq!(run(&[x, y]), (b"a\nb\n".to_vec(), true), "{cut}");
        }
        let cut: &[u8] = b"replay: the recording ends at event #3 (thread 0 ...)\nmore\n";
        assert_eq!(run(&[cut]), (Vec::new(), true));
        assert_eq!(
            run(&[b"replay: warning: x\nreplay: DIVERG", b"ED\nz"]),
            (b"z".to_vec(), false)
        );
        let java: &[u8] = b"Picked up JAVA_TOOL_OPTIONS: -agentpath:/x=replay\nPicked up\nP";
        for cut in 0..java.len() {
            let (x, y) = java.split_at(cut);
            assert_eq!(run(&[x, y]), (b"Picked up\nP".to_vec(), false), "{cut}");
        }
    }

    /// The report starts the launcher looks for are the core's.
    #[test]
    fn report_starts_are_the_cores() {
        use replay_core::report::{Divergence, DivergenceKind};
        let mut d = Divergence::at(
            DivergenceKind::Exit {
                recorded: 0,
                replayed: 1,
            },
            3,
            0,
            "main".into(),
            PathBuf::from("/nonexistent/x.replay"),
        );
        assert!(
            d.render().as_bytes().starts_with(REPORTS[0]),
            "{}",
            d.render()
        );
        d.kind = DivergenceKind::Cut {
            offset: 10,
            why: "cut".into(),
        };
        assert!(
            d.render().as_bytes().starts_with(REPORTS[1]),
            "{}",
            d.render()
        );
        // The front ends print a refusal as "replay: " and the core's message.
        assert_eq!(
            REPORTS[2],
            format!("replay: {}", replay_core::session::REFUSED).as_bytes()
        );
    }

    #[test]
    fn stdio_path_appends() {
        assert_eq!(
            stdio_path(Path::new("a/b.replay")),
            PathBuf::from("a/b.replay.stdio")
        );
    }
}
