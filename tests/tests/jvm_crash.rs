//! Crash safety of the JVM agent (tests/java/Crash.java), on every JDK present (17 and 25):
//! - a recording killed with SIGKILL at a random moment replays up to within one flush
//!   interval of the last line the program printed, then ends with the core's one line
//!   ("the recording ends at event #N"), although the main thread's events were taken while
//!   it then waited in join() and another thread's while it printed nothing;
//! - SIGTERM/SIGINT: the JVM's shutdown writes every thread's events (`replay verify` finds
//!   none missing), and the exit status is the one the JVM gives without replay (143/130).
//!
//! Lost time is measured from the program's own output: each line carries the clock value the
//! recorded run read; the replayed run prints the recorded values, so the last line it
//! reaches says how much of the recording the kill lost.
//!
//! Needs `cargo build --release -p replay-jvm -p replay-cli` first.

use replay_tests::jvm::{agent, jdks, name, Jdk};
use replay_tests::{release_artifact, run, wait_bounded, Finished};
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FLUSH_MS: u64 = 100;
const RUNS: usize = 10;
/// Scheduling slack on top of the flush interval: on a loaded 2-core machine the flusher
/// thread (and the JVM's threads) may wait for a core. The flusher drains the threads'
/// buffers every half interval, so the loss measured is typically 0-60 ms; a kill lands
/// between the clock read and the flusher's next round, which a busy machine can delay.
const SLACK_MS: u64 = 100;

/// A random delay in `[lo, hi)` ms (no RNG crate: the standard hasher's random keys).
fn random_ms(lo: u64, hi: u64) -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(lo);
    lo + h.finish() % (hi - lo)
}

fn java(jdk: &Jdk, dir: &Path, opts: &str, args: &[&str]) -> Command {
    let mut c = Command::new(jdk.home.join("bin/java"));
    c.current_dir(dir)
        .arg(format!("-agentpath:{}={opts}", agent().display()))
        .arg("-cp")
        .arg(&jdk.classes)
        .arg("Crash")
        .args(args)
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS");
    c
}

/// What a recording printed before the signal ended it.
struct Cut {
    lines: Vec<String>,
    status: std::process::ExitStatus,
    stderr: String,
}

/// Records Crash in `dir`, sends `signal` (`None`: SIGKILL) `after` ms after the worker's
/// first line, and waits for the end.
fn record_and_signal(
    jdk: &Jdk,
    dir: &Path,
    log: &Path,
    extra: &str,
    signal: Option<&str>,
    after: u64,
) -> Cut {
    let opts = format!("record,log={},flush={FLUSH_MS}ms{extra}", log.display());
    let mut child = java(jdk, dir, &opts, &[])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start java");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let out = child.stdout.take().unwrap();
    let l2 = lines.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            l2.lock().unwrap().push(line);
        }
    });
    let mut err = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    // The worker's first line ("0 ..."), then the delay.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !lines.lock().unwrap().iter().any(|l| l.starts_with("0 ")) {
        assert!(
            Instant::now() < deadline,
            "{}: no output from the recording",
            name(jdk)
        );
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(after));
    match signal {
        None => child.kill().expect("kill"),
        Some(s) => {
            let ok = Command::new("kill")
                .arg(format!("-{s}"))
                .arg(child.id().to_string())
                .status()
                .expect("kill");
            assert!(ok.success());
        }
    }
    let status =
        wait_bounded(&mut child, Duration::from_secs(60)).expect("the recording did not end");
    reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    let lines = lines.lock().unwrap().clone();
    Cut {
        lines,
        status,
        stderr,
    }
}

/// The clock value of a worker line "i millis elapsed".
fn millis(line: &str) -> Option<u64> {
    let mut w = line.split(' ');
    w.next()?.parse::<u64>().ok()?;
    w.next()?.parse().ok()
}

fn replay(jdk: &Jdk, dir: &Path, log: &Path) -> Finished {
    run(&mut java(
        jdk,
        dir,
        &format!("replay,log={}", log.display()),
        &[],
    ))
}

fn cli(args: &[&str], log: &Path) -> Finished {
    run(Command::new(release_artifact("replay")).args(args).arg(log))
}

