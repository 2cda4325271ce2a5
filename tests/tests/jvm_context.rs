//! The JVM agent decides by the context of a file call, not by its path (issue 24): what the
//! JVM's class and resource loading reads stays live, every other read of the program is an
//! event wherever the file is and whatever its name. Proved on real processes of every JDK
//! present: javac run from its project directory (class path "."), `cd app && java Main`
//! (class path "."), `java Main.java`, a program reading `.class` and `.jar` files as data
//! and files through `../`, ant building a project; and the JDK's random generators whose
//! seeders digest the machine's state (SHA1PRNG, DRBG).
//!
//! Needs `cargo build --release -p replay-jvm` first: the agent is a cdylib that tests cannot
//! depend on.

use replay_tests::jvm::{agent, assert_replays, jdk_homes, jdks, name, ok, record, text, Jdk};
use replay_tests::{run, Finished};
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool(home: &Path, tool: &str, cwd: &Path) -> Command {
    let mut c = Command::new(home.join("bin").join(tool));
    c.current_dir(cwd)
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .env_remove("CLASSPATH");
    c
}

/// `javac [-J-agentpath:...=<mode>,log=<log>] args` in `cwd`.
fn javac(home: &Path, cwd: &Path, agent_opts: Option<String>, args: &[&str]) -> Finished {
    let mut c = tool(home, "javac", cwd);
    if let Some(o) = agent_opts {
        c.arg(format!("-J-agentpath:{}={o}", agent().display()));
    }
    run(c.args(args))
}

fn mode(m: &str, log: &Path) -> Option<String> {
    Some(format!("{m},log={}", log.display()))
}

fn home_name(home: &Path) -> String {
    home.file_name().unwrap().to_string_lossy().into_owned()
}

fn compile_to(home: &Path, dir: &Path, out: &str, file: &str, source: &str) {
    let src = dir.join(file);
    std::fs::write(&src, source).unwrap();
    let o = javac(home, dir, None, &["-d", out, file]);
    assert!(o.status.success(), "javac {file}: {}", o.stderr);
    std::fs::remove_file(src).unwrap();
}

const DEP: &str = "public class Dep { public static String greet() { return \"hello\"; } }";
const DEP_CHANGED: &str =
    "public class Dep { public static String greet(int n) { return \"x\"; } }";
const HELLO: &str =
    "public class Hello { public static void main(String[] a) { System.out.println(\"hi\"); } }";
const USES: &str = "public class Uses { public static void main(String[] a) { System.out.println(Dep.greet()); } }";

#[test]
fn javac_from_its_project_directory_replays_the_recorded_sources_and_class_path() {
    for home in jdk_homes() {
        let n = home_name(&home);
        let d = tempfile::tempdir().unwrap();
        let proj = d.path().join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        compile_to(&home, &proj, "lib", "Dep.java", DEP);
        std::fs::write(proj.join("Hello.java"), HELLO).unwrap();
        std::fs::write(proj.join("Uses.java"), USES).unwrap();

        // The class path is empty ("."): the source sits in it.
        let hello_log = d.path().join("hello.replay");
        ok(
            &javac(&home, &proj, mode("record", &hello_log), &["Hello.java"]),
            &format!("{n}: record javac Hello.java"),
        );
        // A class file of the class path read as compiler input: the program's read.
        let uses_log = d.path().join("uses.replay");
        ok(
            &javac(
                &home,
                &proj,
                mode("record", &uses_log),
                &["-cp", "lib", "Uses.java"],
            ),
            &format!("{n}: record javac -cp lib Uses.java"),
        );
        let hello = std::fs::read(proj.join("Hello.class")).unwrap();
        let uses = std::fs::read(proj.join("Uses.class")).unwrap();
        for log in [&hello_log, &uses_log] {
            let kinds = replay_tests::jvm::log_kinds(log);
            assert!(
                kinds.keys().any(|k| k.ends_with(".open")),
                "{n}: javac's reads are events: {kinds:?}"
            );
        }

        // The outside world changes: the sources break, the class path's Dep loses greet().
        std::fs::write(proj.join("Hello.java"), "public class Hello { broken").unwrap();
        std::fs::write(proj.join("Uses.java"), "public class Uses { also broken").unwrap();
        compile_to(&home, &proj, "lib", "Dep.java", DEP_CHANGED);
        std::fs::write(proj.join("Uses.java"), USES).unwrap();
        let live = javac(&home, &proj, None, &["-cp", "lib", "Uses.java"]);
        assert!(!live.status.success(), "{n}: live javac must fail now");
        std::fs::write(proj.join("Uses.java"), "public class Uses { also broken").unwrap();
        std::fs::remove_file(proj.join("Hello.class")).unwrap();
        std::fs::remove_file(proj.join("Uses.class")).unwrap();

        let o = javac(&home, &proj, mode("replay", &hello_log), &["Hello.java"]);
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{n}: {}",
            o.stderr
        );
        assert_eq!(
            std::fs::read(proj.join("Hello.class")).unwrap(),
            hello,
            "{n}: the replayed compile wrote another Hello.class"
        );
        let o = javac(
            &home,
            &proj,
            mode("replay", &uses_log),
            &["-cp", "lib", "Uses.java"],
        );
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{n}: {}",
            o.stderr
        );
        assert_eq!(
            std::fs::read(proj.join("Uses.class")).unwrap(),
            uses,
            "{n}: the replayed compile wrote another Uses.class"
        );
    }
}

