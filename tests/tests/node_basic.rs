//! The Node front end, end to end: real `node` processes load the package (node-addon's
//! index.js with target/release/libreplay_node.so as replay_node.node) through `--require`,
//! record a script, and replay it later, unchanged and changed.

use replay_core::{LogReader, Ordered, Payload};
use replay_tests::{command, node_package, replay_command, run, Finished};
use std::path::{Path, PathBuf};
use std::process::Command;

fn package(dir: &Path) -> PathBuf {
    node_package(dir)
}

/// Prints a line per hooked call kind, with values that differ on every live run.
const SCRIPT: &str = r#"
const t0 = Date.now();
const d = new Date();
console.log('iso', d.toISOString());
console.log('string', Date());
const p0 = performance.now();
let r = [];
for (let i = 0; i < 10000; i++) r.push(Math.random());
console.log('random', r[0], r[1], r[4321], r[9999]);
// Crosses the JS-side batch boundary more than once: the order must survive batching.
let acc = 0;
for (let i = 0; i < 9000; i++) acc += (Date.now() - t0) + Math.random();
console.log('acc', acc);
console.log('perf', performance.now() - p0, performance.now());
console.log('delta', Date.now() - t0);
console.log('compat', new Date(0).toISOString(), new Date() instanceof Date,
  require('fs').statSync('.').mtime instanceof Date, Date.UTC(2020, 1, 29),
  Date.parse('2021-03-04T05:06:07Z'), Date.name, Date.length,
  Object.prototype.toString.call(new Date()), typeof Date(), new Date(2020, 0, 1).getFullYear());
class Sub extends Date {}
console.log('subclass', new Sub(5).getTime(), new Sub() instanceof Date);
// After the record-side flush timer ran a few times: it must not add events of its own.
setTimeout(() => console.log('later', Date.now() - t0), 350);
"#;

fn node(pkg: &Path, mode: &str, log: &Path, script: &Path) -> Finished {
    let mut c = replay_command(Path::new("node"), mode, log);
    c.arg("--require").arg(pkg).arg(script);
    run(&mut c)
}

fn kinds(log: &Path) -> Vec<(String, Payload)> {
    let mut it = Ordered::new(LogReader::open(log).expect("log opens"));
    let mut v = Vec::new();
    while let Some(e) = it.next() {
        let name = it.reader.strings().name(e.kind).to_string();
        // Side records (the program's source digests) are out of the event order.
        if !name.starts_with("side.") {
            v.push((name, e.payload));
        }
    }
    assert!(it.error().is_none(), "log read error: {:?}", it.error());
    v
}

fn have_node() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("node is not installed: skipping the Node tests");
    }
    ok
}

