//! Core benchmarks. Prints per-event figures and ratios; run with
//! `cargo run --release -p replay-bench` (or `bash bench/run.sh` for every front end).
//!
//! Figures are medians of several runs in one process, so they are comparable to each
//! other; they are not asserted anywhere (timing belongs in benchmarks, not tests).

use replay_core::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

const N: u64 = 20_000_000;
const RUNS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn recorder(path: &std::path::Path) -> Recorder {
    Recorder::open(RecordConfig {
        path: path.to_path_buf(),
        header: HeaderInfo::for_this_process("bench", "", vec![]),
        sync: false,
        flush: Duration::from_millis(100),
        main_thread: "main".into(),
        compress: 1,
    })
    .expect("create log")
}

fn mono_ns() -> u64 {
    let mut ts = libc_timespec();
    // SAFETY: clock_gettime writes into the valid timespec we pass.
    unsafe { clock_gettime(1, &mut ts) };
    ts.0 as u64 * 1_000_000_000 + ts.1 as u64
}

#[repr(C)]
struct Timespec(i64, i64);
fn libc_timespec() -> Timespec {
    Timespec(0, 0)
}
extern "C" {
    fn clock_gettime(clk: i32, ts: *mut Timespec) -> i32;
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bench.replay");
    println!("replay core benchmark: {N} events per run, median of {RUNS} runs");
    // `BENCH_ONLY=output` runs the output figure alone (to profile it).
    if std::env::var("BENCH_ONLY").as_deref() != Ok("output") {
        core_figures(&path);
    }
    output_figure(&path);
}

fn core_figures(path: &std::path::Path) {
    let path = path.to_path_buf();

    // 1. Append of 8-byte values on one thread, including the final flush and close.
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let r = recorder(&path);
        let k = r.intern("bench.value");
        let t = Instant::now();
        for i in 0..N {
            r.record(
                k,
                0,
                None,
                PayloadRef::Uint(black_box(i.wrapping_mul(0x9e37_79b9))),
            );
        }
        r.finish().expect("finish");
        rates.push(N as f64 / t.elapsed().as_secs_f64());
    }
    let append = median(rates);
    println!("core.append      {:>8.1} M events/s  {:>6.1} ns/event  (8-byte values, one thread, incl. flush+close)", append / 1e6, 1e9 / append);

    // 2. Read: the ordered reader (`Ordered`, what `replay verify`, `dump` and `info` use),
    // every event decoded and handed out in sequence order.
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let n = Ordered::new(LogReader::open(&path).expect("open")).fold(0u64, |n, e| {
            black_box(e.seq);
            n + 1
        });
        assert_eq!(n, N);
        rates.push(N as f64 / t.elapsed().as_secs_f64());
    }
    let decode = median(rates);
    println!(
        "core.read        {:>8.1} M events/s  {:>6.1} ns/event  (Ordered, decode every event, one thread)",
        decode / 1e6,
        1e9 / decode
    );
    verify_figure(&path, "one thread");

    // 3. Replay: Replayer::next with verification, strict and relaxed.
    for order in [Order::Strict, Order::Relaxed] {
        let mut rates = Vec::new();
        for _ in 0..RUNS {
            let t = Instant::now();
            let rp = Replayer::open(ReplayConfig {
                path: path.clone(),
                order,
                timeout: Duration::from_secs(10),
                unordered: Vec::new(),
            })
            .expect("open");
            let k = rp.intern("bench.value");
            for _ in 0..N {
                black_box(rp.next(k, 0, None).expect("replay"));
            }
            rp.finish().expect("leftover");
            rates.push(N as f64 / t.elapsed().as_secs_f64());
        }
        let rate = median(rates);
        println!(
            "core.replay.{:<7}{:>7.1} M events/s  {:>6.1} ns/event  (Replayer::next, verified)",
            format!("{order:?}").to_lowercase(),
            rate / 1e6,
            1e9 / rate
        );
    }

    // 4. The same over a log of 4 threads recording at once: the ordered reader's k-way merge.
    let threads = 4u64;
    let r = recorder(&path);
    let k = r.intern("bench.value");
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for i in 0..N / threads {
                    r.record(k, 0, None, PayloadRef::Uint(i.wrapping_mul(0x9e37_79b9)));
                }
            });
        }
    });
    r.finish().expect("finish");
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let n = Ordered::new(LogReader::open(&path).expect("open")).fold(0u64, |n, e| {
            black_box(e.seq);
            n + 1
        });
        assert_eq!(n, N);
        rates.push(N as f64 / t.elapsed().as_secs_f64());
    }
    let rate = median(rates);
    println!(
        "core.read.4thr   {:>8.1} M events/s  {:>6.1} ns/event  (Ordered over 4 threads' interleaved runs)",
        rate / 1e6,
        1e9 / rate
    );
    verify_figure(&path, "4 threads");

    // 5. Size of a monotonic clock stream.
    let r = recorder(&path);
    let k = r.intern("c.clock_gettime");
    let n = 5_000_000u64;
    let bare = Instant::now();
    let mut sink = 0u64;
    for _ in 0..n {
        sink = sink.wrapping_add(mono_ns());
    }
    let bare = bare.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..n {
        r.record(k, 0, None, PayloadRef::Uint(mono_ns()));
    }
    let rec = t.elapsed().as_secs_f64();
    black_box(sink);
    r.finish().expect("finish");
    let size = std::fs::metadata(&path).expect("stat").len();
    println!(
        "clock.size       {:>8.2} bytes/event  ({} events of CLOCK_MONOTONIC ns, {} bytes on disk)",
        size as f64 / n as f64,
        n,
        size
    );
    println!(
        "clock.record     {:>8.2}x bare clock  ({:.1} ns bare, {:.1} ns read+record)",
        rec / bare,
        bare * 1e9 / n as f64,
        rec * 1e9 / n as f64
    );
}