#[test]
fn a_failed_javac_replays_its_errors_and_exit_status_after_the_source_was_fixed() {
    for home in jdk_homes() {
        let n = home_name(&home);
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Hello.java"),
            "public class Hello { int x = ; }",
        )
        .unwrap();
        let log = d.path().join("broken.replay");
        let rec = javac(&home, d.path(), mode("record", &log), &["Hello.java"]);
        assert_eq!(rec.code(), 1, "{n}: {}", rec.stderr);
        assert!(rec.stderr.contains("error"), "{n}: {}", rec.stderr);
        std::fs::write(d.path().join("Hello.java"), HELLO).unwrap();
        let rep = javac(&home, d.path(), mode("replay", &log), &["Hello.java"]);
        assert_eq!(rep.code(), 1, "{n}: {}", rep.stderr);
        assert_eq!(rep.stderr, rec.stderr, "{n}");
        assert!(!d.path().join("Hello.class").exists(), "{n}");
    }
}

/// `app/` holding the program's classes (unless `source`: its source) and data: data.txt, a
/// class file and a jar read as data; `outside.txt` beside it, read through `../`.
fn app_tree(jdk: &Jdk, root: &Path, source: bool) -> PathBuf {
    let app = root.join("app");
    std::fs::create_dir_all(&app).unwrap();
    if source {
        let src = replay_tests::repo().join("tests/java/AppData.java");
        std::fs::copy(src, app.join("AppData.java")).unwrap();
    } else {
        for e in std::fs::read_dir(&jdk.classes).unwrap() {
            let p = e.unwrap().path();
            let f = p.file_name().unwrap().to_string_lossy().into_owned();
            if f.starts_with("AppData") {
                std::fs::copy(&p, app.join(f)).unwrap();
            }
        }
    }
    std::fs::copy(jdk.classes.join("Entropy.class"), app.join("Thing.class")).unwrap();
    std::fs::write(app.join("data.txt"), "hello data\n").unwrap();
    std::fs::write(root.join("outside.txt"), "outside one\n").unwrap();
    make_jar(jdk, root, &app.join("lib.jar"), "note one\n");
    app
}

fn make_jar(jdk: &Jdk, root: &Path, jar: &Path, note: &str) {
    let src = root.join("jarsrc");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("note.txt"), note).unwrap();
    let o = run(tool(&jdk.home, "jar", &src)
        .arg("cf")
        .arg(jar)
        .arg("note.txt"));
    assert!(o.status.success(), "jar: {}", o.stderr);
}

/// Changes every file the program reads, and its directory.
fn change_app(jdk: &Jdk, root: &Path, app: &Path) {
    std::fs::write(app.join("data.txt"), "changed data, longer\n").unwrap();
    std::fs::write(root.join("outside.txt"), "outside two\n").unwrap();
    std::fs::write(app.join("new.txt"), "new\n").unwrap();
    std::fs::copy(jdk.classes.join("Uuid.class"), app.join("Thing.class")).unwrap();
    make_jar(jdk, root, &app.join("lib.jar"), "note two, longer\n");
}

/// `java -agentpath:... <args>` in `cwd` with no `-cp` (class path ".").
fn java_here(jdk: &Jdk, cwd: &Path, opts: &str, args: &[&str]) -> Finished {
    run(tool(&jdk.home, "java", cwd)
        .arg(format!("-agentpath:{}={opts}", agent().display()))
        .args(args))
}

fn app_replays(jdk: &Jdk, source: bool) {
    let n = name(jdk);
    let d = tempfile::tempdir().unwrap();
    let app = app_tree(jdk, d.path(), source);
    let log = d.path().join("app.replay");
    let main = if source { "AppData.java" } else { "AppData" };
    let rec = java_here(jdk, &app, &format!("record,log={}", log.display()), &[main]);
    let out = ok(&rec, &format!("{n}: record {main}"));
    assert!(rec.stderr.is_empty(), "{n}: {}", rec.stderr);
    for want in [
        "data [hello data]",
        "outside [outside one]",
        "outside via app/.. [outside one]",
        "Thing.class magic cafebabe",
        "jar META-INF/:0 META-INF/MANIFEST.MF:",
        "note [note one]",
        "own class resource true",
    ] {
        assert!(out.contains(want), "{n}: {want}:\n{out}");
    }
    change_app(jdk, d.path(), &app);
    let live = java_here(jdk, &app, "off", &[main]);
    assert_ne!(ok(&live, "live"), out, "{n}: the change is visible live");
    let rep = java_here(jdk, &app, &format!("replay,log={}", log.display()), &[main]);
    assert_eq!(ok(&rep, &format!("{n}: replay {main}")), out, "{n}");
    assert!(rep.stderr.is_empty(), "{n}: {}", rep.stderr);
}