#[test]
fn replay_reproduces_clock_and_random_output_and_a_changed_script_diverges() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("app.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let log = dir.path().join("app.replay");

    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "record failed: {}", rec.stderr);
    assert!(rec.stderr_lines().is_empty(), "record said: {}", rec.stderr);
    let out = rec.stdout_text();
    assert!(
        out.contains("compat 1970-01-01T00:00:00.000Z true true 1582934400000 1614834367000 Date 7 [object Date] string 2020"),
        "{out}"
    );
    assert!(out.contains("subclass 5 true\nlater "), "{out}");

    // A live run prints different values, so equal output below means replay served them.
    let live = run(command(Path::new("node"))
        .arg("--require")
        .arg(&pkg)
        .arg(&script));
    assert_eq!(live.code(), 0, "{}", live.stderr);
    assert_ne!(
        live.stdout, rec.stdout,
        "two live runs printed the same values"
    );

    let events = kinds(&log);
    let count = |k: &str| events.iter().filter(|(n, _)| n == k).count();
    // Math.random is a generator seeded from the log: its stream is the seed (16 bytes, at
    // the first call) and then checkpoints, the number of calls so far at each batch flush
    // that saw calls (a few here: batch flushes, the 100 ms timer, exit), ending at 19000.
    let random: Vec<&Payload> = events
        .iter()
        .filter(|(n, _)| n == "node.Math.random")
        .map(|(_, p)| p)
        .collect();
    assert!(
        matches!(random[0], Payload::Bytes { data } if data.len() == 16),
        "{:?}",
        random[0]
    );
    let checkpoints: Vec<u64> = random[1..]
        .iter()
        .map(|p| match p {
            Payload::Uint { value } => *value,
            p => panic!("not a checkpoint: {p:?}"),
        })
        .collect();
    assert!(
        checkpoints.windows(2).all(|w| w[0] < w[1]) && checkpoints.last() == Some(&19000),
        "{checkpoints:?}"
    );
    assert!(checkpoints.len() < 20, "{checkpoints:?}");
    assert_eq!(count("node.Date.now"), 9003);
    assert_eq!(count("node.performance.now"), 3);
    // new Date() three times, Date() twice, new Sub() once (new Date(0) and friends read no
    // clock).
    assert_eq!(count("node.Date"), 6);
    // The script's one statSync is an input too (lib/fs.js).
    assert_eq!(count("node.fs.statSync"), 1);
    // Each console.log line is an event of its own (output verification).
    assert_eq!(count("output.stdout"), 9);
    // The one setTimeout's callback ran at a recorded place in the event loop (lib/timers.js).
    assert_eq!(count("node.done"), 1);
    assert_eq!(events.len(), random.len() + 9003 + 3 + 6 + 1 + 9 + 1);
    assert!(
        matches!(events[0], (ref k, Payload::Int { .. }) if k == "node.Date.now"),
        "{:?}",
        events[0]
    );

    std::thread::sleep(std::time::Duration::from_millis(50));
    let rep = node(&pkg, "replay", &log, &script);
    assert_eq!(rep.code(), 0, "replay failed: {}", rep.stderr);
    assert_eq!(rep.stdout_text(), out, "replay printed something else");
    assert!(rep.stderr_lines().is_empty(), "replay said: {}", rep.stderr);

    // Each kind replays as its own ordered stream (the order between kinds is not enforced on
    // an event loop, see the README): one Math.random call more in the first loop takes the
    // values one ahead, and the last call of the second loop finds none left.
    // (Under the script's name: a log of another program is refused before it runs.)
    std::fs::create_dir(dir.path().join("changed")).unwrap();
    let changed = dir.path().join("changed/app.js");
    std::fs::write(&changed, SCRIPT.replace("i < 10000", "i < 10001")).unwrap();
    let div = node(&pkg, "replay", &log, &changed);
    assert_eq!(
        div.code(),
        86,
        "stdout {}\nstderr {}",
        div.stdout_text(),
        div.stderr
    );
    assert!(
        div.stderr.contains(
            "replay: DIVERGENCE: thread 0 \"main\" made a node.Math.random call after its 19000 recorded calls of that kind ran out"
        ) && div.stderr.contains("actual:   node.Math.random")
            && div.stderr.contains("changed/app.js:12"),
        "{}",
        div.stderr
    );
    assert!(
        div.stderr.contains("exiting with status 86"),
        "{}",
        div.stderr
    );
    // Output before the divergence was the recorded one, values taken in order.
    let first = |s: &str| s.lines().take(2).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(first(&div.stdout_text()), first(&out));
    assert_eq!(
        div.stdout_text().lines().count(),
        3,
        "{}",
        div.stdout_text()
    );

    // One Math.random call fewer than recorded: a divergence at exit against the last
    // checkpoint.
    // (It prints r[9999], which it no longer draws: output not compared.)
    std::fs::write(&changed, SCRIPT.replace("i < 10000", "i < 9999")).unwrap();
    let mut c = replay_command(Path::new("node"), "replay", &log);
    c.env("REPLAY_VERIFY_OUTPUT", "off")
        .arg("--require")
        .arg(&pkg)
        .arg(&changed);
    let left = run(&mut c);
    assert_eq!(left.code(), 86, "{}", left.stderr);
    assert!(
        left.stderr.contains("expected: node.Math.random -> 19000u")
            && left.stderr.contains("actual:   end of the program")
            && left.stderr.contains(
                "the program ended after 18999 Math.random calls; the recording made 19000"
            ),
        "{}",
        left.stderr
    );

    // A shorter program leaves events over: a divergence at exit (its output is not
    // compared: the first line would diverge first).
    std::fs::create_dir(dir.path().join("short")).unwrap();
    let short = dir.path().join("short/app.js");
    std::fs::write(&short, "console.log(Date.now() > 0);\n").unwrap();
    let mut c = replay_command(Path::new("node"), "replay", &log);
    c.env("REPLAY_VERIFY_OUTPUT", "off")
        .arg("--require")
        .arg(&pkg)
        .arg(&short);
    let left = run(&mut c);
    assert_eq!(left.code(), 86, "{}", left.stderr);
    assert_eq!(left.stdout_text(), "true\n");
    assert!(left.stderr.contains("DIVERGENCE"), "{}", left.stderr);
}

