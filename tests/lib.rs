//! Shared helpers for the integration tests: where the release build is, compiling the C
//! test programs against it, and running processes with a bound on their time (a hung
//! child fails its test with what it printed, instead of hanging the suite).

pub mod jvm;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long any test process may run before it counts as hung (generous: the machine is
/// shared). This is a hang guard, not a performance assertion.
pub const PROCESS_TIMEOUT: Duration = Duration::from_secs(120);

/// The workspace root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// `target/release` (or `$CARGO_TARGET_DIR/release`).
pub fn release_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        repo().join(target)
    };
    target.join("release")
}

/// A file of the release build, which must exist: tests cannot depend on staticlibs,
/// cdylibs or binaries of other packages, so the workspace is built first.
pub fn release_artifact(name: &str) -> PathBuf {
    let p = release_dir().join(name);
    assert!(
        p.is_file(),
        "{} is missing: run cargo build --release --workspace first",
        p.display()
    );
    p
}

/// Compiles `tests/c/<name>.c` (plus `extra` flags such as `-DX=1`) against the C front
/// end's header and static library into `<out_dir>/<exe>`. Warnings are errors, so the
/// header is checked to compile cleanly too.
pub fn compile_c(name: &str, exe: &str, out_dir: &Path, extra: &[&str]) -> PathBuf {
    let lib = release_artifact("libreplay_c.a");
    let src = repo().join("tests/c").join(format!("{name}.c"));
    assert!(src.is_file(), "no C test program {}", src.display());
    let out = out_dir.join(exe);
    let result = Command::new("cc")
        .args([
            "-std=gnu11",
            "-O1",
            "-g",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pthread",
        ])
        .args(extra)
        .arg(&src)
        .arg("-I")
        .arg(repo().join("c-header/include"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&out)
        .output()
        .expect("cannot run cc");
    assert!(
        result.status.success(),
        "cc failed for {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    out
}

/// What a finished process did.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Finished {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The exit code; fails the test (showing stderr) if a signal ended the process.
    pub fn code(&self) -> i32 {
        match self.status.code() {
            Some(c) => c,
            None => panic!(
                "process ended by a signal ({:?}); stderr:\n{}",
                self.status, self.stderr
            ),
        }
    }

    /// Lines of stderr, without empty ones.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }
}

/// Runs `cmd` to completion (stdin closed), within [`PROCESS_TIMEOUT`].
pub fn run(cmd: &mut Command) -> Finished {
    run_with_timeout(cmd, PROCESS_TIMEOUT)
}

/// Runs `cmd` to completion; one still running after `timeout` is killed and fails the test
/// with what it printed.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Finished {
    let desc = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {desc}: {e}"));
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let status = wait_bounded(&mut child, timeout);
    let stdout = out.join().expect("stdout reader");
    let stderr = String::from_utf8_lossy(&err.join().expect("stderr reader")).into_owned();
    match status {
        Some(status) => Finished { status, stdout, stderr },
        None => panic!(
            "{desc} did not finish within {timeout:?} and was killed\nstdout:\n{}\nstderr:\n{stderr}",
            String::from_utf8_lossy(&stdout)
        ),
    }
}

fn drain<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Waits for `child` up to `timeout`; kills it and returns `None` when it is still running.
pub fn wait_bounded(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// A running process whose stdout is read line by line (for tests that act on what the
/// program says, such as killing it once it printed "ready"). Killed when dropped.
pub struct Running {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<thread::JoinHandle<Vec<u8>>>,
}

impl Running {
    pub fn spawn(cmd: &mut Command) -> Running {
        let desc = format!("{cmd:?}");
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {desc}: {e}"));
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Some(drain(child.stderr.take().expect("piped stderr")));
        Running {
            child,
            lines,
            stderr,
        }
    }

    /// The next line of stdout; fails the test when none comes within `timeout` (or the
    /// process closed its stdout).
    pub fn line(&mut self, timeout: Duration) -> String {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => l,
            Err(e) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let err = self
                    .stderr
                    .take()
                    .map(|h| h.join().unwrap_or_default())
                    .unwrap_or_default();
                panic!(
                    "no line from the process ({e:?}); stderr:\n{}",
                    String::from_utf8_lossy(&err)
                )
            }
        }
    }

    /// Waits (at most `timeout`) for the process to end by itself; returns its exit status,
    /// every stdout line it printed after those taken with [`Self::line`], and its stderr.
    pub fn finish(&mut self, timeout: Duration) -> (Option<ExitStatus>, Vec<String>, String) {
        let status = wait_bounded(&mut self.child, timeout);
        let mut rest = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            rest.push(l);
        }
        let err = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        (status, rest, String::from_utf8_lossy(&err).into_owned())
    }

    /// Sends SIGKILL and reaps the process.
    pub fn kill(&mut self) -> ExitStatus {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A command for `exe` without any `REPLAY_*` variable of the test's own environment, so
/// that each test sets exactly the options it means.
pub fn command(exe: &Path) -> Command {
    let mut c = Command::new(exe);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("REPLAY_") {
            c.env_remove(&k);
        }
    }
    c
}

/// `command(exe)` set up to record to or replay `log`.
pub fn replay_command(exe: &Path, mode: &str, log: &Path) -> Command {
    let mut c = command(exe);
    c.env("REPLAY_MODE", mode).env("REPLAY_LOG", log);
    c
}

/// The Node package as `npm install` would leave it, in `<dir>/replay-node`: index.js,
/// index.d.ts, package.json, every `.js` of lib/ and the built addon as replay_node.node.
pub fn node_package(dir: &Path) -> PathBuf {
    let so = release_artifact("libreplay_node.so");
    let src = repo().join("node-addon");
    let pkg = dir.join("replay-node");
    std::fs::create_dir_all(pkg.join("lib")).unwrap();
    for f in ["index.js", "index.mjs", "index.d.ts", "package.json"] {
        if src.join(f).is_file() {
            std::fs::copy(src.join(f), pkg.join(f)).unwrap();
        }
    }
    for f in std::fs::read_dir(src.join("lib")).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "js" || e == "mjs") {
            std::fs::copy(&f, pkg.join("lib").join(f.file_name().unwrap())).unwrap();
        }
    }
    std::fs::copy(so, pkg.join("replay_node.node")).unwrap();
    pkg
}
