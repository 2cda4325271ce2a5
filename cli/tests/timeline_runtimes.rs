//! `replay timeline` on real recordings of C, Java and Node: a program reads its clock, waits
//! 120 ms three times and reads it again; in the trace each clock read sits at the time its
//! recorded value says (`args.time` "clock"), so the gaps the program measured are the gaps
//! on the timeline, to well under a millisecond, although the log's own time marks are 100 ms
//! apart (per flush) and interpolation alone would spread the reads evenly.
//!
//! Needs `java`, `javac`, `node` and `cc` on PATH and `cargo build --release --workspace`.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;

const C_GAPS: &str = r#"
#include "replay.h"
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static long long now(void) {
    struct timespec ts;
    REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void) {
    if (replay_init_from_env() != 0) return 2;
    long long t0 = now();
    for (int i = 0; i < 3; i++) {
        usleep(120000);
        printf("%lld\n", now() - t0);
    }
    return 0;
}
"#;

const JAVA_GAPS: &str = r#"
public class Gaps {
    public static void main(String[] a) throws Exception {
        long t0 = System.nanoTime();
        for (int i = 0; i < 3; i++) {
            long until = System.currentTimeMillis() + 120;
            while (System.currentTimeMillis() < until) {
                Thread.onSpinWait();
            }
            System.out.println(System.nanoTime() - t0);
        }
    }
}
"#;

const NODE_GAPS: &str = r#"
const t0 = process.hrtime.bigint();
let i = 0;
function step() {
  const until = Date.now() + 120;
  while (Date.now() < until) {}
  console.log(String(process.hrtime.bigint() - t0));
  if (++i < 3) setImmediate(step);
}
step();
"#;

/// Records `cmd` in `dir` into `dir/gaps.replay` with the launcher; returns the program's
/// output: one line per gap, ns since its first clock read.
fn record(dir: &Path, cmd: &[&str]) -> Vec<i128> {
    let log = dir.join("gaps.replay");
    let o = Command::new(BIN)
        .current_dir(dir)
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("NODE_OPTIONS")
        .args(["record", "--log", p(&log), "--"])
        .args(cmd)
        .output()
        .expect("run replay");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{cmd:?}: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out.lines().map(|l| l.trim().parse().unwrap()).collect()
}

/// The trace times (ns) of the events of `kind`, with whether each was anchored by its clock
/// value, in order.
fn times(dir: &Path, kind: &str) -> Vec<(i128, bool)> {
    let log = dir.join("gaps.replay");
    let r = replay(&["timeline", p(&log), "-o", "-"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    j["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == kind)
        .map(|e| {
            // µs with three decimals: well inside an f64's precision at these magnitudes.
            let ns = (e["ts"].as_f64().unwrap() * 1000.0).round() as i128;
            (ns, e["args"]["time"] == "clock")
        })
        .collect()
}

/// The program's measured gaps are the timeline's, within 0.2 ms.
fn check(what: &str, measured: &[i128], t: &[(i128, bool)]) {
    assert_eq!(measured.len(), 3, "{what}: {measured:?}");
    assert!(t.len() >= 4, "{what}: {t:?}");
    assert!(
        t.iter().all(|x| x.1),
        "{what}: a clock read was not anchored: {t:?}"
    );
    for (i, m) in measured.iter().enumerate() {
        assert!(*m >= 110_000_000, "{what}: gap {i} is {m} ns");
    }
    // Some read is the program's t0 (a runtime may read the clock before the program does),
    // and each printed gap is the distance to a later read of that clock.
    let fits = |base: i128| {
        measured
            .iter()
            .all(|m| t.iter().any(|x| (x.0 - base - m).abs() < 200_000))
    };
    assert!(
        t.iter().any(|x| fits(x.0)),
        "{what}: the gaps {measured:?} are not on the timeline: {t:?}"
    );
}

#[test]
fn c_clock_reads_sit_at_their_recorded_times() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    compile_c(dir, "gaps", C_GAPS);
    let m = record(dir, &["./gaps"]);
    check("c", &m, &times(dir, "c.clock_gettime"));
}

#[test]
fn java_clock_reads_sit_at_their_recorded_times() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("Gaps.java"), JAVA_GAPS).unwrap();
    let c = Command::new("javac")
        .arg("Gaps.java")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    let m = record(dir, &["java", "-cp", ".", "Gaps"]);
    check("java", &m, &times(dir, "java.lang.System.nanoTime"));
}

#[test]
fn node_clock_reads_sit_at_their_recorded_times() {
    // Node's reads are numbered when a drain takes them, and the log's marks are the
    // drains' (so a slow flusher round on a loaded machine no longer leaves reads before
    // their marks: it did in 2 of 8 full-suite runs and in CI). A read whose thread was
    // descheduled between reading the clock and publishing the value still lands after a
    // later drain's mark; rare with four reads. One more recording then; two in a row
    // failing is a real fault.
    for attempt in 0..2 {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        std::fs::write(dir.join("gaps.js"), NODE_GAPS).unwrap();
        let m = record(dir, &["node", "gaps.js"]);
        let t = times(dir, "node.process.hrtime.bigint");
        if attempt == 0 && !t.iter().all(|x| x.1) {
            continue;
        }
        check("node", &m, &t);
        return;
    }
}
