//! Shared scaffolding of the JVM agent's tests (jvm_agent, jvm_files, jvm_startup): the JDKs
//! present, the test programs of tests/java compiled once per JDK, running `java` under the
//! agent within the process time bound, and counting a log's events by kind.

use crate::{release_artifact, repo, run, Finished};
use replay_core::LogReader;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The JDKs the tests run on, where present: the default one and the second one beside it.
pub const JDK_HOMES: &[&str] = &[
    "/usr/lib/jvm/java-17-openjdk-amd64",
    "/usr/lib/jvm/temurin-25-jdk-amd64",
];

/// A JDK and the test programs its javac compiled.
pub struct Jdk {
    pub home: PathBuf,
    pub classes: PathBuf,
    _dir: tempfile::TempDir,
}

impl Jdk {
    /// Compiles `sources` with this JDK's javac into a fresh class directory.
    pub fn compile(home: &Path, sources: &[PathBuf]) -> Jdk {
        let dir = tempfile::tempdir().unwrap();
        let classes = dir.path().join("classes");
        let out = run(Command::new(home.join("bin/javac"))
            .arg("-d")
            .arg(&classes)
            .args(sources));
        assert!(out.status.success(), "javac failed: {}", out.stderr);
        Jdk {
            home: home.to_path_buf(),
            classes,
            _dir: dir,
        }
    }

    /// Compiles one program given as source text (its public class is `class_name`).
    pub fn compile_source(home: &Path, class_name: &str, source: &str) -> Jdk {
        let src_dir = tempfile::tempdir().unwrap();
        let src = src_dir.path().join(format!("{class_name}.java"));
        std::fs::write(&src, source).unwrap();
        Jdk::compile(home, &[src])
    }
}

/// The homes of the JDKs present; fails the test if there is none.
pub fn jdk_homes() -> Vec<PathBuf> {
    let v: Vec<PathBuf> = JDK_HOMES
        .iter()
        .map(PathBuf::from)
        .filter(|h| h.join("bin/javac").is_file())
        .collect();
    assert!(!v.is_empty(), "no JDK found in {JDK_HOMES:?}");
    v
}

/// Every JDK present with all of tests/java compiled, once per test binary.
pub fn jdks() -> &'static [Jdk] {
    static JDKS: OnceLock<Vec<Jdk>> = OnceLock::new();
    JDKS.get_or_init(|| {
        let sources: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/java"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "java"))
            .collect();
        jdk_homes()
            .iter()
            .map(|home| Jdk::compile(home, &sources))
            .collect()
    })
}

/// The JDK's directory name, for messages.
pub fn name(jdk: &Jdk) -> String {
    jdk.home.file_name().unwrap().to_string_lossy().into_owned()
}

/// The agent of the release build (`cargo build --release -p replay-jvm` first: it is a
/// cdylib that tests cannot depend on).
pub fn agent() -> PathBuf {
    release_artifact("libreplay.so")
}

/// A `java` command under the agent (`opts` None: no agent), the test programs on the class
/// path, and no options inherited from the environment.
pub fn java_command(jdk: &Jdk, cwd: &Path, jvm_args: &[&str], opts: Option<&str>) -> Command {
    let mut c = Command::new(jdk.home.join("bin/java"));
    c.current_dir(cwd).args(jvm_args);
    if let Some(o) = opts {
        c.arg(format!("-agentpath:{}={o}", agent().display()));
    }
    c.arg("-cp").arg(&jdk.classes);
    c.env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS");
    c
}

/// Runs `java [jvm_args] -agentpath:libreplay.so=<opts> -cp classes <main> [args]` in `cwd`.
pub fn java(
    jdk: &Jdk,
    cwd: &Path,
    jvm_args: &[&str],
    opts: Option<&str>,
    main: &str,
    args: &[&str],
) -> Finished {
    run(java_command(jdk, cwd, jvm_args, opts).arg(main).args(args))
}

