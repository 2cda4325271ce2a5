//! The JVM agent's class cache (jvm-agent/src/cache.rs): the first run scans the classes
//! loaded before VMInit and remembers which boot classes call a clock; later runs hook the
//! same classes from the cache without scanning. Every JDK present (17 and 25 here).
//!
//! Needs `cargo build --release -p replay-jvm` first (the agent is a cdylib).

use replay_tests::jvm::{agent, jdk_homes, log_kinds as kinds, name, Jdk};
use replay_tests::{run, Finished};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `Thread.sleep(long, int)` sleeps through a call inside `java.lang.Thread` (JDK 17's
/// `sleep(long)`, JDK 21+'s `sleepNanos`), a class loaded before the agent's hook class
/// exists: that sleep is an event only if VMInit retransformed Thread, which is what the
/// cache decides. (Thread's own clock reads, in `join(millis)`, stay live by design:
/// `classfile::LIVE_CLOCKS`.)
const PROGRAM: &str = r#"
public class Startup {
    public static void main(String[] a) throws Exception {
        Thread t = new Thread(() -> {
            try { Thread.sleep(300); } catch (InterruptedException e) { }
        }, "sleeper");
        t.start();
        long t0 = System.nanoTime();
        Thread.sleep(20, 1);
        long t1 = System.nanoTime();
        System.out.println("sleep(20, 1) returned after " + (t1 - t0) + " ns at " + System.currentTimeMillis());
        t.join();
    }
}
"#;

/// Every JDK present, with PROGRAM compiled by its javac.
fn jdks() -> Vec<Jdk> {
    jdk_homes()
        .iter()
        .map(|home| Jdk::compile_source(home, "Startup", PROGRAM))
        .collect()
}

type Kinds = BTreeMap<String, u64>;

/// Runs the program under the agent with `opts`; `env` is set on top of a clean
/// environment for the cache's location (HOME and XDG_CACHE_HOME are removed first).
fn java(jdk: &Jdk, opts: &str, env: &[(&str, &Path)]) -> Finished {
    let mut c = Command::new(jdk.home.join("bin/java"));
    c.arg(format!("-agentpath:{}={opts}", agent().display()))
        .arg("-cp")
        .arg(&jdk.classes)
        .arg("Startup")
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME");
    for (k, v) in env {
        c.env(k, v);
    }
    let f = run(&mut c);
    assert_eq!(
        f.code(),
        0,
        "{} with {opts}: stdout {}\nstderr {}",
        name(jdk),
        f.stdout_text(),
        f.stderr
    );
    f
}

/// Records with `opts` (plus the log); returns what it printed and its events by kind.
fn record(jdk: &Jdk, log: &Path, opts: &str, env: &[(&str, &Path)]) -> (String, Kinds) {
    let f = java(jdk, &format!("record,log={},{opts}", log.display()), env);
    assert!(
        !f.stderr.contains("replay:"),
        "{}: the agent complained: {}",
        name(jdk),
        f.stderr
    );
    (f.stdout_text(), kinds(log))
}

/// Sleeps recorded: 2 when Thread is hooked (both sleeps pass a call inside Thread on JDK
/// 21+; on 17 the sleeper's `sleep(long)` is hooked at its call site in the program), fewer
/// when it is not.
fn sleeps(k: &Kinds) -> u64 {
    k.get("java.lang.Thread.sleep").copied().unwrap_or(0)
}

/// The one cache file in `dir`.
fn cache_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("no cache directory {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Rewrites a cache file with `from` replaced by `to` in its body; `reseal` recomputes the
/// checksum of the `end` line (a forged but valid file), otherwise the file is damaged.
fn edit_cache(file: &Path, from: &str, to: &str, reseal: bool) {
    let text = std::fs::read_to_string(file).unwrap();
    let end = text.trim_end().rfind('\n').unwrap() + 1;
    let (body, tail) = text.split_at(end);
    assert!(body.contains(from), "{from} not in the cache:\n{text}");
    let body = body.replacen(from, to, 1);
    let tail = if reseal {
        let count = tail.split(' ').nth(1).unwrap();
        format!(
            "end {count} {:016x}\n",
            replay_core::digest(&[body.as_bytes()])
        )
    } else {
        tail.to_string()
    };
    std::fs::write(file, format!("{body}{tail}")).unwrap();
}

#[test]
fn a_warm_cache_hooks_what_a_scan_hooks_and_replays_after_the_clock_moved() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let copt = format!("cache={}", cache.display());
        let log = |n: &str| dir.path().join(format!("{n}.replay"));

        let (_, cold) = record(&jdk, &log("cold"), &copt, &[]);
        let file = cache_file(&cache);
        let written = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&written).into_owned();
        assert!(
            text.contains("\n+ Ljava/lang/Thread;\n") && text.contains("\n- Ljava/lang/Object;\n"),
            "{}: {text}",
            name(&jdk)
        );
        // ImmutableCollections reads nanoTime in its static initializer only: once it ran,
        // warm runs leave the class alone.
        assert!(
            text.contains("\nc Ljava/util/ImmutableCollections;\n"),
            "{}: {text}",
            name(&jdk)
        );
        // ClassLoader reads nanoTime in loadClass only to feed the JVM's perf counters
        // (classfile::STATISTICS_ONLY, LIVE_CLOCKS): it is not retransformed, while Thread's
        // sleeps (asserted below) still are.
        assert!(
            text.contains("\n- Ljava/lang/ClassLoader;\n"),
            "{}: {text}",
            name(&jdk)
        );
        // The hook class calls the real clocks by design: it is never retransformed.
        assert!(!text.contains("ReplayHooks"), "{text}");

        let (recorded, warm) = record(&jdk, &log("warm"), &copt, &[]);
        let (_, scanned) = record(&jdk, &log("off"), "cache=off", &[]);
        // Thread's sleeps are events with the cache as without it.
        assert!(sleeps(&cold) >= 2, "{}: {cold:?}", name(&jdk));
        assert_eq!(warm, cold, "{}: warm cache", name(&jdk));
        assert_eq!(scanned, cold, "{}: cache off", name(&jdk));
        assert_eq!(
            std::fs::read(&file).unwrap(),
            written,
            "{}: a warm run rewrote the cache",
            name(&jdk)
        );

        // Replay from the warm cache, later: the recorded times come back.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let replayed = java(
            &jdk,
            &format!("replay,log={},{copt}", log("warm").display()),
            &[],
        );
        assert_eq!(replayed.stdout_text(), recorded, "{}", name(&jdk));
        // A log recorded with the cache off replays with it on (the same classes are hooked).
        let (rec_off, _) = record(&jdk, &log("off2"), "cache=off", &[]);
        let replayed = java(
            &jdk,
            &format!("replay,log={},{copt}", log("off2").display()),
            &[],
        );
        assert_eq!(replayed.stdout_text(), rec_off, "{}", name(&jdk));
    }
}

