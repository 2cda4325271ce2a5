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
//! `replay: `. Those lines are neither recorded nor compared (a note in replay that the record
//! run did not print must not count as a difference), and a divergence report of the front
//! end (`replay: DIVERGENCE: ...`) ends the comparison: the program reported itself, and a
//! second report of the launcher on the report's own text would only bury it.

use crate::log::{self, Fail, Res};
use replay_core::options::{expand_path, OptError};
use replay_core::{Core, Frontend, Mode, Options, Stream, Verdict};
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
/// `record` without `--log`, when the output is recorded: the launcher names the log (the
/// C header's default name), so that the output log can sit next to it.
const DEFAULT_LOG: &str = "replay-%p.replay";

#[derive(clap::Args)]
#[command(
    about = "Run a program under record: REPLAY_MODE=record, its output recorded too",
    after_help = "Examples:
  replay record --log app.replay -- ./app --port 8080
  replay record --log 'run-%p.replay' -k sync=true -- node --require replay-node app.js
  replay record -- ./app                        # the log is replay-<pid>.replay
  replay record --log app.replay -k verify-output=off -- ./app   # output not recorded

Sets REPLAY_MODE=record, REPLAY_LOG=FILE and REPLAY_<KEY>=VALUE for each -k KEY=VALUE
(KEY upper-cased, '-' becomes '_') in the program's environment; other REPLAY_* variables
already set are passed on. %p (the launcher's pid) and %t in FILE are expanded here.

The program's stdout and stderr pass through the launcher unchanged, and are recorded
with its exit status into FILE.stdio, which `replay replay` compares the replay with.
-k verify-output=off records no output (the program then writes to the launcher's
stdout and stderr directly, and without --log its front end names the log).

Exits with the program's status (128+N if signal N killed it, 126 if it cannot be run,
127 if it is not found).
Java: the agent takes its options on its command line, java
-agentpath:/path/libreplay.so=record,log=FILE[,key=value...]; give the launcher the same
--log FILE so that FILE.stdio pairs with it."
)]
pub struct RecordArgs {
    /// The log to write (`%p` = pid, `%t` = time); its output log is FILE.stdio
    #[arg(long, value_name = "FILE")]
    log: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
#[command(
    about = "Run a program under replay of a log: REPLAY_MODE=replay, its output compared",
    after_help = "Examples:
  replay replay --log app.replay -- ./app --port 8080
  replay replay --log app.replay -k policy=warn-live -k timeout=30s -- node --require replay-node app.js

Checks that LOG is a readable replay log (exit 3 if not; a program without a front end
has only LOG.stdio, which is enough), then sets REPLAY_MODE=replay, REPLAY_LOG=LOG and
REPLAY_<KEY>=VALUE for each -k, and runs the program.

When LOG.stdio exists (written by `replay record`), the program's stdout and stderr pass
through the launcher unchanged and are compared with the recorded ones, each as one byte
stream, and its exit status with the recorded status. The first difference is a
divergence, reported on stderr with the stream, byte offset, line, and the recorded and
replayed line; under the default policy abort the program is killed and the exit status
is 86. -k verify-output=off compares nothing.

Exits with the program's status: 86 means it diverged from the recording (the report is
on stderr); 128+N if signal N killed it, 126 if it cannot be run, 127 if it is not found;
3 if LOG.stdio belongs to another program.
Java: use `java -agentpath:/path/libreplay.so=replay,log=FILE[,key=value...]`, with
--log FILE given to the launcher too for the output comparison."
)]
pub struct ReplayArgs {
    /// The log to replay (its output log is LOG.stdio)
    #[arg(long, value_name = "FILE", required = true)]
    log: PathBuf,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct Common {
    /// An option, passed as REPLAY_<KEY>=VALUE (repeatable) and used by the launcher's own
    /// output check, e.g. policy=warn-live, order=relaxed, timeout=30s, flush=50ms,
    /// sync=true, compress=off, verify-output=off
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

/// The program's environment additions, and the options of the launcher's own core.
struct Setup {
    env: Vec<(String, OsString)>,
    options: Options,
    /// Said once the program runs: the log the launcher chose.
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
        Ok(Setup {
            env,
            options,
            announce: None,
        })
    }
}

pub fn record(a: RecordArgs) -> Res<u8> {
    let mut s = Setup::new(&a.common, "record")?;
    let log = match &a.log {
        Some(l) if l.is_empty() => return Err(Fail::new(EXIT_USAGE, "--log: empty file name")),
        // Expanded once, here, so that the program's log and its .stdio carry the same pid
        // and time (the front end would expand %p with its own pid).
        Some(l) if s.options.verify_output => Some(expand_path(l)),
        Some(l) => Some(l.clone()),
        None if s.options.verify_output => {
            let l = expand_path(DEFAULT_LOG);
            s.announce = Some(format!(
                "replay: recording to {l}, the program's output to {l}{STDIO_SUFFIX} (use --log to choose the file)"
            ));
            Some(l)
        }
        None => None,
    };
    if let Some(l) = &log {
        s.env.push(("REPLAY_LOG".into(), l.into()));
    }
    let stdio = match &log {
        Some(l) if s.options.verify_output => Some(stdio_path(Path::new(l))),
        _ => None,
    };
    launch(s, &a.common, Mode::Record, stdio)
}

pub fn replay(a: ReplayArgs) -> Res<u8> {
    let mut s = Setup::new(&a.common, "replay")?;
    // Fail here, with the log's own error, rather than inside the program. A program
    // without a front end has only its output recorded: LOG.stdio without LOG.
    let stdio = stdio_path(&a.log);
    if a.log.exists() || !(s.options.verify_output && stdio.exists()) {
        log::open(&a.log)?;
    }
    s.env
        .push(("REPLAY_LOG".into(), a.log.clone().into_os_string()));
    let stdio = if !s.options.verify_output {
        None
    } else if stdio.exists() {
        Some(stdio)
    } else {
        eprintln!(
            "replay: note: {} does not exist (recorded without the launcher, by an older version, or with verify-output=off): the program's output is not compared",
            stdio.display()
        );
        None
    };
    launch(s, &a.common, Mode::Replay, stdio)
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
    let mode_word = if mode == Mode::Record {
        "record"
    } else {
        "replay"
    };
    let Some((prog, args)) = c.cmd.split_first() else {
        return Err(Fail::new(EXIT_USAGE, "no program to run"));
    };
    let shown = prog.to_string_lossy().into_owned();
    let base = Path::new(prog)
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
             java -agentpath:/path/to/libreplay.so={mode_word},log=FILE ... instead"
        );
    }
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
    let piped = match mode {
        Mode::Replay => core.is_some(),
        _ => stdio.is_some(),
    };
    let mut cmd = Command::new(prog);
    cmd.args(args).envs(s.env.iter().map(|(k, v)| (k, v)));
    if piped {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = cmd.spawn().map_err(|e| {
        let code = if e.kind() == io::ErrorKind::NotFound {
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
    let waited =
        |e: io::Error| Fail::new(EXIT_CANNOT_RUN, format!("{shown}: cannot wait for it: {e}"));
    if let Some(a) = &s.announce {
        eprintln!("{a}");
    }
    if mode == Mode::Record {
        // A log that cannot be created leaves the output unrecorded but still passed on.
        core = start().and_then(Result::ok).flatten();
    }
    if !piped {
        return Ok(exit_code(child.wait().map_err(waited)?));
    }
    let (status, reported) = match pump(core.as_ref(), &mut child, mode) {
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

/// Copies bytes to the launcher's own stdout or stderr, as they came.
fn pass_on(stream: Stream, bytes: &[u8]) -> io::Result<()> {
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
/// pipes open for ever; what it writes later is not passed on).
fn pump(core: Option<&Core>, child: &mut Child, mode: Mode) -> io::Result<Pumped> {
    let mut pipes = [
        child.stdout.take().map(Pipe::Out),
        child.stderr.take().map(Pipe::Err),
    ];
    let mut lines = FrontEndLines::default();
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
            let verdict = match stream {
                Stream::Stdout => core.output(stream, bytes, &|| None),
                Stream::Stderr => {
                    let (own, report) = lines.feed(bytes);
                    // Recording keeps everything but the front end's lines; replay compares
                    // up to the front end's report and then stops.
                    let own = match report {
                        Some(n) if mode == Mode::Replay => {
                            comparing = false;
                            reported = true;
                            &own[..n]
                        }
                        _ => &own[..],
                    };
                    if own.is_empty() {
                        Verdict::Live
                    } else {
                        core.output(stream, own, &|| None)
                    }
                }
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
        let rest = lines.finish();
        if !rest.is_empty() {
            if let Verdict::Stop(code) = core.output(Stream::Stderr, &rest, &|| None) {
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
    Ok(Pumped::Exited { status, reported })
}

/// How the replay front ends' own lines on stderr start.
const FRONT_END: &[u8] = b"replay: ";
/// How a front end's divergence report starts: the first words of
/// `replay_core::report::Divergence::render` and of its one-line form for a cut log.
const REPORTS: [&[u8]; 2] = [
    b"replay: DIVERGENCE: ",
    b"replay: the recording ends at event #",
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
                    let n = h.len().min(FRONT_END.len());
                    if h[..n] != FRONT_END[..n] {
                        own.append(&mut self.held);
                        self.state = Line::Program;
                    } else if h.len() >= FRONT_END.len() {
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
        if h.starts_with(FRONT_END) {
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
    }

    #[test]
    fn stdio_path_appends() {
        assert_eq!(
            stdio_path(Path::new("a/b.replay")),
            PathBuf::from("a/b.replay.stdio")
        );
    }
}
