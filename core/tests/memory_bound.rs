//! Memory stays bounded however long a recording runs: chunks waiting for the flusher are
//! capped, so a long recording's peak memory does not grow with its length. Its own test
//! binary, so the process's peak memory is this test's alone.

mod common;
use replay_core::PayloadRef;

fn peak_rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_long_recording_does_not_grow_memory() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("long.replay");
    let r = common::recorder(&p);
    let k = r.intern("v");
    let data = [7u8; 64];
    // 30 M events with 64-byte payloads: unbounded buffering would need several GiB.
    for i in 0..30_000_000u64 {
        if i % 4 == 0 {
            r.record(k, 0, None, PayloadRef::Bytes(&data));
        } else {
            r.record(k, 0, None, PayloadRef::Uint(i));
        }
    }
    let t = r.finish().unwrap();
    assert_eq!(t.events, 30_000_000);
    let peak = peak_rss_kib();
    assert!(
        peak < 256 * 1024,
        "peak memory {peak} KiB for a 30 M event recording"
    );
}