#[test]
fn sigkill_at_a_random_moment_loses_at_most_one_flush_interval() {
    for jdk in jdks() {
        let mut losses = Vec::new();
        for i in 0..RUNS {
            let dir = tempfile::tempdir().unwrap();
            let input = format!("recorded-{i}");
            std::fs::write(dir.path().join("crash-input.txt"), &input).unwrap();
            let log = dir.path().join("kill.replay");
            // Every other run without output events: the threads' clock events then never
            // ride along with a write's hand-over.
            let extra = if i % 2 == 0 { "" } else { ",verify-output=off" };
            let cut = record_and_signal(jdk, dir.path(), &log, extra, None, random_ms(300, 1500));
            let what = format!("{} run {i}{extra}", name(jdk));
            assert_eq!(
                cut.status.code(),
                None,
                "{what}: not killed: {}",
                cut.stderr
            );
            assert!(
                cut.stderr.trim().is_empty(),
                "{what}: the recording said: {}",
                cut.stderr
            );
            assert_eq!(cut.lines[0], format!("input {input}"), "{what}");
            let printed: Vec<u64> = cut.lines.iter().filter_map(|l| millis(l)).collect();
            assert!(
                printed.len() > 10,
                "{what}: too few lines before the kill: {:?}",
                cut.lines
            );

            // The outside world changed: the file main read holds something else now.
            std::fs::write(dir.path().join("crash-input.txt"), "changed").unwrap();
            let r = replay(jdk, dir.path(), &log);
            let out = r.stdout_text();
            let replayed: Vec<&str> = out.lines().collect();
            // Replay never lies: what it printed is what the recording printed, in order.
            assert!(
                replayed.len() <= cut.lines.len() && replayed[..] == cut.lines[..replayed.len()],
                "{what}: replay printed other lines:\n{out}\nstderr: {}",
                r.stderr
            );
            let ends = r
                .stderr_lines()
                .into_iter()
                .filter(|l| l.starts_with("replay: the recording ends at event #"))
                .count();
            assert_eq!(ends, 1, "{what}: replay's stderr:\n{}", r.stderr);
            // Nothing else, but the note that a log without output compares none.
            let other = r
                .stderr_lines()
                .into_iter()
                .filter(|l| !(l.starts_with("replay: note: ") && l.contains("holds no output")))
                .count();
            assert_eq!(other, 1, "{what}: replay's stderr:\n{}", r.stderr);
            let last = replayed.iter().rev().find_map(|l| millis(l));
            let Some(last) = last else {
                panic!(
                    "{what}: replay printed no worker line of {} ({} ms of output lost):\n{out}\n{}",
                    printed.len(),
                    printed[printed.len() - 1] - printed[0],
                    r.stderr
                )
            };
            losses.push(printed[printed.len() - 1] - last);
        }
        eprintln!(
            "{}: ms lost per SIGKILL (flush={FLUSH_MS}ms): {losses:?}",
            name(jdk)
        );
        let worst = *losses.iter().max().unwrap();
        assert!(
            worst <= FLUSH_MS + SLACK_MS,
            "{}: a kill lost {worst} ms of recording with flush={FLUSH_MS}ms: {losses:?}",
            name(jdk)
        );
        let mut sorted = losses.clone();
        sorted.sort();
        assert!(
            sorted[sorted.len() / 2] <= FLUSH_MS,
            "{}: the median kill lost more than one flush interval: {losses:?}",
            name(jdk)
        );
    }
}

#[test]
fn sigterm_and_sigint_write_every_event_and_keep_the_exit_status() {
    for jdk in jdks() {
        for (signal, status) in [("TERM", 143), ("INT", 130)] {
            for i in 0..3 {
                let dir = tempfile::tempdir().unwrap();
                std::fs::write(dir.path().join("crash-input.txt"), "x").unwrap();
                let log = dir.path().join("signal.replay");
                let cut =
                    record_and_signal(jdk, dir.path(), &log, "", Some(signal), random_ms(200, 900));
                let what = format!("{} SIG{signal} run {i}", name(jdk));
                assert_eq!(cut.status.code(), Some(status), "{what}: {}", cut.stderr);
                assert!(
                    cut.stderr.trim().is_empty(),
                    "{what}: the recording said: {}",
                    cut.stderr
                );
                let v = cli(&["verify"], &log);
                assert_eq!(v.code(), 0, "{what}: {}{}", v.stdout_text(), v.stderr);
                assert!(
                    v.stdout_text().contains("complete"),
                    "{what}: {}",
                    v.stdout_text()
                );
                let info = cli(&["info"], &log).stdout_text();
                assert!(
                    info.lines()
                        .any(|l| l.split_whitespace().collect::<Vec<_>>()
                            == ["exit:", &status.to_string()]),
                    "{what}: {info}"
                );
                if i == 0 {
                    // Replay prints what the recording printed up to its last event, where
                    // the recorded signal is raised again (src/signals.rs): the process ends
                    // by it, with the recorded status. The recorded program ran on while its
                    // log was closed (a line or two, not in the log: after the signal).
                    let r = replay(jdk, dir.path(), &log);
                    let out = r.stdout_text();
                    let replayed: Vec<&str> = out.lines().collect();
                    assert!(
                        replayed.len() <= cut.lines.len()
                            && replayed[..] == cut.lines[..replayed.len()],
                        "{what}: replay printed:\n{out}\nrecorded:\n{:?}\n{}",
                        cut.lines,
                        r.stderr
                    );
                    let printed: Vec<u64> = cut.lines.iter().filter_map(|l| millis(l)).collect();
                    let last = replayed.iter().rev().find_map(|l| millis(l)).unwrap_or(0);
                    let after = printed.last().copied().unwrap_or(0).saturating_sub(last);
                    assert!(
                        after <= FLUSH_MS,
                        "{what}: the last {after} ms the recording printed are not in its log:\n{out}\n{}",
                        r.stderr
                    );
                    assert_eq!(r.code(), status, "{what}: {}", r.stderr);
                }
            }
        }
    }
}

/// A recording that ends normally is unchanged by the buffers' drain: every event once,
/// and replay reproduces it exactly.
#[test]
fn a_normal_end_records_every_thread_and_replays_exactly() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("crash-input.txt"), "normal").unwrap();
        let log = dir.path().join("normal.replay");
        let rec = run(&mut java(
            jdk,
            dir.path(),
            &format!("record,log={},flush=20ms", log.display()),
            &["exit", "150"],
        ));
        assert_eq!(rec.code(), 0, "{}: {}", name(jdk), rec.stderr);
        assert!(rec.stderr.trim().is_empty(), "{}", rec.stderr);
        let v = cli(&["verify"], &log);
        assert_eq!(
            v.code(),
            0,
            "{}: {}{}",
            name(jdk),
            v.stdout_text(),
            v.stderr
        );
        std::fs::write(dir.path().join("crash-input.txt"), "changed").unwrap();
        let mut c = java(
            jdk,
            dir.path(),
            &format!("replay,log={}", log.display()),
            &["exit", "150"],
        );
        let r = run(&mut c);
        assert_eq!(r.code(), 0, "{}: {}", name(jdk), r.stderr);
        assert_eq!(r.stdout_text(), rec.stdout_text(), "{}", name(jdk));
        assert!(r.stderr.trim().is_empty(), "{}", r.stderr);
    }
}
