//! The inputs every program takes from the launcher, whatever its runtime: the environment it
//! starts with and what it reads on stdin. The launcher records both into its own log (the
//! one that holds the program's output) and replay gives them back, so that a program that
//! reads `CI`, `TZ`, `LANG` or a config variable, or a formatter fed on a pipe, replays the
//! same on a machine whose environment and input differ (or with no input at all).
//!
//! # Environment
//! Recorded: the launcher's environment. Replay starts the program with the recorded one,
//! except for variables taken from this machine's environment and never recorded: the
//! replay's own `REPLAY_*` keys, those that say where this machine keeps its programs
//! ([`LIVE_VARS`]: the runtime must still be found here), and those whose name marks a secret
//! ([`SECRET_NAMES`]: `GITHUB_TOKEN`, `DB_PASSWORD`; a log is shared, a token must not be in
//! it). The front ends' options are added to the recorded `NODE_OPTIONS` and
//! `JAVA_TOOL_OPTIONS` as in recording.
//!
//! # Stdin
//! What stdin is decides how it is recorded ([`Source`]):
//! - a terminal is left to the program, unrecorded (what a person types is not replayed:
//!   said once in replay);
//! - `/dev/null` is given again as `/dev/null`;
//! - a regular file (`< input`) is left to the program and its bytes from the current offset
//!   are recorded; replay gives an unnamed in-memory file with those bytes (still a regular
//!   file, seekable, of the same size);
//! - anything else (a pipe, a socket, a device) is copied through a pipe of the launcher's,
//!   one chunk at a time (the next once the program read the last), and each chunk is
//!   recorded; replay feeds the chunks through a pipe the same way, so the program's reads
//!   split the input as they did, and closes it only if the recording saw its end.
//!
//! Bytes the launcher read ahead but the program never took are recorded too (a pipe's
//! capacity at most): harmless, replay offers them the same way. A program that shares its
//! stdin with a process run after it (`(replay record -- a; b) < pipe`) leaves that process
//! less to read: the launcher reads ahead.

use replay_core::{Core, Field, FieldValue, Payload, PayloadRef, Record, Verdict};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::process::Stdio;
use std::sync::mpsc;

const KIND_ENV: &str = "launcher.env";
const KIND_STDIN_SOURCE: &str = "launcher.stdin.source";
const KIND_CWD: &str = "launcher.cwd";
const KIND_STDIN: &str = "launcher.stdin";
const KIND_STDIN_END: &str = "launcher.stdin.end";

/// Variables replay takes from this machine rather than from the recording: where the
/// runtimes and their libraries are.
pub const LIVE_VARS: &[&str] = &["PATH", "JAVA_HOME", "LD_LIBRARY_PATH"];

/// A chunk of stdin is at most this large.
const CHUNK: usize = 64 * 1024;

/// What the program's stdin was when it was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Terminal = 0,
    Null = 1,
    File = 2,
    Pipe = 3,
}

impl Source {
    fn of(v: u64) -> Option<Source> {
        Some(match v {
            0 => Source::Terminal,
            1 => Source::Null,
            2 => Source::File,
            3 => Source::Pipe,
            _ => return None,
        })
    }

    /// This process's fd 0.
    fn current() -> Source {
        // SAFETY: fstat on fd 0 writes only into `st`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(0, &mut st) } != 0 {
            // No stdin at all: the program reads nothing, as from /dev/null.
            return Source::Null;
        }
        match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Source::File,
            libc::S_IFCHR if unsafe { libc::isatty(0) } == 1 => Source::Terminal,
            libc::S_IFCHR if st.st_rdev == libc::makedev(1, 3) => Source::Null,
            _ => Source::Pipe,
        }
    }
}

/// Whether `key` is the replay's own (its options, the tree it runs in).
fn own_key(key: &[u8]) -> bool {
    key.starts_with(b"REPLAY_")
}

/// Parts of a variable's name (any case) that mark a secret: its value never goes into the
/// log, and replay takes it from this machine's environment (absent there, absent).
const SECRET_NAMES: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "AUTH",
    "COOKIE",
];

