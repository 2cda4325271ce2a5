//! Recordings: the directories `replay record` writes without `-o`, `replay ls`, and what a
//! recording directory holds.
//!
//! A recording is one directory: `output.replay`, the launcher's log of the command's stdout,
//! stderr and exit status, and one log per recorded process, `<id>-<program>.replay`, named by
//! the process's place in the tree (`replay_core::tree`). Recordings go into
//! `$REPLAY_DIR`, else `$XDG_DATA_HOME/replay/recordings`, else
//! `~/.local/share/replay/recordings`, as `<program>-<YYYYMMDD-HHMMSS>[-N]`; the link `latest`
//! there names the newest (what `replay replay` takes without a log, like rr's latest-trace).

use crate::log::{self, Fail, Res, Status};
use crate::outln;
use replay_core::{tree, End, LogReader};
use std::fs;
use std::path::{Path, PathBuf};

/// The launcher's output log in a recording directory.
pub const OUTPUT: &str = "output.replay";
/// The variable that moves the recordings directory.
pub const ENV_DIR: &str = tree::ENV_RECORDINGS;
const LATEST: &str = "latest";

pub const EXIT_USAGE: u8 = 2;

/// Where recordings go.
pub fn root() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = var(ENV_DIR) {
        return d;
    }
    if let Some(d) = var("XDG_DATA_HOME") {
        return d.join("replay").join("recordings");
    }
    match var("HOME") {
        Some(h) => h.join(".local/share/replay/recordings"),
        None => PathBuf::from("replay-recordings"),
    }
}

/// A new, empty recording directory for `program`, made the latest.
pub fn create(program: &str) -> Res<PathBuf> {
    let root = root();
    fs::create_dir_all(&root).map_err(|e| {
        Fail::new(
            EXIT_USAGE,
            format!(
                "{}: cannot create the recordings directory: {e} (set {ENV_DIR} to move it)",
                root.display()
            ),
        )
    })?;
    let base: String = program
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = format!(
        "{}-{}",
        base.trim_start_matches('.'),
        replay_core::options::expand_path("%t")
    );
    for n in 1..10_000 {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let dir = root.join(&name);
        match fs::create_dir(&dir) {
            Ok(()) => {
                set_latest(&root, &name);
                return Ok(absolute(&dir));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Fail::new(
                    EXIT_USAGE,
                    format!("{}: cannot create: {e}", dir.display()),
                ))
            }
        }
    }
    Err(Fail::new(
        EXIT_USAGE,
        format!("{}: too many recordings named {base}", root.display()),
    ))
}