#[test]
fn bad_options_and_missing_logs_leave_the_program_running_live() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("app.js");
    std::fs::write(&script, "console.log('ran', new Date() instanceof Date);\n").unwrap();

    let missing = dir.path().join("none.replay");
    let r = node(&pkg, "replay", &missing, &script);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "ran true\n");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("replay: cannot replay"), "{lines:?}");

    let log = dir.path().join("a.replay");
    let mut c = replay_command(Path::new("node"), "record", &log);
    c.env("REPLAY_POLICY", "sometimes")
        .arg("--require")
        .arg(&pkg)
        .arg(&script);
    let r = run(&mut c);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "ran true\n");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("REPLAY_POLICY"), "{lines:?}");
    assert!(!log.exists());

    // A log that cannot be created: one line, and the program runs unrecorded.
    let bad = dir.path().join("no-such-dir").join("x.replay");
    let r = node(&pkg, "record", &bad, &script);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "ran true\n");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("replay: cannot create log")
            && lines[0].contains("runs without recording"),
        "{lines:?}"
    );

    // A worker thread loads the package too (--require applies to workers): its Math.random
    // is an event of its own logical thread (tests/node/worker.test.js covers the rest).
    let worker = dir.path().join("worker.js");
    std::fs::write(
        &worker,
        "const { Worker, isMainThread, parentPort } = require('worker_threads');\n\
         if (isMainThread) { new Worker(__filename).on('message', (m) => console.log('worker', m, Date.now() > 0)); }\n\
         else { parentPort.postMessage(typeof Math.random()); }\n",
    )
    .unwrap();
    let log = dir.path().join("w.replay");
    let r = node(&pkg, "record", &log, &worker);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "worker number true\n");
    let all = kinds(&log);
    // What the worker sent the main thread, in arrival order (lib/worker.js).
    let arrived: Vec<String> = all
        .iter()
        .filter(|e| e.0 == "node.done")
        .map(|e| format!("{:?}", e.1))
        .collect();
    assert_eq!(arrived.len(), 3, "{all:?}");
    for (a, t) in arrived.iter().zip(["online", "message", "exit"]) {
        assert!(a.contains("worker 1") && a.contains(t), "{all:?}");
    }
    let events: Vec<_> = all.into_iter().filter(|e| e.0 != "node.done").collect();
    // The worker's Math.random value, the main thread's Date.now and its one line of output.
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0].0, "node.Math.random.value", "{events:?}");
    assert_eq!(events[2].0, "output.stdout", "{events:?}");
    let rep = node(&pkg, "replay", &log, &worker);
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout_text(), "worker number true\n");
}

