//! The launcher with real runtimes and no manual set-up: `replay record -- java|javac|node|
//! ./c-program` finds the agent, the addon and the C environment this build made; process
//! trees (node -> node, java -> java, a shell script -> java) are recorded into one
//! directory and each process replays from its own log after the files they read changed;
//! the latest recording, `ls`, `hunt`, exit status and the launcher's own errors.
//!
//! Needs `java`, `javac`, `node` and `cc` on PATH and `cargo build --release --workspace`
//! (the JVM agent and the Node addon next to the `replay` binary).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The launcher in `dir`, recordings without -o under `dir/recs`.
fn run(dir: &Path, args: &[&str]) -> Out {
    let o = Command::new(BIN)
        .current_dir(dir)
        .env("REPLAY_DIR", dir.join("recs"))
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("NODE_OPTIONS")
        .args(args)
        .output()
        .expect("run replay");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Records `cmd` into `dir/rec`, changes `input` to `changed`, replays: the replay prints
/// what the recording printed. Returns the recorded stdout and the recording directory.
fn record_change_replay(
    dir: &Path,
    name: &str,
    input: &str,
    changed: &str,
    cmd: &[&str],
) -> (String, PathBuf) {
    let rec = dir.join(name);
    let mut args = vec!["record", "-o", p(&rec), "--"];
    args.extend(cmd);
    let r = run(dir, &args);
    assert_eq!(r.code, 0, "record: {}\n{}", r.stdout, r.stderr);
    write(dir, input, changed);
    let mut args = vec!["replay", p(&rec), "--"];
    args.extend(cmd);
    let again = run(dir, &args);
    assert_eq!(again.code, 0, "replay: {}\n{}", again.stdout, again.stderr);
    assert_eq!(again.stdout, r.stdout, "replayed output: {}", again.stderr);
    assert!(!again.stderr.contains("did not run"), "{}", again.stderr);
    // Live, the program sees the change: the replay was not a coincidence.
    (r.stdout, rec)
}

/// `replay info DIR`'s process lines: `(id, runtime)`.
fn processes(dir: &Path, rec: &Path) -> Vec<(String, String)> {
    let i = run(dir, &["info", p(rec)]);
    assert_eq!(i.code, 0, "{}{}", i.stdout, i.stderr);
    i.stdout
        .lines()
        .skip_while(|l| !l.starts_with("processes:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| {
            let mut w = l.split_whitespace();
            (w.next().unwrap().to_string(), w.next().unwrap().to_string())
        })
        .collect()
}

const JAVA_MAIN: &str = r#"
import java.io.*;
public class Main {
    public static void main(String[] a) throws Exception {
        String s;
        try (BufferedReader r = new BufferedReader(new FileReader("in.txt"))) { s = r.readLine(); }
        System.out.println((a.length == 0 ? "parent" : "child") + " read " + s + " at " + System.currentTimeMillis());
        if (a.length == 0) {
            Process p = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-cp", ".", "Main", "child")
                .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            System.out.print("the child said: " + out);
            System.exit(p.waitFor() + 3);
        }
    }
}
"#;

fn javac(dir: &Path) {
    let c = Command::new("javac")
        .current_dir(dir)
        .env_remove("JAVA_TOOL_OPTIONS")
        .arg("Main.java")
        .output()
        .expect("javac is needed");
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
}

#[test]
fn java_parent_and_child_jvm_replay_from_their_own_logs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "Main.java", JAVA_MAIN);
    javac(dir);
    write(dir, "in.txt", "one\n");
    let rec = dir.join("rec");
    let r = run(
        dir,
        &["record", "-o", p(&rec), "--", "java", "-cp", ".", "Main"],
    );
    // The exit status passes through (3 + the child's 0).
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.starts_with("parent read one at "), "{}", r.stdout);
    assert!(r.stdout.contains("child read one at "), "{}", r.stdout);
    assert!(
        r.stderr.contains("replay: recording (java program) into "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("replay: recorded ")
            && r.stderr.contains(" from 2 processes ("),
        "{}",
        r.stderr
    );
    assert_eq!(
        processes(dir, &rec),
        [("1".into(), "jvm".into()), ("1.1".into(), "jvm".into())]
    );
    write(dir, "in.txt", "two\n");
    let again = run(dir, &["replay", p(&rec), "--", "java", "-cp", ".", "Main"]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    // A shell script that runs java twice: two top-level processes, each its own log.
    write(
        dir,
        "run.sh",
        "#!/bin/sh\njava -cp . Main child\nexec java -cp . Main child\n",
    );
    let sh = dir.join("run.sh");
    std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (out, rec) = record_change_replay(dir, "script", "in.txt", "three\n", &["./run.sh"]);
    assert_eq!(out.matches("child read two").count(), 2, "{out}");
    assert_eq!(
        processes(dir, &rec),
        [("1".into(), "jvm".into()), ("2".into(), "jvm".into())]
    );
}

#[test]
fn javac_records_and_replays() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "Main.java", "public class Main { public static void main(String[] a) { System.out.println(\"old\"); } }\n");
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "javac", "Main.java"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(processes(dir, &rec).len(), 1);
    std::fs::remove_file(dir.join("Main.class")).unwrap();
    let again = run(dir, &["replay", p(&rec), "--", "javac", "Main.java"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("DIVERGENCE"), "{}", again.stderr);
    let java = Command::new("java")
        .current_dir(dir)
        .env_remove("JAVA_TOOL_OPTIONS")
        .args(["-cp", ".", "Main"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&java.stdout), "old\n");
    // javac is a JVM of its own: its log is named by its main class.
    let i = run(dir, &["info", p(&rec)]);
    assert!(
        i.stdout
            .contains("jvm jdk.compiler/com.sun.tools.javac.Main"),
        "{}",
        i.stdout
    );
}

