//! A recorder killed with SIGKILL leaves a log that reads back up to its last whole chunk,
//! holding at least every event the program had flushed.

use replay_core::{End, LogReader};
use replay_tests::{compile_c, replay_command, Running};
use std::time::Duration;

#[test]
fn a_log_cut_by_kill_9_reads_back_with_everything_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("killed", "killed", dir.path(), &[]);
    let log = dir.path().join("killed.replay");
    let mut p = Running::spawn(&mut replay_command(&exe, "record", &log));
    let flushed_line = p.line(Duration::from_secs(60));
    let flushed: u64 = flushed_line
        .strip_prefix("flushed ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected line {flushed_line:?}"));
    assert_eq!(p.line(Duration::from_secs(60)), "ready");
    // It keeps recording after "ready"; the kill lands in the middle of that.
    let status = p.kill();
    assert!(
        status.code().is_none(),
        "the program was not killed: {status:?}"
    );

    let mut r = LogReader::open(&log).expect("the header of a killed recording reads back");
    let mut last = None;
    while let Some(b) = r.next_batch().expect("no chunk before the cut is corrupt") {
        for run in &b.runs {
            for e in &run.events {
                last = Some(last.map_or(e.seq, |l: u64| l.max(e.seq)));
            }
        }
    }
    assert!(matches!(r.end(), Some(End::Cut { .. })), "{:?}", r.end());
    let events = r.events_read();
    assert!(events > 0);
    assert!(
        events >= flushed,
        "{events} events in the log, the program had flushed {flushed}"
    );
    assert_eq!(
        last,
        Some(events - 1),
        "one thread: the events read are exactly #0..#{}",
        events - 1
    );
}
