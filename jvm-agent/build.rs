//! Compiles the hook class (java/java/lang/ReplayHooks.java) with the JDK's javac so that
//! libreplay.so can carry its bytes (include_bytes!) and stay one self-contained file.
//!
//! javac is found through JAVA_HOME, then PATH, then /usr/lib/jvm. The class is compiled as
//! a patch of java.base (it lives in java.lang and uses jdk.internal.misc) for class-file
//! version 61, so one build runs on JDK 17 and every later JDK.

use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = "java/java/lang/ReplayHooks.java";
/// HttpClient's exchange hook, a patch of java.net.http (defined into that module's loader
/// when HttpClientFacade loads).
const HTTP_SOURCE: &str = "java-http/jdk/internal/net/http/ReplayHttp.java";

fn javac() -> Result<PathBuf, String> {
    let exe = |dir: &Path| dir.join("bin").join("javac");
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let j = exe(Path::new(&home));
        if j.is_file() {
            return Ok(j);
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let j = dir.join("javac");
            if j.is_file() {
                return Ok(j);
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/usr/lib/jvm") {
        let mut homes: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| exe(p).is_file())
            .collect();
        homes.sort();
        if let Some(h) = homes.first() {
            return Ok(exe(h));
        }
    }
    Err("javac not found (set JAVA_HOME or put a JDK 17+ javac on PATH)".into())
}

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed={HTTP_SOURCE}");
    println!("cargo:rerun-if-env-changed=JAVA_HOME");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let classes = out.join("classes");
    let _ = std::fs::remove_dir_all(&classes);
    std::fs::create_dir_all(&classes).expect("create OUT_DIR/classes");
    let empty = out.join("no-module-sources");
    std::fs::create_dir_all(&empty).expect("create OUT_DIR/no-module-sources");
    let javac = match javac() {
        Ok(j) => j,
        Err(e) => {
            println!("cargo:warning={e}");
            std::process::exit(1);
        }
    };
    let status = Command::new(&javac)
        .args([
            // Two patched modules need javac's multi-module mode: an empty module source
            // path, one output directory per module.
            "--module-source-path",
        ])
        .arg(&empty)
        .args([
            "--patch-module",
            "java.base=java",
            "--patch-module",
            "java.net.http=java-http",
            "-source",
            "17",
            "-target",
            "17",
            "-Xlint:-options",
        ])
        // No invokedynamic string concatenation: the class may run before indy works.
        .arg("-XDstringConcat=inline")
        .arg("-g:none")
        .arg("-d")
        .arg(&classes)
        .arg(SOURCE)
        .arg(HTTP_SOURCE)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            println!(
                "cargo:warning={} failed ({s}) compiling {SOURCE}",
                javac.display()
            );
            std::process::exit(1);
        }
        Err(e) => {
            println!("cargo:warning=cannot run {}: {e}", javac.display());
            std::process::exit(1);
        }
    }
    let class = one_class(&classes, "java.base/java/lang", "ReplayHooks.class");
    println!("cargo:rustc-env=REPLAY_HOOKS_CLASS={}", class.display());
    let http = one_class(
        &classes,
        "java.net.http/jdk/internal/net/http",
        "ReplayHttp.class",
    );
    println!("cargo:rustc-env=REPLAY_HTTP_CLASS={}", http.display());
}

/// The class file `name` in `dir` under `classes`, which must be the only one there: the
/// agent defines each hook class from one file (no nested or anonymous classes).
fn one_class(classes: &Path, dir: &str, name: &str) -> PathBuf {
    let path = classes.join(dir).join(name);
    let extra: Vec<_> = std::fs::read_dir(classes.join(dir))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .filter(|n| n != name)
                .collect()
        })
        .unwrap_or_default();
    if !extra.is_empty() || !path.is_file() {
        println!("cargo:warning={name} must be the only class its hook source compiles to; also: {extra:?}");
        std::process::exit(1);
    }
    path
}