/// A JVM that runs `javadoc` (ant's `<javadoc>` does): the tool is a JVM with its own log,
/// so it runs again from that log in replay and writes its pages from the recorded source
/// (before: a stand-in answered for it and wrote no pages).
const JAVA_DOC: &str = r#"
import java.nio.file.*;
public class Main {
    public static void main(String[] a) throws Exception {
        Process p = new ProcessBuilder("javadoc", "-quiet", "-notimestamp", "-d", "docs", "src/Lib.java")
            .redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        System.out.println("javadoc " + p.waitFor() + " " + Files.exists(Path.of("docs/Lib.html")));
    }
}
"#;

#[test]
fn a_jdk_tool_child_replays_from_its_own_log_and_writes_its_files() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "Main.java", JAVA_DOC);
    javac(dir);
    std::fs::create_dir(dir.join("src")).unwrap();
    write(dir, "src/Lib.java", "/** A class. */\npublic class Lib {\n    /** Adds. */\n    public static int add(int a, int b) { return a + b; }\n}\n");
    let rec = dir.join("rec");
    let r = run(
        dir,
        &["record", "-o", p(&rec), "--", "java", "-cp", ".", "Main"],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "javadoc 0 true\n"),
        "{}",
        r.stderr
    );
    assert_eq!(processes(dir, &rec).len(), 2);
    std::fs::remove_dir_all(dir.join("docs")).unwrap();
    write(
        dir,
        "src/Lib.java",
        "/** Changed. */\npublic class Lib {}\n",
    );
    let again = run(dir, &["replay", p(&rec), "--", "java", "-cp", ".", "Main"]);
    assert_eq!(
        (again.code, &again.stdout),
        (0, &r.stdout),
        "{}",
        again.stderr
    );
    let page = std::fs::read_to_string(dir.join("docs/Lib.html")).unwrap();
    assert!(
        page.contains("add"),
        "the pages come from the recorded source"
    );
    assert!(!again.stderr.contains("did not run"), "{}", again.stderr);
}

const NODE_APP: &str = r#"
const fs = require('fs');
const { spawnSync } = require('child_process');
const me = process.argv[2] || 'parent';
console.log(`${me} read ${fs.readFileSync('in.txt', 'utf8').trim()} ${Math.random()}`);
if (me === 'parent') {
  const r = spawnSync(process.execPath, [__filename, 'child'], { encoding: 'utf8' });
  process.stdout.write(`the child said: ${r.stdout}`);
  process.exitCode = 5;
}
"#;