/// `replay verify LOG` (the CLI binary beside this one, as a whole process) on the log just
/// written; skipped when the CLI is not built.
fn verify_figure(path: &std::path::Path, what: &str) {
    let Some(cli) = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.join("replay")))
        .filter(|c| c.is_file())
    else {
        println!(
            "cli.verify       (skipped: build the CLI, `cargo build --release -p replay-cli`)"
        );
        return;
    };
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let out = std::process::Command::new(&cli)
            .arg("verify")
            .arg(path)
            .output()
            .expect("run replay verify");
        assert!(out.status.success(), "replay verify: {out:?}");
        rates.push(N as f64 / t.elapsed().as_secs_f64());
    }
    let rate = median(rates);
    println!(
        "cli.verify       {:>8.1} M events/s  {:>6.1} ns/event  (`replay verify`, whole process, {what})",
        rate / 1e6,
        1e9 / rate
    );
}

/// Output verification: `Core::output` per write of a 36-byte line, record and replay (what
/// a front end adds to each write to stdout).
fn output_figure(path: &std::path::Path) {
    let lines: Vec<String> = (0..1000)
        .map(|i| format!("line {i:>6} of the program's output\n"))
        .collect();
    let writes = 2_000_000u64;
    let fe = session::Frontend {
        runtime: "bench",
        runtime_version: "",
        program: "bench",
        default_log: "unused",
        output: true,
        per_kind: false,
        argv: None,
    };
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..RUNS {
        for (i, mode) in ["record", "replay"].into_iter().enumerate() {
            let mut o = Options::default();
            o.set("mode", Some(mode)).expect("mode");
            o.set("log", Some(path.to_str().expect("utf-8 path")))
                .expect("log");
            let core = Core::start(o, &fe).expect("start").expect("on");
            let t = Instant::now();
            for w in 0..writes {
                let line = &lines[(w % 1000) as usize];
                let v = core.output(Stream::Stdout, line.as_bytes(), &|| None);
                assert!(matches!(v, Verdict::Live), "{v:?}");
            }
            core.shutdown().expect("shutdown");
            times[i].push(t.elapsed().as_secs_f64() * 1e9 / writes as f64);
        }
    }
    println!(
        "output.write     {:>8.1} ns record  {:>6.1} ns replay  (Core::output per 36-byte write, incl. close)",
        median(times[0].clone()),
        median(times[1].clone())
    );
}