#[test]
fn the_cache_decides_what_is_hooked_and_a_damaged_one_is_ignored_and_rewritten() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let copt = format!("cache={}", cache.display());
        let log = dir.path().join("a.replay");
        let (_, honest) = record(&jdk, &log, &copt, &[]);
        let file = cache_file(&cache);
        let good = std::fs::read_to_string(&file).unwrap();

        // A valid cache that calls Thread clean is believed: its sleeps are not hooked.
        // (This is why the key must change with the JDK.)
        edit_cache(&file, "+ Ljava/lang/Thread;", "- Ljava/lang/Thread;", true);
        let (_, forged) = record(&jdk, &log, &copt, &[]);
        assert!(
            sleeps(&forged) < sleeps(&honest),
            "{}: forged {forged:?}, honest {honest:?}",
            name(&jdk)
        );

        // The same edit without the checksum: ignored, the classes are scanned, the file is
        // written again.
        std::fs::write(&file, &good).unwrap();
        edit_cache(&file, "+ Ljava/lang/Thread;", "- Ljava/lang/Thread;", false);
        let (_, damaged) = record(&jdk, &log, &copt, &[]);
        assert_eq!(damaged, honest, "{}", name(&jdk));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), good);

        // Garbage, and a cache of another JDK build (other key): the same.
        std::fs::write(&file, "not a cache\n").unwrap();
        let (_, garbage) = record(&jdk, &log, &copt, &[]);
        assert_eq!(garbage, honest, "{}", name(&jdk));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), good);
        edit_cache(&file, "key home=", "key home=/elsewhere", true);
        edit_cache(&file, "+ Ljava/lang/Thread;", "- Ljava/lang/Thread;", true);
        let (_, other) = record(&jdk, &log, &copt, &[]);
        assert_eq!(other, honest, "{}", name(&jdk));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), good);
    }
}