#[test]
fn node_parent_and_child_replay_from_their_own_logs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "app.js", NODE_APP);
    write(dir, "in.txt", "one");
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "app.js"]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(r.stdout.contains("child read one "), "{}", r.stdout);
    assert_eq!(
        processes(dir, &rec),
        [("1".into(), "node".into()), ("1.1".into(), "node".into())]
    );
    write(dir, "in.txt", "two");
    let again = run(dir, &["replay", p(&rec), "--", "node", "app.js"]);
    assert_eq!(again.code, 5, "{}", again.stderr);
    assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    // Live, both see the change: the replay was not a coincidence.
    let live = Command::new("node")
        .current_dir(dir)
        .arg("app.js")
        .env_remove("NODE_OPTIONS")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&live.stdout).contains("child read two "));
}

/// Two node children on pipes whose lines the parent copies as they come (what
/// `concurrently` does): each child replays from its own log at its own pace, and the parent
/// must still see their chunks in the recorded order (before: another interleaving, a
/// divergence of the parent's stdout, every replay).
const NODE_PIPES: &str = r#"
const { spawn } = require('child_process');
for (const [name, delay] of [['a', 0], ['b', 15]]) {
  const c = spawn(process.execPath, ['-e',
    `setTimeout(() => { let i = 0; const t = setInterval(() => { console.log('${name}' + i + ' ' + Math.random()); if (++i == 3) clearInterval(t); }, 30); }, ${delay})`]);
  c.stdout.on('data', (d) => process.stdout.write(d));
  c.on('exit', (code) => console.log(`${name} exited ${code}`));
}
"#;

#[test]
fn live_childrens_output_reaches_the_parent_in_its_recorded_order() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "pipes.js", NODE_PIPES);
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "pipes.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.lines().count(), 8, "{}", r.stdout);
    assert_eq!(processes(dir, &rec).len(), 3);
    for _ in 0..3 {
        let again = run(dir, &["replay", p(&rec), "--", "node", "pipes.js"]);
        assert_eq!(
            (again.code, &again.stdout),
            (0, &r.stdout),
            "{}",
            again.stderr
        );
    }
}

/// Replaying a recording with another program: one line saying so and exit 3, not a run of
/// the other program compared with output it never made (before: exit 86, a stdout report).
#[test]
fn replaying_another_program_is_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "app.js", "console.log('app', Math.random());\n");
    write(dir, "other.js", "console.log('other', Math.random());\n");
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "app.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let o = run(dir, &["replay", p(&rec), "--", "node", "other.js"]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    assert!(
        o.stderr.contains("replay: cannot replay: ") && !o.stderr.contains("DIVERGENCE"),
        "{}",
        o.stderr
    );
}

/// `node --test` (Node's own test runner): the runner process times each test file and the
/// run with a clock it took before any preload, and prints `# duration_ms`. A test file reads
/// `data.txt`; it is edited before replay.
const NODE_TEST_FILE: &str = r#"
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
test('reads the data', () => {
  const s = fs.readFileSync(__dirname + '/data.txt', 'utf8');
  assert.strictEqual(s, 'good');
});
test('waits', async () => { await new Promise((r) => setTimeout(r, 30)); });
"#;

#[test]
fn node_test_runner_replays_with_its_durations() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "a.test.js", NODE_TEST_FILE);
    write(dir, "data.txt", "good");
    let cmd = ["node", "--test", "a.test.js"];
    let (out, _) = record_change_replay(dir, "rec", "data.txt", "bad", &cmd);
    assert!(out.contains("# pass 2"), "{out}");
    assert!(out.contains("# duration_ms "), "{out}");
    // Live, the edited file fails the test: the replay was not a coincidence.
    let live = Command::new("node")
        .current_dir(dir)
        .args(&cmd[1..])
        .env_remove("NODE_OPTIONS")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&live.stdout).contains("# fail 1"));
}

/// With coverage on, the report covers the program's files only: the package's own files
/// sit under a `node_modules` of the cache, which coverage leaves out as it does every
/// installed package (their rows differed between record and replay).
#[test]
fn node_test_coverage_replays_without_the_packages_files() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "a.test.js", NODE_TEST_FILE);
    write(dir, "data.txt", "good");
    let cmd = [
        "node",
        "--test",
        "--experimental-test-coverage",
        "a.test.js",
    ];
    let (out, _) = record_change_replay(dir, "rec", "data.txt", "bad", &cmd);
    assert!(out.contains("a.test.js"), "{out}");
    assert!(out.contains("all files"), "{out}");
    assert!(!out.contains("replay"), "{out}");
}