#[test]
fn a_program_reading_data_beside_its_classes_class_files_jars_and_dotdot_replays() {
    for jdk in jdks() {
        app_replays(jdk, false);
    }
}

#[test]
fn a_source_file_program_replays_its_reads() {
    for jdk in jdks() {
        app_replays(jdk, true);
    }
}

#[test]
fn sha1prng_drbg_and_the_default_secure_random_replay_with_another_heap() {
    for jdk in jdks() {
        let r = record(jdk, "Entropy", &[], |_| {});
        assert_eq!(
            r.kinds
                .get("sun.security.provider.SeedGenerator.getSystemEntropy")
                .copied(),
            Some(2),
            "{}: SHA1PRNG's and DRBG's seeders: {:?}",
            name(jdk),
            r.kinds
        );
        // Another heap size: Runtime.totalMemory/freeMemory, which the seeders digest, differ.
        assert_replays(jdk, &r, &["-Xms48m", "-Xmx48m"], "Entropy", &[]);
        let live = replay_tests::jvm::java(jdk, r.dir.path(), &[], None, "Entropy", &[]);
        assert_ne!(text(&live.stdout), r.out, "{}", name(jdk));
    }
}

const BUILD_XML: &str = r#"<project name="demo" default="dist">
  <target name="dist">
    <mkdir dir="build/classes"/>
    <javac srcdir="src" destdir="build/classes" includeantruntime="false"/>
    <jar destfile="build/demo.jar" basedir="build/classes"/>
    <checksum file="build/demo.jar" algorithm="SHA-256" property="demo.sum"/>
    <echo message="sum ${demo.sum}"/>
  </target>
</project>
"#;

fn ant(home: &Path, dir: &Path, opts: &str) -> Finished {
    run(Command::new("ant")
        .arg("-noinput")
        .current_dir(dir)
        .env("JAVA_HOME", home)
        .env(
            "ANT_OPTS",
            format!("-agentpath:{}={opts}", agent().display()),
        )
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .env_remove("CLASSPATH"))
}

/// ant (Debian's, where installed) compiling, jarring and checksumming a project: the
/// source changed and the build directory removed, replay builds the recorded jar byte for
/// byte; with the build directory left in place too (ant's `mkdir` runs live and returns the
/// recorded outcome).
#[test]
fn ant_builds_the_recorded_jar_or_diverges_loudly() {
    if !Path::new("/usr/share/ant/lib/ant.jar").is_file() {
        eprintln!("ant is not installed (apt-get install ant): nothing to run");
        return;
    }
    let mut ran = 0;
    for home in jdk_homes() {
        let n = home_name(&home);
        // Debian's ant 1.10.13 asks for a Security Manager, which JDK 24 and later refuse.
        let version = run(Command::new("ant").arg("-version").env("JAVA_HOME", &home));
        if !version.status.success() {
            eprintln!(
                "{n}: ant does not start on this JDK: {}",
                version.stderr.lines().next().unwrap_or("")
            );
            continue;
        }
        ran += 1;
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("src/demo")).unwrap();
        std::fs::write(d.path().join("build.xml"), BUILD_XML).unwrap();
        let app = d.path().join("src/demo/App.java");
        std::fs::write(
            &app,
            "package demo; public class App { public static void main(String[] a) { System.out.println(\"app\"); } }",
        )
        .unwrap();
        let log = d.path().join("ant.replay");
        let rec = ant(&home, d.path(), &format!("record,log={}", log.display()));
        let out = ok(&rec, &format!("{n}: record ant"));
        assert!(out.contains("BUILD SUCCESSFUL"), "{n}: {out}");
        let jar = std::fs::read(d.path().join("build/demo.jar")).unwrap();

        std::fs::write(&app, "package demo; public class App { changed }").unwrap();
        std::fs::remove_dir_all(d.path().join("build")).unwrap();
        let rep = ant(&home, d.path(), &format!("replay,log={}", log.display()));
        assert_eq!(ok(&rep, &format!("{n}: replay ant")), out, "{n}");
        assert_eq!(rep.stderr, rec.stderr, "{n}");
        assert_eq!(
            std::fs::read(d.path().join("build/demo.jar")).unwrap(),
            jar,
            "{n}: the replayed build made another jar"
        );

        // The build directory is there now: ant's mkdir still gets the recorded answer (the
        // directory was made), and the replay builds the same jar again.
        let again = ant(&home, d.path(), &format!("replay,log={}", log.display()));
        assert_eq!(ok(&again, &format!("{n}: replay ant again")), out, "{n}");
        assert_eq!(
            std::fs::read(d.path().join("build/demo.jar")).unwrap(),
            jar,
            "{n}: the second replayed build made another jar"
        );
    }
    assert!(ran > 0, "ant runs on none of the JDKs");
}