#[test]
fn cache_location_follows_xdg_then_home_and_can_be_off_or_unwritable() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.replay");
        let (xdg, home) = (dir.path().join("xdg"), dir.path().join("home"));
        let env: [(&str, &Path); 2] = [("XDG_CACHE_HOME", &xdg), ("HOME", &home)];

        let (_, off) = record(&jdk, &log, "cache=off", &env);
        assert!(!xdg.exists() && !home.exists(), "cache=off wrote a cache");

        let (_, via_xdg) = record(&jdk, &log, "", &env);
        cache_file(&xdg.join("replay"));
        assert!(!home.exists());
        assert_eq!(via_xdg, off, "{}", name(&jdk));

        let (_, via_home) = record(&jdk, &log, "", &env[1..]);
        cache_file(&home.join(".cache/replay"));
        assert_eq!(via_home, off, "{}", name(&jdk));

        // No HOME, no XDG_CACHE_HOME: no cache, no complaint.
        let (_, nowhere) = record(&jdk, &log, "", &[]);
        assert_eq!(nowhere, off, "{}", name(&jdk));

        // A cache directory that cannot be made (below a regular file): silently skipped.
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "x").unwrap();
        let (_, blocked) = record(
            &jdk,
            &log,
            &format!("cache={}", blocker.join("c").display()),
            &[],
        );
        assert_eq!(blocked, off, "{}", name(&jdk));
    }
}

#[test]
fn no_cache_when_boot_classes_may_come_from_elsewhere() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let extra = dir.path().join("boot");
        std::fs::create_dir(&extra).unwrap();
        let patch = format!("java.base={}", extra.display());
        let append = format!("-Xbootclasspath/a:{}", extra.display());
        // Without such options the classes are judged from their bytes in the runtime image;
        // with them, from the JVM's constant pools: both hook the same calls.
        let (_, from_image) = record(&jdk, &dir.path().join("image.replay"), "cache=off", &[]);
        for jvm_args in [
            vec!["--patch-module", patch.as_str()],
            vec![append.as_str()],
        ] {
            let log = dir.path().join("a.replay");
            let f = run(Command::new(jdk.home.join("bin/java"))
                .args(&jvm_args)
                .arg(format!(
                    "-agentpath:{}=record,log={},cache={}",
                    agent().display(),
                    log.display(),
                    cache.display()
                ))
                .arg("-cp")
                .arg(&jdk.classes)
                .arg("Startup"));
            assert_eq!(f.code(), 0, "{jvm_args:?}: {}", f.stderr);
            assert!(
                sleeps(&kinds(&log)) >= 2,
                "{jvm_args:?}: Thread's sleeps are still hooked"
            );
            assert_eq!(kinds(&log), from_image, "{}: {jvm_args:?}", name(&jdk));
            assert!(
                !cache.exists(),
                "{}: {jvm_args:?} wrote a cache",
                name(&jdk)
            );
        }
    }
}

#[test]
fn an_empty_cache_value_stops_the_jvm_with_one_line() {
    for jdk in jdks() {
        let f = run(Command::new(jdk.home.join("bin/java"))
            .arg(format!("-agentpath:{}=record,cache=", agent().display()))
            .arg("-cp")
            .arg(&jdk.classes)
            .arg("Startup"));
        assert_ne!(f.code(), 0);
        let ours: Vec<&str> = f
            .stderr_lines()
            .into_iter()
            .filter(|l| l.starts_with("replay:"))
            .collect();
        assert_eq!(
            ours,
            ["replay: bad value '' for option 'cache': expected off, on or a directory"],
            "{}",
            f.stderr
        );
    }
}