/// A forked child (IPC channel, as vitest's and jest's workers) counts timer ticks until its
/// parent's message stops it: when the message arrives is an input of the child, replayed at
/// its recorded turn (lib/ipc.js), so the replayed count is the recorded one.
const IPC_PARENT: &str = r#"
const { fork } = require('child_process');
const c = fork(__dirname + '/ticker.js');
c.on('message', (m) => {
  console.log('parent got', m);
  if (m === 'ready') setTimeout(() => c.send({ stop: true }), 60);
});
"#;
const IPC_CHILD: &str = r#"
let n = 0;
const t = setInterval(() => { n++; }, 2);
process.send('ready');
process.on('message', (m) => {
  clearInterval(t);
  process.send('ticks ' + n + ' ' + JSON.stringify(m));
  process.disconnect();
});
"#;

#[test]
fn a_forked_childs_messages_arrive_at_their_recorded_turn() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "parent.js", IPC_PARENT);
    write(dir, "ticker.js", IPC_CHILD);
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "parent.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("parent got ticks "), "{}", r.stdout);
    for _ in 0..3 {
        let again = run(dir, &["replay", p(&rec), "--", "node", "parent.js"]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    }
}

/// Three forked children each answer a message after a timer and end on the parent's 'bye'.
/// A replayed child gets its recorded 'bye' at its turn, not when the parent sends it, and
/// may close the channel before the parent (replayed too) sends: that send is dropped as if
/// sent (it raised ERR_IPC_CHANNEL_CLOSED, uncaught, and the parent ended early).
const IPC_PARENT_BYE: &str = r#"
const { fork } = require('child_process');
let done = 0;
const res = [];
for (let i = 0; i < 3; i++) {
  const k = fork('worker.js');
  k.on('message', (m) => { res.push(i + ':' + m); if (m === 'result') k.send('bye'); });
  k.on('exit', () => { if (++done === 3) console.log('done', res.sort().join(',')); });
  k.send('work');
}
"#;

const IPC_CHILD_BYE: &str = r#"
process.on('message', (m) => {
  if (m === 'work') setTimeout(() => process.send('result'), 20);
  else { process.send('ack'); process.disconnect(); }
});
"#;

#[test]
fn forked_children_that_end_before_their_parent_sends_replay() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "parent.js", IPC_PARENT_BYE);
    write(dir, "worker.js", IPC_CHILD_BYE);
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "parent.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "done 0:ack,0:result,1:ack,1:result,2:ack,2:result\n"
    );
    for _ in 0..4 {
        let again = run(dir, &["replay", p(&rec), "--", "node", "parent.js"]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    }
}

/// A Node child recorded under its own log runs again in replay: the program sees the pid it
/// had in the recording (c8 passes it to a watchdog process as an argument), and
/// `process.kill` of that pid reaches the child running now.
const NODE_CHILD_PID: &str = r#"
const { spawn } = require('child_process');
const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 200)']);
console.log('child pid', c.pid);
console.log('signal 0 reaches it', process.kill(c.pid, 0));
c.on('exit', (code) => console.log('child exit', code));
"#;

#[test]
fn a_node_childs_pid_is_the_recorded_one_in_replay() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "app.js", NODE_CHILD_PID);
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "app.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "signal 0 reaches it true
child exit 0"
        ),
        "{}",
        r.stdout
    );
    for _ in 0..2 {
        let again = run(dir, &["replay", p(&rec), "--", "node", "app.js"]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    }
}

/// A program that writes its parent's pid (the launcher's, new at every run) and checks
/// that the parent is alive.
const NODE_PPID: &str = r#"
console.log('parent', process.ppid, process.kill(process.ppid, 0));
"#;