#[test]
fn the_type_declarations_match_the_exports() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let dts = std::fs::read_to_string(pkg.join("index.d.ts")).unwrap();
    // `export declare const NAME` / `export declare function NAME(`: name and JS type.
    let mut declared: Vec<String> = dts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("export declare "))
        .map(|l| {
            let (what, rest) = l.split_once(' ').expect("declaration");
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let ty = if what == "function" {
                "function"
            } else {
                "string"
            };
            format!("{name}:{ty}")
        })
        .collect();
    declared.sort();
    assert!(!declared.is_empty(), "no exports declared in index.d.ts");
    let script = dir.path().join("keys.js");
    std::fs::write(
        &script,
        "const r = require(process.argv[2]);\n\
         console.log(Object.keys(r).sort().map((k) => k + ':' + typeof r[k]).join(','), r.mode);\n",
    )
    .unwrap();
    for mode in ["off", "record"] {
        let log = dir.path().join("keys.replay");
        let mut c = replay_command(Path::new("node"), mode, &log);
        c.arg("--require").arg(&pkg).arg(&script).arg(&pkg);
        let r = run(&mut c);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        assert_eq!(
            r.stdout_text(),
            format!("{} {mode}\n", declared.join(",")),
            "exports of the package in mode {mode} differ from index.d.ts"
        );
    }
}

#[test]
fn warn_live_reports_and_runs_on_live() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("app.js");
    std::fs::write(&script, "console.log(Math.random(), Date.now() > 0);\n").unwrap();
    let log = dir.path().join("w.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let recorded_random = rec.stdout_text().split(' ').next().unwrap().to_string();

    // Math.random twice: the second call has no recorded value; warn-live reports it and
    // the rest runs live.
    std::fs::write(
        &script,
        "console.log(Math.random(), Math.random() < 1, Date.now() > 0);\n",
    )
    .unwrap();
    let mut c = replay_command(Path::new("node"), "replay", &log);
    c.env("REPLAY_POLICY", "warn-live")
        .arg("--require")
        .arg(&pkg)
        .arg(&script);
    let r = run(&mut c);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), format!("{recorded_random} true true\n"));
    assert!(
        r.stderr
            .contains("after its 1 recorded calls of that kind ran out")
            && r.stderr.contains("actual:   node.Math.random")
            && r.stderr.contains("policy warn-live"),
        "{}",
        r.stderr
    );
}

/// A recording can end with operations in flight: here a timer set for a minute, when the
/// program exits at the end of its stdin (which nothing records). Replay serves what was
/// recorded and ends the same way: the completion the recording never had is no divergence
/// while the program has not waited for it longer than the timeout.
#[test]
fn a_recording_that_ends_with_an_operation_in_flight_replays_to_its_end() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("inflight.js");
    std::fs::write(
        &script,
        r#"
setTimeout(() => console.log('a minute later'), 60000);
console.log('waiting', Date.now() > 0);
process.stdin.on('data', () => {}).on('end', () => {
  console.log('stdin ended');
  process.exit(0);
});
"#,
    )
    .unwrap();
    let log = dir.path().join("inflight.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    assert_eq!(rec.stdout_text(), "waiting true\nstdin ended\n");
    for _ in 0..3 {
        let rep = node(&pkg, "replay", &log, &script);
        assert_eq!(rep.code(), 0, "{}", rep.stderr);
        assert_eq!(rep.stdout_text(), rec.stdout_text());
        assert_eq!(rep.stderr, "");
    }
}