/// Whether the variable `key` is left out of the recording and taken live in replay.
fn live_key(key: &[u8]) -> bool {
    let upper = key.to_ascii_uppercase();
    own_key(key)
        || LIVE_VARS.iter().any(|v| key == v.as_bytes())
        || SECRET_NAMES
            .iter()
            .any(|s| upper.windows(s.len()).any(|w| w == s.as_bytes()))
}

/// Recording's side: the program's stdin, and what the launcher must record once its log is
/// open ([`Recording::start`]) and as the program runs ([`Recording::drain`]).
pub struct Recording {
    source: Source,
    /// A regular file's offset when the program started.
    file_from: Option<u64>,
    chunks: Option<mpsc::Receiver<Option<Vec<u8>>>>,
}

/// The identity (`device:inode`) of an open descriptor, as [`STDIN_VAR`] gives it.
fn identity(fd: i32) -> Option<OsString> {
    // SAFETY: fstat writes only into `st`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    Some(OsString::from(format!("{}:{}", st.st_dev, st.st_ino)))
}

/// The variable naming the stdin the launcher gives the program (`device:inode`). A process
/// of the tree whose fd 0 is another (a script's `java Main < input`, `cat f | node app.js`)
/// reads input the launcher does not record: its front end records those reads itself (the
/// JVM agent: `System.in`). Not recorded (a replay key): replay sets its own.
pub const STDIN_VAR: &str = replay_core::tree::ENV_STDIN;

/// [`STDIN_VAR`] for `stdio` given from descriptor `fd` (the launcher's own fd 0 when
/// inherited).
fn stdin_var(fd: i32) -> Option<(OsString, OsString)> {
    identity(fd).map(|id| (OsString::from(STDIN_VAR), id))
}

impl Recording {
    /// Chooses the program's stdin, and the variable that names it ([`STDIN_VAR`]). A pipe's
    /// copier starts here, before the program: what it copies waits in the channel until
    /// the log is open.
    pub fn stdin() -> (Recording, Stdio, Option<(OsString, OsString)>) {
        let source = Source::current();
        let mut rec = Recording {
            source,
            file_from: None,
            chunks: None,
        };
        let (stdio, var) = match source {
            Source::Terminal | Source::Null => (Stdio::inherit(), stdin_var(0)),
            Source::File => {
                // SAFETY: lseek on fd 0 only queries its offset.
                let at = unsafe { libc::lseek(0, 0, libc::SEEK_CUR) };
                rec.file_from = u64::try_from(at).ok();
                (Stdio::inherit(), stdin_var(0))
            }
            Source::Pipe => match pipe() {
                Ok((read, write)) => {
                    let (tx, rx) = mpsc::channel();
                    rec.chunks = Some(rx);
                    std::thread::spawn(move || copy_stdin(File::from(write), &tx));
                    let var = stdin_var(read.as_raw_fd());
                    (Stdio::from(read), var)
                }
                Err(e) => {
                    eprintln!("replay: note: stdin is not recorded (cannot make a pipe: {e})");
                    rec.source = Source::Terminal;
                    (Stdio::inherit(), stdin_var(0))
                }
            },
        };
        (rec, stdio, var)
    }

    /// Records the environment, what stdin is, and a regular file's bytes.
    pub fn start(&self, core: &Core) {
        // One field per variable: `dump` names them, `dump --json` shows the values.
        let env = Record {
            fields: std::env::vars_os()
                .filter(|(k, _)| !live_key(k.as_bytes()))
                .map(|(k, v)| Field {
                    name: k.to_string_lossy().into_owned(),
                    value: FieldValue::Bytes(v.into_vec().into()),
                })
                .collect(),
        };
        core.record(core.intern(KIND_ENV), 0, None, PayloadRef::Record(&env));
        if let Ok(cwd) = std::env::current_dir() {
            let cwd = cwd.into_os_string().into_vec();
            core.record(core.intern(KIND_CWD), 0, None, PayloadRef::Bytes(&cwd));
        }
        core.record(
            core.intern(KIND_STDIN_SOURCE),
            0,
            None,
            PayloadRef::Uint(self.source as u64),
        );
        if let Some(from) = self.file_from {
            self.record_file(core, from);
        }
    }