#[test]
fn a_node_programs_parent_pid_is_the_recorded_one_in_replay() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "app.js", NODE_PPID);
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "app.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.ends_with(" true\n"), "{}", r.stdout);
    let again = run(dir, &["replay", p(&rec), "--", "node", "app.js"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
}

/// jest's worker pool in small: a forked worker answers, and on 'end' stops listening after a
/// while (no exit call), which is how the real worker ends; the parent prints a summary from
/// a timer and the worker's exit.
const NODE_WORKER: &str = r#"
const { fork } = require('child_process');
if (process.argv[2]) {
  const onMessage = (m) => {
    if (m === 'work') process.send('result ' + Date.now());
    else setTimeout(() => process.removeListener('message', onMessage), 300);
  };
  process.on('message', onMessage);
} else {
  const c = fork(__filename, ['worker'], { silent: true });
  c.on('message', (m) => {
    console.log('got', m);
    c.send('end');
    setTimeout(() => console.log('summary'), 50);
  });
  c.on('exit', (code) => console.log('worker exit', code));
  c.send('work');
}
"#;

/// The replayed worker ends where the recorded one did: once it removed its listener, the
/// channel no longer holds it (it waited for more messages before). Its exit reaches the
/// parent at the recorded turn: the replayed worker's timer takes no time, and its exit came
/// before the parent's summary.
#[test]
fn a_node_worker_ending_by_its_listener_and_its_exit_replay_in_order() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "app.js", NODE_WORKER);
    let rec = dir.join("rec");
    let r = run(dir, &["record", "-o", p(&rec), "--", "node", "app.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.ends_with("\nsummary\nworker exit 0\n"),
        "{}",
        r.stdout
    );
    for _ in 0..2 {
        let again = run(dir, &["replay", p(&rec), "--", "node", "app.js"]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    }
}

/// A parent that forks a child with its output piped and never shown, and ignores how the
/// child ended: the child prints its pid, an input no hook covers, so its replay diverges.
const NODE_HIDDEN_CHILD: &str = r#"
const { fork } = require('child_process');
// The diagnostic report's pid (the live one) is an input no hook covers.
if (process.argv[2]) console.log('child', process.report.getReport().header.processId);
else fork(__filename, ['c'], { silent: true }).on('exit', () => console.log('parent done'));
"#;

/// The same in Java: the child's output goes to files, its exit status is not looked at.
const JAVA_HIDDEN_CHILD: &str = r#"
import java.io.File;
public class Hidden {
    public static void main(String[] a) throws Exception {
        if (a.length > 0) {
            // The process's start instant as the system tells it: an input no hook covers.
            System.out.println("child " + ProcessHandle.current().info().startInstant());
            return;
        }
        String java = System.getProperty("java.home") + "/bin/java";
        new ProcessBuilder(java, "-cp", ".", "Hidden", "c")
            .redirectOutput(new File("child.out")).redirectError(new File("child.err"))
            .start().waitFor();
        System.out.println("parent done");
    }
}
"#;

/// Records `cmd`, replays it: the parent replays to its end with the recorded output, but a
/// process inside diverged, so the launcher says which and exits 86.
fn hidden_child_diverges(dir: &Path, cmd: &[&str]) {
    let rec = dir.join("rec");
    let mut args = vec!["record", "-o", p(&rec), "--"];
    args.extend(cmd);
    let r = run(dir, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "parent done\n");
    let mut args = vec!["replay", p(&rec), "--"];
    args.extend(cmd);
    let again = run(dir, &args);
    assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
    assert_eq!(again.code, 86, "{}", again.stderr);
    let said: Vec<&str> = again
        .stderr
        .lines()
        .filter(|l| l.starts_with("replay: recorded process 1.1 ("))
        .collect();
    assert_eq!(said.len(), 1, "{}", again.stderr);
    assert!(
        said[0]
            .contains("diverged in this replay: replay: DIVERGENCE: the program's stdout differs"),
        "{}",
        said[0]
    );
    assert!(
        again.stderr.contains("the replay is not faithful"),
        "{}",
        again.stderr
    );
}

#[test]
fn a_node_child_that_diverged_unseen_makes_the_replay_fail() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "hidden.js", NODE_HIDDEN_CHILD);
    hidden_child_diverges(d.path(), &["node", "hidden.js"]);
}