/// Bytes (stdout or stderr) as text.
pub fn text(b: impl AsRef<[u8]>) -> String {
    String::from_utf8_lossy(b.as_ref()).into_owned()
}

/// The process's stdout; fails the test, showing both streams, unless it exited with 0.
pub fn ok(o: &Finished, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        o.stdout_text(),
        o.stderr
    );
    o.stdout_text()
}

/// A log's events by kind name and the names of the threads it lists; fails the test unless
/// the log was closed cleanly.
pub fn log_summary(path: &Path) -> (BTreeMap<String, u64>, Vec<String>) {
    let mut r = LogReader::open(path).unwrap();
    let mut ids: BTreeMap<u32, u64> = BTreeMap::new();
    while let Some(b) = r.next_batch().unwrap() {
        for run in b.runs {
            for e in run.events {
                *ids.entry(e.kind).or_default() += 1;
            }
        }
    }
    assert!(
        matches!(r.end(), Some(replay_core::End::Complete(_))),
        "log not closed cleanly: {:?}",
        r.end()
    );
    let kinds = ids
        .into_iter()
        .map(|(k, n)| (r.strings().name(k).to_string(), n))
        .collect();
    let threads = r.threads().keys().map(|t| r.thread_name(*t)).collect();
    (kinds, threads)
}

/// A log's events by kind name.
pub fn log_kinds(path: &Path) -> BTreeMap<String, u64> {
    log_summary(path).0
}

/// A program recorded in a directory of its own: the directory (its input files), the log,
/// what the program printed and the log's events by kind.
pub struct Recorded {
    pub dir: tempfile::TempDir,
    pub log: PathBuf,
    pub out: String,
    pub kinds: BTreeMap<String, u64>,
}

/// Records `main args` in a fresh directory prepared by `setup`; the recording must exit 0
/// and say nothing on stderr.
pub fn record(jdk: &Jdk, main: &str, args: &[&str], setup: impl Fn(&Path)) -> Recorded {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let log = dir.path().join("run.replay");
    let o = java(
        jdk,
        dir.path(),
        &[],
        Some(&format!("record,log={}", log.display())),
        main,
        args,
    );
    let out = ok(&o, &format!("{}: record {main}", name(jdk)));
    assert!(
        o.stderr.trim().is_empty(),
        "{}: record said:\n{}",
        name(jdk),
        o.stderr
    );
    let kinds = log_kinds(&log);
    Recorded {
        dir,
        log,
        out,
        kinds,
    }
}

/// Replays `r` with the same program (`main args` may differ: a changed program).
pub fn replay(jdk: &Jdk, r: &Recorded, jvm_args: &[&str], main: &str, args: &[&str]) -> Finished {
    java(
        jdk,
        r.dir.path(),
        jvm_args,
        Some(&format!("replay,log={}", r.log.display())),
        main,
        args,
    )
}

/// Replays `r` and expects the recorded output and a quiet stderr.
pub fn assert_replays(jdk: &Jdk, r: &Recorded, jvm_args: &[&str], main: &str, args: &[&str]) {
    let o = replay(jdk, r, jvm_args, main, args);
    assert_eq!(ok(&o, "replay"), r.out, "{}: {main}", name(jdk));
    assert!(
        o.stderr.trim().is_empty(),
        "{}: replay said:\n{}",
        name(jdk),
        o.stderr
    );
}

/// A directory `data` with two files (`a.txt` with a fixed mtime) and a subdirectory `sub`.
pub fn data_tree(d: &Path) {
    let data = d.join("data");
    std::fs::create_dir_all(data.join("sub")).unwrap();
    std::fs::write(data.join("a.txt"), "aaa\n").unwrap();
    std::fs::write(data.join("b.txt"), "bbbbbb\n").unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_577_934_245);
    std::fs::File::options()
        .write(true)
        .open(data.join("a.txt"))
        .unwrap()
        .set_modified(old)
        .unwrap();
}