    fn record_file(&self, core: &Core, from: u64) {
        // A second description of the same file: the program's offset is not moved.
        let f = match File::open("/proc/self/fd/0") {
            Ok(f) => f,
            Err(e) => {
                eprintln!("replay: note: stdin (a file) is not recorded: {e}");
                return;
            }
        };
        let kind = core.intern(KIND_STDIN);
        let mut at = from;
        let mut buf = vec![0u8; CHUNK];
        loop {
            match f.read_at(&mut buf, at) {
                Ok(0) => break,
                Ok(n) => {
                    core.record(kind, 0, None, PayloadRef::Bytes(&buf[..n]));
                    at += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("replay: note: stdin (a file) is recorded up to byte {at}: {e}");
                    return;
                }
            }
        }
        core.record(core.intern(KIND_STDIN_END), 0, None, PayloadRef::None);
    }

    /// Records what the copier gave the program since the last call.
    pub fn drain(&self, core: &Core) {
        let Some(rx) = &self.chunks else { return };
        for chunk in rx.try_iter() {
            match chunk {
                Some(bytes) => {
                    core.record(core.intern(KIND_STDIN), 0, None, PayloadRef::Bytes(&bytes))
                }
                None => core.record(core.intern(KIND_STDIN_END), 0, None, PayloadRef::None),
            }
        }
    }
}

/// A pipe whose ends are closed on exec (the child gets its end as fd 0 by dup2).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fds into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Copies the launcher's stdin into the program's pipe, sending each chunk (before it is
/// written: a chunk the program then gets is never missing from the log) and `None` at the
/// end. Stops when the program closed its end. Runs detached: it may block in read for ever
/// once the program is gone; the launcher's exit ends it.
fn copy_stdin(mut to: File, tx: &mpsc::Sender<Option<Vec<u8>>>) {
    let mut buf = vec![0u8; CHUNK];
    let mut stdin = io::stdin().lock();
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => {
                let _ = tx.send(None);
                return; // `to` closes: the program reads its end.
            }
            Ok(n) => {
                // One chunk in the pipe at a time: the program's reads split the input the
                // same way when replay feeds it chunk by chunk.
                drained(&to);
                if tx.send(Some(buf[..n].to_vec())).is_err() || to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                // Unreadable stdin ends like an end of file.
                let _ = tx.send(None);
                return;
            }
        }
    }
}

/// Replay's side: the recorded environment and stdin, taken from the launcher's log before
/// the program starts. Recordings made before these were recorded have neither: the program
/// gets this machine's.
pub struct Replaying {
    /// The recorded environment, `None` when not recorded.
    pub env: Option<Vec<(OsString, OsString)>>,
    source: Option<Source>,
    chunks: Vec<Vec<u8>>,
    ended: bool,
}

impl Replaying {
    /// Takes the recorded inputs from `core`. `Err`: the verdict of a divergence reported
    /// while taking them (a log whose events do not fit).
    pub fn take(core: &Core) -> Result<Replaying, i32> {
        let mut r = Replaying {
            env: None,
            source: None,
            chunks: Vec::new(),
            ended: false,
        };
        let none = &|| None;
        let next = |kind: &str| -> Result<Option<replay_core::Event>, i32> {
            let k = core.intern(kind);
            if !core.replay_has_more(k) {
                return Ok(None);
            }
            match core.replay(k, 0, None, none) {
                Verdict::Serve(e) => Ok(Some(e)),
                Verdict::Stop(code) => Err(code),
                _ => Ok(None),
            }
        };
        if let Some(e) = next(KIND_ENV)? {
            if let Payload::Record { record } = e.payload {
                r.env = Some(
                    record
                        .fields
                        .into_iter()
                        .filter_map(|f| match f.value {
                            FieldValue::Bytes(v) => {
                                Some((f.name.into(), OsString::from_vec(v.to_vec())))
                            }
                            FieldValue::Text(v) => Some((f.name.into(), v.into())),
                            _ => None,
                        })
                        .collect(),
                );
            }
        }
        if let Some(e) = next(KIND_CWD)? {
            if let Payload::Bytes { data } = e.payload {
                let recorded = std::path::PathBuf::from(OsString::from_vec(data.to_vec()));
                if std::env::current_dir().is_ok_and(|now| now != recorded) {
                    // Not changed into: on another machine the directory may not exist, and a
                    // program's relative paths are the recording's either way.
                    eprintln!(
                        "replay: note: recorded in {}, replaying in another directory: absolute paths the program prints may differ",
                        recorded.display()
                    );
                }
            }
        }
        if let Some(e) = next(KIND_STDIN_SOURCE)? {
            if let Payload::Uint { value } = e.payload {
                r.source = Source::of(value);
            }
        }
        while let Some(e) = next(KIND_STDIN)? {
            if let Payload::Bytes { data } = e.payload {
                r.chunks.push(data.to_vec());
            }
        }
        r.ended = next(KIND_STDIN_END)?.is_some();
        Ok(r)
    }