/// Points `latest` at `name` (replaced by rename, so a reader never finds it missing).
fn set_latest(root: &Path, name: &str) {
    let tmp = root.join(format!(".latest.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    if std::os::unix::fs::symlink(name, &tmp).is_ok()
        && fs::rename(&tmp, root.join(LATEST)).is_err()
    {
        let _ = fs::remove_file(&tmp);
    }
}

pub fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The newest recording.
pub fn latest() -> Res<PathBuf> {
    let root = root();
    let link = root.join(LATEST);
    if let Ok(t) = fs::read_link(&link) {
        let d = root.join(t);
        if d.is_dir() {
            return Ok(d);
        }
    }
    // No link (deleted, or recordings copied here): the newest by start time.
    list(&root)
        .into_iter()
        .max_by_key(|d| start_of(d))
        .ok_or_else(|| {
            Fail::new(
                log::EXIT_UNREADABLE,
                format!(
                    "no recordings in {} (record one with `replay record -- CMD`, or name a log)",
                    root.display()
                ),
            )
        })
}

/// The recording directories under `root`.
fn list(root: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|d| is_recording(d))
        .collect();
    v.sort();
    v
}

/// Whether `dir` holds a recording.
pub fn is_recording(dir: &Path) -> bool {
    dir.join(OUTPUT).is_file() || tree::logs(dir).is_ok_and(|l| !l.is_empty())
}

fn start_of(dir: &Path) -> i64 {
    let logs = std::iter::once(dir.join(OUTPUT))
        .chain(tree::logs(dir).unwrap_or_default().into_iter().map(|x| x.1));
    logs.filter_map(|p| {
        LogReader::open(p)
            .ok()
            .map(|r| r.header().start_time_unix_ns)
    })
    .min()
    .unwrap_or(0)
}

/// What one log holds, read to its end.
pub struct LogSummary {
    pub path: PathBuf,
    pub events: u64,
    pub size: u64,
    pub status: Status,
    pub program: String,
    pub runtime: String,
    pub argv: Vec<String>,
    pub pid: u32,
    pub start_ns: i64,
    pub end_ns: Option<i64>,
    pub exit: Option<i32>,
}

pub fn summarize(path: &Path) -> Res<LogSummary> {
    let mut r = log::open(path)?;
    let error = loop {
        match r.next_batch() {
            Ok(Some(_)) => {}
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let status = Status::of(&r, error.as_ref());
    let (end_ns, exit) = match r.end() {
        Some(End::Complete(t)) => (Some(t.end_time_unix_ns), t.exit_status),
        _ => (None, None),
    };
    let h = r.header();
    Ok(LogSummary {
        path: path.to_path_buf(),
        events: r.events_read(),
        size: fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        status,
        program: h.program.clone(),
        runtime: h.runtime.clone(),
        argv: h.argv.clone(),
        pid: h.pid,
        start_ns: h.start_time_unix_ns,
        end_ns,
        exit,
    })
}

/// A recording as a whole.
pub struct Recording {
    /// The launcher's output log, if there is one.
    pub output: Option<LogSummary>,
    /// The processes' logs, in tree order, with their ids.
    pub processes: Vec<(String, LogSummary)>,
    /// Logs that could not be read at all.
    pub unreadable: Vec<String>,
}

impl Recording {
    pub fn read(dir: &Path) -> Recording {
        let mut unreadable = Vec::new();
        let mut take = |p: &Path| match summarize(p) {
            Ok(s) => Some(s),
            Err(f) => {
                unreadable.push(f.msg.unwrap_or_default());
                None
            }
        };
        let out = dir.join(OUTPUT);
        let output = if out.is_file() { take(&out) } else { None };
        let processes = tree::logs(dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(id, p)| take(&p).map(|s| (id, s)))
            .collect();
        Recording {
            output,
            processes,
            unreadable,
        }
    }

    fn all(&self) -> impl Iterator<Item = &LogSummary> {
        self.output
            .iter()
            .chain(self.processes.iter().map(|x| &x.1))
    }

    pub fn events(&self) -> u64 {
        self.all().map(|s| s.events).sum()
    }

    pub fn size(&self) -> u64 {
        self.all().map(|s| s.size).sum()
    }

    pub fn complete(&self) -> bool {
        self.unreadable.is_empty() && self.all().all(|s| s.status.is_complete())
    }

    pub fn state(&self) -> &'static str {
        if self.complete() {
            "complete"
        } else {
            "cut"
        }
    }

    pub fn start_ns(&self) -> Option<i64> {
        self.all().map(|s| s.start_ns).min()
    }

    /// From the first start to the last clean end.
    pub fn duration_ns(&self) -> Option<i64> {
        let end = self.all().filter_map(|s| s.end_ns).max()?;
        Some(end - self.start_ns()?)
    }

    /// The command, as the launcher recorded it (else the first process's).
    pub fn command(&self) -> String {
        let argv = match (&self.output, self.processes.first()) {
            (Some(o), _) if !o.argv.is_empty() => &o.argv,
            (_, Some((_, p))) => &p.argv,
            _ => return "?".into(),
        };
        crate::cmd::info::shell_words(argv)
    }
}

pub fn human_size(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
        n if n < 1024 * 1024 * 1024 => format!("{:.1} MiB", n as f64 / 1048576.0),
        n => format!("{:.2} GiB", n as f64 / 1073741824.0),
    }
}

fn human_duration(ns: Option<i64>) -> String {
    match ns {
        None => "-".into(),
        Some(n) if n < 1_000_000_000 => format!("{}ms", n / 1_000_000),
        Some(n) if n < 60_000_000_000 => format!("{:.1}s", n as f64 / 1e9),
        Some(n) => format!("{}m{:02}s", n / 60_000_000_000, n / 1_000_000_000 % 60),
    }
}

#[derive(clap::Args)]
#[command(
    about = "List the recordings in the recordings directory",
    after_help = "Lists the recordings `replay record` made without -o, oldest first: name, start \
(UTC), duration, size, events, recorded processes, complete or cut, and the command.

The directory is $REPLAY_DIR, else $XDG_DATA_HOME/replay/recordings, else
~/.local/share/replay/recordings."
)]
pub struct LsArgs {
    /// Print one JSON object per recording instead of a table
    #[arg(long)]
    json: bool,
}

