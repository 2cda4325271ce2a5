//! The log is decoded ahead on a "replay-reader" thread: replay over it serves the same events
//! and reports the same end (a cut, a corrupt chunk) as reading the file in place, and the
//! thread ends with the replayer, even when it is blocked on a full channel.

mod common;
use replay_core::report::DivergenceKind;
use replay_core::*;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The tests count reader threads of this process, so they run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const EVENTS: u64 = 10_000;

/// One thread, kind "k", values 0..EVENTS, a chunk every 50 events.
fn many_chunks(path: &Path) -> Vec<u8> {
    let r = common::recorder(path);
    let k = r.intern("k");
    for i in 0..EVENTS {
        r.record(k, 0, None, PayloadRef::Uint(i));
        if i % 50 == 49 {
            r.flush();
        }
    }
    r.finish().unwrap();
    std::fs::read(path).unwrap()
}

/// Start offsets of the frames after the magic line: header, chunks, trailer.
fn frames(bytes: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut at = 13;
    while at < bytes.len() {
        v.push(at);
        at += 24 + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    }
    v
}

fn value(e: &Event) -> u64 {
    match e.payload {
        Payload::Uint { value } => value,
        ref p => panic!("{p:?}"),
    }
}

/// Replays every event the log holds, then checks that the next call finds none.
fn replay_all(path: &Path, expect: u64) -> Replayer {
    let rp = common::replayer(path, Order::Strict, Duration::from_secs(10));
    let k = rp.intern("k");
    for i in 0..expect {
        let e = rp
            .next(k, 0, None)
            .unwrap_or_else(|d| panic!("{}", d.render()));
        assert_eq!(value(&e), i);
    }
    let d = rp.next(k, 0, None).unwrap_err();
    // Past the end of a cut log, the recording ends there (one line); of a whole one, the
    // program made a call too many.
    match rp.end() {
        Some(End::Cut { .. }) => assert!(
            matches!(d.kind, DivergenceKind::Cut { .. })
                && d.render().lines().count() == 1
                && d.render().contains("the recorder was killed or cut"),
            "{}",
            d.render()
        ),
        _ => assert!(
            matches!(d.kind, DivergenceKind::Exhausted { .. }),
            "{}",
            d.render()
        ),
    }
    rp
}

fn reader_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim_end() == "replay-reader")
        .count()
}

/// Waits (boundedly) for every reader thread to end; false if some are still there.
fn reader_threads_end() -> bool {
    let until = Instant::now() + Duration::from_secs(30);
    while reader_threads() > 0 {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[test]
fn a_cut_many_chunk_log_replays_up_to_the_cut_and_reports_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let bytes = many_chunks(&dir.path().join("full.replay"));
    let f = frames(&bytes);
    assert!(f.len() > 100, "{} frames", f.len());
    let mid = f[f.len() / 2];
    let trailer = *f.last().unwrap();
    // Inside a chunk in the middle, and between the last chunk and the trailer.
    for cut in [mid + 24 + 10, trailer] {
        let p = dir.path().join(format!("cut-{cut}.replay"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let (n, end, err) = common::read_all(&bytes[..cut]);
        assert_eq!(err, None);
        assert!(matches!(end, Some(End::Cut { .. })), "{end:?}");
        assert!(n > 0 && (n < EVENTS || cut == trailer), "{n}");
        let rp = replay_all(&p, n);
        assert_eq!(rp.end(), end);
        rp.finish().unwrap();
    }
}

#[test]
fn a_corrupt_chunk_in_a_many_chunk_log_ends_replay_before_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = many_chunks(&dir.path().join("full.replay"));
    let f = frames(&bytes);
    // A flipped payload byte of a chunk in the middle: its checksum fails.
    bytes[f[f.len() / 2] + 24 + 3] ^= 0x40;
    let (n, end, err) = common::read_all(&bytes);
    assert!(err.is_some_and(|e| e.contains("checksum")));
    assert!(n > 0 && n < EVENTS, "{n}");
    let p = dir.path().join("corrupt.replay");
    std::fs::write(&p, &bytes).unwrap();
    let rp = replay_all(&p, n);
    assert_eq!(rp.end(), end);
    // What was read is all used; the rest is unreadable, not left over.
    rp.finish().unwrap();
}

#[test]
fn the_reader_thread_decodes_ahead_and_ends_when_the_replayer_is_dropped() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    assert!(reader_threads_end(), "reader threads of earlier tests");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("full.replay");
    let bytes = many_chunks(&p);
    assert!(frames(&bytes).len() > 100);
    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(10));
    let k = rp.intern("k");
    for i in 0..120 {
        assert_eq!(value(&rp.next(k, 0, None).unwrap()), i);
    }
    // Three chunks taken of some two hundred, and the channel holds only a few: the thread is
    // alive (blocked on the full channel, or about to be) when the replayer goes.
    assert_eq!(reader_threads(), 1);
    drop(rp);
    assert!(
        reader_threads_end(),
        "the reader thread outlived its replayer"
    );
}

#[test]
fn the_reader_thread_ends_after_the_last_chunk_while_the_replayer_lives() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("full.replay");
    many_chunks(&p);
    let rp = replay_all(&p, EVENTS);
    assert!(matches!(rp.end(), Some(End::Complete(t)) if t.events == EVENTS));
    assert!(
        reader_threads_end(),
        "the reader thread did not end at the end of the log"
    );
    rp.finish().unwrap();
}