    /// The program's stdin in replay, and the variable that names it ([`STDIN_VAR`]).
    pub fn stdin(self) -> io::Result<(Stdio, Option<(OsString, OsString)>)> {
        Ok(match self.source {
            // Not recorded (an older recording, or a terminal's): this one's.
            None => (Stdio::inherit(), stdin_var(0)),
            Some(Source::Terminal) => {
                eprintln!(
                    "replay: note: stdin was a terminal when recorded: it is not replayed, the program reads this one's"
                );
                (Stdio::inherit(), stdin_var(0))
            }
            Some(Source::Null) => {
                let null = File::open("/dev/null")?;
                let var = stdin_var(null.as_raw_fd());
                (Stdio::from(null), var)
            }
            Some(Source::File) => {
                let f = memory_file(&self.chunks)?;
                let var = stdin_var(f.as_raw_fd());
                (Stdio::from(f), var)
            }
            Some(Source::Pipe) => {
                let (read, write) = pipe()?;
                let (chunks, ended) = (self.chunks, self.ended);
                std::thread::spawn(move || feed(File::from(write), chunks, ended));
                let var = stdin_var(read.as_raw_fd());
                (Stdio::from(read), var)
            }
        })
    }
}

/// The environment a replayed program starts with: the recorded one, with this machine's
/// [`LIVE_VARS`] and replay keys.
pub fn replay_env(recorded: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    let live = |k: &OsString| live_key(k.as_bytes());
    let mut env: Vec<_> = recorded.iter().filter(|(k, _)| !live(k)).cloned().collect();
    env.extend(std::env::vars_os().filter(|(k, _)| live(k)));
    env
}

/// An unnamed regular file holding `chunks`, at offset 0.
fn memory_file(chunks: &[Vec<u8>]) -> io::Result<File> {
    // SAFETY: the name is a NUL-terminated literal; the fd returned is owned below.
    let fd = unsafe { libc::memfd_create(c"replay-stdin".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned by nobody else.
    let mut f = unsafe { File::from_raw_fd(fd) };
    for c in chunks {
        f.write_all(c)?;
    }
    // SAFETY: lseek on an fd this function owns.
    if unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_SET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(f)
}

/// Feeds recorded chunks to the program, each once the pipe is empty again (the program
/// read the one before), and closes the pipe if the recording saw stdin end. Runs detached.
fn feed(mut to: File, chunks: Vec<Vec<u8>>, ended: bool) {
    let mut full = false;
    for c in &chunks {
        drained(&to);
        if !full {
            // A chunk shorter than the copier's reads came on its own in the recording, after
            // the program had read the one before: a reader that asks whether more is there
            // right after a read (Java's BufferedInputStream, through `available()`) found
            // nothing then, and must not find this chunk already waiting now.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        full = c.len() == CHUNK;
        if to.write_all(c).is_err() {
            return; // The program closed its stdin.
        }
    }
    if !ended {
        // Still open when the recording ended: the program never sees an end here either.
        std::mem::forget(to);
    }
}

/// Returns once the program read everything in the pipe `f` (its write end).
fn drained(f: &File) {
    loop {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int; on a pipe either end gives the pipe's content.
        if unsafe { libc::ioctl(f.as_raw_fd(), libc::FIONREAD, &mut n) } != 0 || n == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}