/// Changes of the file system run live in replay (their effect on disk is the program's
/// output) and return what the recording got: a directory the recording made exists now
/// and mkdirSync must not fail with EEXIST; an unlink that failed fails the same way and is
/// not made; mkdtempSync names the recorded directory and makes it.
#[test]
fn file_system_changes_return_their_recorded_outcome_and_still_happen() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pkg = package(d);
    let script = d.join("mk.js");
    std::fs::write(
        &script,
        r#"
const fs = require('fs');
process.chdir(__dirname);
try { fs.mkdirSync('newdir'); console.log('created'); } catch (e) { console.log('mkdir failed', e.code); }
if (!fs.existsSync('cache')) fs.mkdirSync('cache');
fs.writeFileSync('cache/a.txt', 'hello ' + Math.random());
const t = fs.mkdtempSync(__dirname + '/tmp-');
console.log('temp', t.slice(__dirname.length));
try { fs.unlinkSync('nothere'); console.log('unlinked'); } catch (e) { console.log('unlink failed', e.code); }
fs.renameSync('cache/a.txt', 'cache/b.txt');
fs.rmSync('newdir', { recursive: true });
console.log('done');
"#,
    )
    .unwrap();
    let log = d.join("mk.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let out = rec.stdout_text();
    assert!(out.starts_with("created\ntemp /tmp-"), "{out}");
    assert!(out.ends_with("unlink failed ENOENT\ndone\n"), "{out}");
    let temp = out
        .lines()
        .nth(1)
        .unwrap()
        .strip_prefix("temp /")
        .unwrap()
        .to_string();
    // Another world: the directory exists, the file to unlink too, the cache and the
    // temporary directory are gone.
    std::fs::create_dir(d.join("newdir")).unwrap();
    std::fs::write(d.join("nothere"), "x").unwrap();
    std::fs::remove_dir_all(d.join("cache")).unwrap();
    std::fs::remove_dir(d.join(&temp)).unwrap();
    let rep = node(&pkg, "replay", &log, &script);
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout_text(), out);
    // The changes that succeeded in the recording happened again; the failed one did not.
    assert!(d.join("cache/b.txt").is_file());
    assert!(d.join(&temp).is_dir());
    assert!(!d.join("newdir").exists());
    assert!(d.join("nothere").is_file());
}

/// A stack trace taken in a timer's or an immediate's callback (a test runner printing a
/// failing test's error) is the same in replay as in the recording: the package's frames and
/// the Node frames around them are left out of both (lib/stacks.js), so each stack is the
/// program's own frame.
#[test]
fn stack_traces_from_timer_callbacks_replay_the_same() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("stacks.js");
    std::fs::write(
        &script,
        r#"
setImmediate(() => console.log(new Error('immediate').stack));
setImmediate((a, b) => console.log(new Error('immediate ' + a + b).stack), 1, 2);
setTimeout(function named() { console.log(new Error('timeout').stack); }, 5);
setTimeout((x) => console.log(new Error('timeout ' + x).stack), 10, 'arg');
let n = 0;
const t = setInterval(() => {
  console.log(new Error('interval ' + n).stack);
  if (++n === 2) clearInterval(t);
}, 15);
"#,
    )
    .unwrap();
    let log = dir.path().join("stacks.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let out = rec.stdout_text();
    assert_eq!(out.matches("Error: ").count(), 6, "{out}");
    assert!(out.contains("at named ("), "{out}");
    assert!(!out.contains("lib/timers.js"), "{out}");
    assert!(!out.contains("listOnTimeout"), "{out}");
    let rep = node(&pkg, "replay", &log, &script);
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout_text(), out);
}

/// A worker thread's crypto random bytes replay like the main thread's (they ran live).
#[test]
fn a_workers_crypto_randoms_replay() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("w.js");
    std::fs::write(
        &script,
        r#"
const { Worker } = require('worker_threads');
const w = new Worker(`
  const c = require('crypto');
  console.log('worker', c.randomBytes(8).toString('hex'), c.randomUUID(), c.randomInt(1000000),
    Math.random().toFixed(6));
`, { eval: true });
w.on('exit', () => console.log('main', require('crypto').randomBytes(4).toString('hex')));
"#,
    )
    .unwrap();
    let log = dir.path().join("w.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let kinds = kinds(&log);
    assert!(
        kinds
            .iter()
            .filter(|(k, _)| k.starts_with("node.crypto."))
            .count()
            >= 4,
        "{kinds:?}"
    );
    for _ in 0..2 {
        let rep = node(&pkg, "replay", &log, &script);
        assert_eq!(rep.code(), 0, "{}", rep.stderr);
        assert_eq!(rep.stdout_text(), rec.stdout_text());
    }
}