pub fn ls(a: LsArgs) -> Res<u8> {
    let root = root();
    let mut out = log::stdout();
    let dirs = list(&root);
    if dirs.is_empty() && !a.json {
        eprintln!("replay: no recordings in {}", root.display());
        return Ok(log::EXIT_OK);
    }
    let mut rows: Vec<(PathBuf, Recording)> = dirs
        .into_iter()
        .map(|d| {
            let r = Recording::read(&d);
            (d, r)
        })
        .collect();
    rows.sort_by_key(|(_, r)| r.start_ns().unwrap_or(0));
    if !a.json {
        outln!(
            out,
            "{:<32} {:<24} {:>9} {:>10} {:>9} {:>5}  {:<8}  COMMAND",
            "RECORDING",
            "START",
            "DURATION",
            "SIZE",
            "EVENTS",
            "PROCS",
            "STATE"
        )?;
    }
    for (d, r) in &rows {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let start = r.start_ns().map(log::iso8601).unwrap_or_else(|| "-".into());
        if a.json {
            let j = serde_json::json!({
                "recording": d.display().to_string(),
                "command": r.command(),
                "start": start,
                "duration_ns": r.duration_ns(),
                "size": r.size(),
                "events": r.events(),
                "processes": r.processes.len(),
                "state": r.state(),
            });
            outln!(out, "{j}")?;
        } else {
            outln!(
                out,
                "{:<32} {:<24} {:>9} {:>10} {:>9} {:>5}  {:<8}  {}",
                name,
                start,
                human_duration(r.duration_ns()),
                human_size(r.size()),
                r.events(),
                r.processes.len(),
                r.state(),
                r.command()
            )?;
        }
    }
    log::WriteExt::done(&mut out)?;
    Ok(log::EXIT_OK)
}

/// `replay info DIR`: the recording and each of its processes.
pub fn info_dir(dir: &Path, json: bool) -> Res<u8> {
    if !is_recording(dir) {
        return Err(Fail::new(
            log::EXIT_UNREADABLE,
            format!(
                "{}: not a recording (no {OUTPUT} and no process logs)",
                dir.display()
            ),
        ));
    }
    let r = Recording::read(dir);
    let mut out = log::stdout();
    let name = |s: &LogSummary| {
        s.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if json {
        let procs: Vec<serde_json::Value> = r
            .processes
            .iter()
            .map(|(id, s)| {
                serde_json::json!({
                    "id": id,
                    "log": name(s),
                    "runtime": s.runtime,
                    "program": s.program,
                    "argv": s.argv,
                    "pid": s.pid,
                    "events": s.events,
                    "size": s.size,
                    "exit_status": s.exit,
                    "status": s.status.json(),
                })
            })
            .collect();
        let j = serde_json::json!({
            "recording": dir.display().to_string(),
            "command": r.command(),
            "start": r.start_ns().map(log::iso8601),
            "duration_ns": r.duration_ns(),
            "exit_status": r.output.as_ref().and_then(|o| o.exit),
            "events": r.events(),
            "size": r.size(),
            "state": r.state(),
            "processes": procs,
            "unreadable": r.unreadable,
        });
        outln!(out, "{j}")?;
    } else {
        outln!(out, "recording: {}", dir.display())?;
        outln!(out, "command:   {}", r.command())?;
        if let Some(s) = r.start_ns() {
            outln!(out, "started:   {}", log::iso8601(s))?;
        }
        outln!(out, "duration:  {}", human_duration(r.duration_ns()))?;
        if let Some(code) = r.output.as_ref().and_then(|o| o.exit) {
            outln!(out, "exit:      {code}")?;
        }
        outln!(out, "status:    {}", r.state())?;
        outln!(out, "events:    {} ({})", r.events(), human_size(r.size()))?;
        outln!(out, "processes: {}", r.processes.len())?;
        for (id, s) in &r.processes {
            let depth = id.matches('.').count();
            outln!(
                out,
                "  {:indent$}{id:<8} {} {}  pid {}  {} events  {}  {}  ({})",
                "",
                s.runtime,
                if s.program.is_empty() {
                    "?"
                } else {
                    &s.program
                },
                s.pid,
                s.events,
                human_size(s.size),
                s.status.text(),
                name(s),
                indent = depth * 2
            )?;
        }
        if let Some(o) = &r.output {
            outln!(
                out,
                "output:    {} events  {}  {}  ({OUTPUT})",
                o.events,
                human_size(o.size),
                o.status.text()
            )?;
        }
        for u in &r.unreadable {
            outln!(out, "unreadable: {u}")?;
        }
    }
    log::WriteExt::done(&mut out)?;
    Ok(if r.complete() {
        log::EXIT_OK
    } else {
        log::EXIT_PROBLEM
    })
}
