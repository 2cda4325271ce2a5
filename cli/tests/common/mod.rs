//! Helpers shared by the CLI tests: logs made with the core API, and running the binary.
#![allow(dead_code)]

use replay_core::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_replay");

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn replay(args: &[&str]) -> Run {
    let o: Output = Command::new(BIN).args(args).output().expect("run replay");
    Run {
        // A signal death must not look like any exit code a test expects.
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn recorder(path: &Path, argv0: &str) -> Recorder {
    let mut header =
        HeaderInfo::for_this_process("test", "1.2", vec![("mode".into(), "record".into())]);
    header.argv = vec![argv0.into(), "--flag".into()];
    header.start_time_unix_ns = 1_714_564_800_000_000_000; // 2024-05-01T12:00:00Z
    Recorder::open(RecordConfig {
        path: path.to_path_buf(),
        header,
        sync: false,
        flush: Duration::from_secs(5),
        main_thread: "main".into(),
        compress: 1,
    })
    .unwrap()
}

/// Events of the standard log, in sequence order:
/// - #0..#4    main (t0)  `c.time` Int at site `main.c:10`
/// - #5..#304  w0 (t1)    even: `node.Date.now` Float, odd: `c.read` Ret with bytes and digest
/// - #305..#504 w1 (t2)   `c.random` Uint
/// - #505..#509 main (t0) `c.time` Int at site `main.c:10`
///
/// Threads run one after another, so the numbering is the same in every run. Several
/// flushes make several chunks. `alter = Some(k)` changes the value of w1's k-th event
/// (event #305+k).
pub const EVENTS: u64 = 510;

pub fn standard(path: &Path, alter: Option<u64>) -> PathBuf {
    standard_argv(path, alter, "./app")
}

pub fn standard_argv(path: &Path, alter: Option<u64>, argv0: &str) -> PathBuf {
    let r = recorder(path, argv0);
    let time = r.intern("c.time");
    let site = r.intern("main.c:10");
    for i in 0..5 {
        r.record(time, site, None, PayloadRef::Int(1000 + i));
    }
    r.flush();
    std::thread::scope(|s| {
        s.spawn(|| {
            r.name_thread("w0");
            let now = r.intern("node.Date.now");
            let read = r.intern("c.read");
            for i in 0..300u64 {
                if i % 2 == 0 {
                    r.record(now, 0, None, PayloadRef::Float(1.5e12 + i as f64));
                } else {
                    let data = format!("line {i}\n");
                    r.record(
                        read,
                        0,
                        Some(digest(&[b"/etc/data", &i.to_le_bytes()])),
                        PayloadRef::Ret {
                            ret: data.len() as i64,
                            errno: 0,
                            data: Some(data.as_bytes()),
                        },
                    );
                }
                if i == 150 {
                    r.flush();
                }
            }
        })
        .join()
        .unwrap();
        s.spawn(|| {
            r.name_thread("w1");
            let rnd = r.intern("c.random");
            for i in 0..200u64 {
                let v = if alter == Some(i) { 999_999 } else { i * 7 };
                r.record(rnd, 0, None, PayloadRef::Uint(v));
            }
            r.flush();
        })
        .join()
        .unwrap();
    });
    for i in 5..10 {
        r.record(time, site, None, PayloadRef::Int(1000 + i));
    }
    r.finish().unwrap();
    path.to_path_buf()
}

/// Frames of a log file: (offset, type byte, total length including the 24-byte header).
pub fn frames(bytes: &[u8]) -> Vec<(usize, u8, usize)> {
    let mut out = Vec::new();
    let mut at = 13;
    while at + 24 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push((at, bytes[at + 3], 24 + len));
        at += 24 + len;
    }
    out
}

pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A one-thread log of `n` `c.counter` Int events (for output far larger than a pipe buffer).
pub fn big(path: &Path, n: i64) -> PathBuf {
    let r = recorder(path, "./big");
    let k = r.intern("c.counter");
    for i in 0..n {
        r.record(k, 0, None, PayloadRef::Int(i));
    }
    r.finish().unwrap();
    path.to_path_buf()
}

/// A complete log whose numbers are not dense: `skip` is taken but never recorded, and
/// `twice` is recorded again by a second thread (the recorder trusts numbers handed to
/// `record_at`).
pub fn bad_numbers(path: &Path, skip: Option<u64>, twice: Option<u64>) -> PathBuf {
    let r = recorder(path, "./bad");
    let k = r.intern("c.counter");
    for i in 0..100u64 {
        let seq = r
            .seq_counter()
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(seq, i);
        if skip == Some(i) {
            continue;
        }
        r.record_at(seq, k, 0, None, PayloadRef::Uint(i));
        if i == 50 {
            r.flush();
        }
    }
    if let Some(t) = twice {
        // From another thread: within one thread's run numbers must increase (the format
        // cannot even express a repeat there), so a duplicate spans two runs.
        std::thread::scope(|s| {
            s.spawn(|| r.record_at(t, k, 0, None, PayloadRef::Uint(t)));
        });
    }
    r.finish().unwrap();
    path.to_path_buf()
}

/// Compiles C `source` (written to `dir/<name>.c`) against `replay.h` and this build's
/// `libreplay_c.a`, into `dir/<name>`.
pub fn compile_c(dir: &Path, name: &str, source: &str) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lib = Path::new(BIN).parent().unwrap().join("libreplay_c.a");
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let cc = Command::new("cc")
        .args(["-std=gnu11", "-O1", "-pthread"])
        .arg(&src)
        .arg("-I")
        .arg(repo.join("c-header/include"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("cc is needed");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    exe
}