/// What a timer callback does with `this` (Node's Timeout in the recording) acts on the
/// replayed timer: `clearInterval(this)` ends the interval, `this.refresh()` fires it again.
#[test]
fn a_timer_callback_clearing_or_refreshing_this_replays() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("this.js");
    std::fs::write(
        &script,
        r#"
let n = 0;
setInterval(function () {
  console.log('tick', ++n, Date.now() > 0);
  if (n === 3) clearInterval(this);
}, 5);
let r = 0;
setTimeout(function () {
  console.log('timeout', ++r, this.hasRef());
  if (r < 3) this.refresh();
}, 7);
"#,
    )
    .unwrap();
    let log = dir.path().join("this.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let out = rec.stdout_text();
    assert_eq!(out.matches("tick").count(), 3, "{out}");
    assert_eq!(out.matches("timeout").count(), 3, "{out}");
    let t = std::time::Instant::now();
    let rep = node(&pkg, "replay", &log, &script);
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout_text(), out);
    // Nothing waited for the stall timeout.
    assert!(
        t.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        t.elapsed()
    );
}

/// An http server and a client of it in one process (a test suite calling its own app):
/// the connection runs live in both runs and the server's handlers replay their calls, so
/// the replay prints the recorded responses, on another port (listen(0)) and without
/// events left over.
#[test]
fn a_server_and_its_client_in_one_process_replay() {
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    let script = dir.path().join("selfserve.js");
    std::fs::write(
        &script,
        r#"
const http = require('http');
const s = http.createServer((q, r) => r.end(`${q.url} ${Date.now() > 0} ${Math.random().toFixed(6)}`));
s.listen(0, '127.0.0.1', async () => {
  const port = s.address().port;
  for (const p of ['/a', '/b', '/c']) {
    const body = await new Promise((resolve) => http.get(`http://127.0.0.1:${port}${p}`, (res) => {
      let d = '';
      res.on('data', (c) => (d += c));
      res.on('end', () => resolve(d));
    }));
    console.log(body);
  }
  s.close();
});
"#,
    )
    .unwrap();
    let log = dir.path().join("selfserve.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    assert_eq!(
        rec.stdout_text().lines().count(),
        3,
        "{}",
        rec.stdout_text()
    );
    for _ in 0..3 {
        let rep = node(&pkg, "replay", &log, &script);
        assert_eq!(rep.code(), 0, "{}", rep.stderr);
        assert_eq!(rep.stdout_text(), rec.stdout_text());
    }
}

/// A client that exits with process.exit() while a keep-alive connection is still open (a CLI
/// ending its run): the replay ends at the same call, with nothing left over.
#[test]
fn process_exit_with_a_keep_alive_connection_open_replays() {
    use std::io::{Read, Write};
    if !have_node() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = package(dir.path());
    // One response per connection, which then stays open.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut c in server.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = c.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello",
            );
            held.push(c);
        }
    });
    let script = dir.path().join("ka.js");
    std::fs::write(
        &script,
        format!(
            r#"
const http = require('http');
const agent = new http.Agent({{ keepAlive: true }});
http.get('http://127.0.0.1:{port}/x', {{ agent }}, (res) => {{
  let d = '';
  res.on('data', (c) => (d += c));
  res.on('end', () => {{
    console.log(res.statusCode, d);
    process.exit(0);
  }});
}});
"#
        ),
    )
    .unwrap();
    let log = dir.path().join("ka.replay");
    let rec = node(&pkg, "record", &log, &script);
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    assert_eq!(rec.stdout_text(), "200 hello\n");
    for _ in 0..2 {
        let rep = node(&pkg, "replay", &log, &script);
        assert_eq!(rep.code(), 0, "{}", rep.stderr);
        assert_eq!(rep.stdout_text(), rec.stdout_text());
    }
}