#[test]
fn a_java_child_that_diverged_unseen_makes_the_replay_fail() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "Hidden.java", JAVA_HIDDEN_CHILD);
    let c = Command::new("javac")
        .arg("Hidden.java")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    hidden_child_diverges(d.path(), &["java", "-cp", ".", "Hidden"]);
    // The child's own report went where the parent sent its stderr.
    let err = std::fs::read_to_string(d.path().join("child.err")).unwrap();
    assert!(err.contains("DIVERGENCE"), "{err}");
}

/// Prints the clock and a file, read through the C header's macros.
const CAT_CLOCK: &str = r#"
#include "replay.h"
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc != 2 || replay_init_from_env() != 0) return 2;
    struct timespec ts;
    REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_REALTIME, &ts);
    printf("clock %lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
    int fd = REPLAY_CALL(open, argv[1], O_RDONLY);
    if (fd < 0) return 4;
    char buf[64];
    ssize_t n;
    while ((n = REPLAY_READ(buf, read, fd, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)n, stdout);
    REPLAY_CALL(close, fd);
    return 0;
}
"#;

#[test]
fn a_jvm_sees_none_of_the_tools_variables_and_its_child_is_still_recorded() {
    // REPLAY_MODE is `record` in one run and `replay` in the other, REPLAY_TREE_CLAIMS a fresh
    // name each run: a program writing its environment out (ant's `<property environment>`
    // into junit reports) wrote other bytes in every replay. A child given an environment
    // of its own through ProcessBuilder.environment() still gets them, and its own log.
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(
        dir,
        "Main.java",
        r#"
public class Main {
    public static void main(String[] a) throws Exception {
        String tool = System.getenv().keySet().stream().filter(k -> k.startsWith("REPLAY_")).sorted().toList()
            + " " + System.getenv("REPLAY_MODE");
        if (a.length > 0) {
            System.out.println("child " + System.getenv("GIVEN") + " " + tool + " " + System.currentTimeMillis() % 7);
            return;
        }
        System.out.println("parent " + tool);
        ProcessBuilder pb = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-cp", ".", "Main", "c");
        pb.environment().put("GIVEN", "yes");
        System.out.println("child exit " + pb.inheritIO().start().waitFor());
    }
}
"#,
    );
    javac(dir);
    let rec = dir.join("rec");
    let r = run(
        dir,
        &["record", "-o", p(&rec), "--", "java", "-cp", ".", "Main"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with("parent [] null\nchild yes [] null "),
        "{}",
        r.stdout
    );
    assert_eq!(
        processes(dir, &rec),
        [("1".into(), "jvm".into()), ("1.1".into(), "jvm".into())]
    );
    let again = run(dir, &["replay", p(&rec), "--", "java", "-cp", ".", "Main"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stdout, r.stdout, "{}", again.stderr);
}

#[test]
fn front_end_lines_a_script_merges_into_stdout_are_not_compared() {
    // A unix socket runs live: replay warns at its start and notes it at its end, on the
    // program's stderr, which the script merges into stdout (`2>&1`, as kotlinc's wrapper
    // does). Compared as the program's stdout, they made every replay a divergence.
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "app.js",
        r#"
const net = require('net');
const p = require('path').join(__dirname, 's.sock');
const srv = net.createServer((c) => c.end('hi')).listen(p, () => {
  net.connect(p).on('data', (d) => { console.log('got', String(d)); srv.close(); });
});
"#,
    );
    let rec = d.path().join("rec");
    let cmd = ["sh", "-c", "node app.js 2>&1"];
    let mut args = vec!["record", "-o", p(&rec), "--"];
    args.extend(cmd);
    let r = run(d.path(), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "got hi\n");
    let mut args = vec!["replay", p(&rec), "--"];
    args.extend(cmd);
    let again = run(d.path(), &args);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    // Shown as they came, only not compared.
    assert!(
        again.stdout.contains("got hi\n") && again.stdout.contains("replay: note: "),
        "{}",
        again.stdout
    );
}

#[test]
fn a_c_program_records_through_the_launcher_alone() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    compile_c(dir, "cat_clock", CAT_CLOCK);
    write(dir, "input.txt", "the recorded text\n");
    let (out, rec) = record_change_replay(
        dir,
        "rec",
        "input.txt",
        "other",
        &["./cat_clock", "input.txt"],
    );
    assert!(out.contains("the recorded text"), "{out}");
    assert_eq!(processes(dir, &rec), [("1".into(), "c".into())]);
}

#[test]
fn the_latest_recording_ls_and_hunt() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // Fails (exit 1) one time in three, by a random number the replay gives back.
    write(
        dir,
        "flaky.js",
        "const n = Math.floor(Math.random() * 3); console.log('drew', n); process.exit(n === 0 ? 1 : 0);\n",
    );
    let h = run(dir, &["hunt", "-n", "80", "--", "node", "flaky.js"]);
    assert_eq!(h.code, 0, "{}", h.stderr);
    let line = h.stderr.lines().last().unwrap();
    assert!(
        line.starts_with("replay: flaky.js failed on run ")
            || line.starts_with("replay: node failed on run "),
        "{line}"
    );
    let runs: usize = line
        .split("on run ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(h.stdout.matches("drew ").count(), runs, "{}", h.stdout);
    assert!(h.stdout.ends_with("drew 0\n"), "{}", h.stdout);
    // Only the failing run is kept, and it is the latest.
    let ls = run(dir, &["ls"]);
    assert_eq!(ls.code, 0, "{}", ls.stderr);
    let rows: Vec<&str> = ls.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{}", ls.stdout);
    assert!(
        rows[0].contains("complete") && rows[0].ends_with("node flaky.js"),
        "{}",
        rows[0]
    );
    for _ in 0..3 {
        let again = run(dir, &["replay", "--", "node", "flaky.js"]);
        assert_eq!(
            (again.code, again.stdout.as_str()),
            (1, "drew 0\n"),
            "{}",
            again.stderr
        );
        assert!(
            again
                .stderr
                .starts_with("replay: replaying the latest recording, "),
            "{}",
            again.stderr
        );
    }
    // A pattern in the output.
    let m = run(
        dir,
        &[
            "hunt",
            "-n",
            "80",
            "--match",
            "drew [12]",
            "--",
            "node",
            "flaky.js",
        ],
    );
    assert_eq!(m.code, 0, "{}", m.stderr);
    assert!(!m.stdout.ends_with("drew 0\n"), "{}", m.stdout);
    // A recording made after it is the latest; ls lists both, oldest first.
    write(dir, "ok.js", "console.log('fine')\n");
    let r = run(dir, &["record", "--", "node", "ok.js"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ls = run(dir, &["ls"]);
    let rows: Vec<&str> = ls.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{}", ls.stdout);
    assert!(rows[2].ends_with("node ok.js"), "{}", ls.stdout);
    let again = run(dir, &["replay", "--", "node", "ok.js"]);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, "fine\n"),
        "{}",
        again.stderr
    );
    // A program that never fails: said, and nothing kept.
    let none = run(dir, &["hunt", "-n", "2", "--", "node", "ok.js"]);
    assert_eq!(none.code, 1);
    assert!(
        none.stderr
            .ends_with("did not fail in 2 runs; nothing kept\n"),
        "{}",
        none.stderr
    );
    assert_eq!(run(dir, &["ls"]).stdout.lines().count(), 4);
}

#[test]
fn the_launchers_own_errors_are_one_line() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    for (args, code, start) in [
        (
            &["record"][..],
            2,
            "replay: the following required arguments were not provided: <CMD>",
        ),
        (
            &["record", "--bogus", "--", "true"][..],
            2,
            "replay: unexpected argument '--bogus' found",
        ),
        (
            &["replay", "--bogus", "--", "true"][..],
            2,
            "replay: unexpected argument '--bogus' found",
        ),
        (
            &["hunt", "-n", "x", "--", "true"][..],
            2,
            "replay: invalid value 'x'",
        ),
        (
            &["record", "--", "no-such-program-here"][..],
            127,
            "replay: no-such-program-here: cannot run: not found",
        ),
        (
            &["replay", "--", "true"][..],
            3,
            "replay: no recordings in ",
        ),
        (
            &["replay", "/nonexistent/dir", "--", "true"][..],
            3,
            "replay: /nonexistent/dir: cannot open",
        ),
    ] {
        let r = run(dir, args);
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.starts_with(start), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty());
    }
    assert!(!dir.join("recs").exists(), "no recording is left behind");
}
