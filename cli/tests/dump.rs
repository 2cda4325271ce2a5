//! `replay dump`: order, filters, --around, JSON Lines, cut logs and closed pipes.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn seqs(out: &str) -> Vec<u64> {
    out.lines()
        .map(|l| {
            l.trim_start_matches(['>', ' '])
                .trim_start_matches('#')
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn every_event_in_sequence_order() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let r = replay(&["dump", p(&log)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(seqs(&r.stdout), (0..EVENTS).collect::<Vec<_>>());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], "#0        t0 main       c.time main.c:10 = 1000");
    assert_eq!(
        lines[6],
        "#6        t1 w0         c.read = ret=7 bytes[7] \"line 1\\n\""
    );
    assert_eq!(lines[305], "#305      t2 w1         c.random = 0u");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn filters_by_thread_kind_and_limit() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let by_name = replay(&["dump", p(&log), "--thread", "w1"]);
    assert_eq!(seqs(&by_name.stdout), (305..505).collect::<Vec<_>>());
    let by_id = replay(&["dump", p(&log), "--thread", "2"]);
    assert_eq!(by_id.stdout, by_name.stdout);
    assert_eq!(
        replay(&["dump", p(&log), "--thread", "t2"]).stdout,
        by_name.stdout
    );
    let main = replay(&["dump", p(&log), "--thread", "main"]);
    assert_eq!(
        seqs(&main.stdout),
        (0..5).chain(505..510).collect::<Vec<_>>()
    );
    // Substring match; an exact name matches itself.
    let reads = replay(&["dump", p(&log), "--kind", "read"]);
    assert_eq!(seqs(&reads.stdout), (6..305).step_by(2).collect::<Vec<_>>());
    assert_eq!(
        replay(&["dump", p(&log), "--kind", "c.read"]).stdout,
        reads.stdout
    );
    let both = replay(&[
        "dump",
        p(&log),
        "--kind",
        "Date",
        "--thread",
        "w0",
        "--limit",
        "3",
    ]);
    assert_eq!(seqs(&both.stdout), [5, 7, 9]);
    assert_eq!(both.code, 0);
    assert!(replay(&["dump", p(&log), "--thread", "nobody"])
        .stdout
        .is_empty());
}

#[test]
fn around_marks_the_event_and_shows_context() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let r = replay(&["dump", p(&log), "--around", "305", "--context", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(seqs(&r.stdout), [303, 304, 305, 306, 307]);
    let marked: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("> ")).collect();
    assert_eq!(marked, ["> #305      t2 w1         c.random = 0u"]);
    // Default context is 10; clipped at the start of the log.
    assert_eq!(
        seqs(&replay(&["dump", p(&log), "--around", "3"]).stdout),
        (0..=13).collect::<Vec<_>>()
    );
    let beyond = replay(&["dump", p(&log), "--around", "9999"]);
    assert_eq!(beyond.code, 1);
    assert!(
        beyond
            .stderr
            .contains("no event #9999: the last event is #509"),
        "{}",
        beyond.stderr
    );
    assert_eq!(
        replay(&["dump", p(&log), "--context", "3"]).code,
        2,
        "--context needs --around"
    );
}

#[test]
fn json_lines_parse_and_carry_every_field() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let r = replay(&["dump", "--json", p(&log)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len() as u64, EVENTS);
    for (i, e) in v.iter().enumerate() {
        assert_eq!(e["seq"], i as u64);
    }
    assert_eq!(
        v[0],
        serde_json::json!({"seq":0,"thread":0,"thread_name":"main","kind":"c.time","site":"main.c:10","digest":null,"payload":{"type":"int","value":1000}})
    );
    let read = &v[6];
    assert_eq!(read["kind"], "c.read");
    assert_eq!(
        read["payload"],
        serde_json::json!({"type":"ret","ret":7,"errno":0,"data":"line 1\n"})
    );
    let want = format!(
        "{:016x}",
        replay_core::digest(&[b"/etc/data", &1u64.to_le_bytes()])
    );
    assert_eq!(read["digest"], want.as_str());
    assert_eq!(
        v[305]["payload"],
        serde_json::json!({"type":"uint","value":0})
    );
    assert_eq!(v[5]["payload"]["type"], "float");
}

#[test]
fn cut_log_dumps_what_is_readable_then_exits_1() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let bytes = std::fs::read(&log).unwrap();
    let f = frames(&bytes);
    // Cut in the middle of the third chunk: the first two chunks are still shown.
    let (c, _, len) = f[3];
    let cut = write(d.path(), "cut.replay", &bytes[..c + len / 2]);
    let whole_chunks = replay(&["dump", p(&write(d.path(), "two.replay", &bytes[..c]))]);
    let r = replay(&["dump", p(&cut)]);
    assert_eq!(r.code, 1);
    assert!(!r.stdout.is_empty());
    assert_eq!(r.stdout, whole_chunks.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(&format!(
            "replay: {}: cut at offset {c}: last frame is incomplete",
            p(&cut)
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn closed_pipe_is_silent_success() {
    let d = tempfile::tempdir().unwrap();
    let log = big(&d.path().join("big.replay"), 200_000);
    let mut child = Command::new(BIN)
        .args(["dump", p(&log)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the pipe closes long before 200000 lines are written.
    assert!(first.starts_with("#0 "), "{first}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn corrupt_chunk_stops_the_dump_with_its_offset() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let mut bytes = std::fs::read(&log).unwrap();
    let f = frames(&bytes);
    let (c, _, len) = f[2];
    bytes[c + len - 1] ^= 0xff;
    let bad = write(d.path(), "bad.replay", &bytes);
    let r = replay(&["dump", p(&bad)]);
    assert_eq!(r.code, 1);
    assert_eq!(
        seqs(&r.stdout),
        (0..5).collect::<Vec<_>>(),
        "only the chunk before the corrupt one"
    );
    assert!(
        r.stderr
            .starts_with(&format!("replay: {}: corrupt at offset {c}: ", p(&bad))),
        "{}",
        r.stderr
    );
}

#[test]
fn a_recording_directory_dumps_its_one_process_log_or_names_its_logs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    standard(&dir.join("1-app.replay"), None);
    let whole = replay(&["dump", p(&dir.join("1-app.replay"))]);
    let r = replay(&["dump", p(&dir)]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, whole.stdout.as_str()),
        "{}",
        r.stderr
    );
    // Several processes: one line naming them, exit 3, nothing dumped.
    standard(&dir.join("1.1-child.replay"), None);
    let r = replay(&["dump", p(&dir)]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains(
            "a recording of 2 processes; give one of its logs: 1-app.replay, 1.1-child.replay"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}
