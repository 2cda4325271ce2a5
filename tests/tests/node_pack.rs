//! The Node package as a user gets it: `npm pack` of node-addon (its prepack puts the release
//! build in as a prebuilt binary), `npm install` of the tarball into a fresh project with no
//! Cargo workspace and no cargo, then `node --require replay-node` records and replays.

use replay_tests::{command, release_artifact, release_dir, replay_command, repo, run};
use std::path::Path;
use std::process::Command;

fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("{tool} is not installed: skipping the npm pack test");
    }
    ok
}

/// npm with its cache, logs and config kept inside `dir`, and no cargo to fall back on.
fn npm(dir: &Path) -> Command {
    let mut c = command(Path::new("npm"));
    c.env("npm_config_cache", dir.join("npm-cache"))
        .env("npm_config_userconfig", dir.join("npmrc"))
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false")
        .env("CARGO", dir.join("no-cargo-here"));
    c
}

#[test]
fn a_packed_addon_installs_without_cargo_and_records_and_replays() {
    if !have("node") || !have("npm") {
        return;
    }
    release_artifact("libreplay_node.so");
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();

    let mut pack = npm(tmp);
    pack.current_dir(repo().join("node-addon"))
        .env("CARGO_TARGET_DIR", release_dir().parent().unwrap())
        .args(["pack", "--json", "--pack-destination"])
        .arg(tmp);
    let packed = run(&mut pack);
    assert_eq!(packed.code(), 0, "npm pack failed:\n{}", packed.stderr);
    let info: serde_json::Value = serde_json::from_slice(&packed.stdout).expect("npm pack --json");
    let files: Vec<&str> = info[0]["files"]
        .as_array()
        .expect("file list")
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for want in [
        "prebuilt/linux-x64/replay_node.node",
        "build.js",
        "index.js",
        "lib/events.js",
    ] {
        assert!(
            files.contains(&want),
            "{want} is not in the tarball: {files:?}"
        );
    }
    assert!(
        !files
            .iter()
            .any(|f| f.ends_with("Cargo.toml") || f.ends_with(".rs")),
        "{files:?}"
    );
    assert!(
        !repo().join("node-addon/prebuilt").exists(),
        "postpack leaves prebuilt/ behind in the checkout"
    );
    let tgz = tmp.join(info[0]["filename"].as_str().expect("tarball name"));

    let app = tmp.join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::write(
        app.join("package.json"),
        r#"{"name":"app","version":"1.0.0","private":true}"#,
    )
    .unwrap();
    std::fs::write(
        app.join("app.js"),
        "console.log('now', Date.now(), Math.random());\n",
    )
    .unwrap();
    let mut inst = npm(tmp);
    inst.current_dir(&app)
        .args(["install", "--offline", "--foreground-scripts"])
        .arg(&tgz);
    let installed = run(&mut inst);
    assert_eq!(
        installed.code(),
        0,
        "npm install of the tarball failed:\n{}{}",
        installed.stderr,
        installed.stdout_text()
    );
    let all = format!("{}{}", installed.stdout_text(), installed.stderr);
    assert!(
        all.contains("using the prebuilt binary for linux-x64"),
        "{all}"
    );
    assert!(
        !all.contains("cargo"),
        "the install went near cargo:\n{all}"
    );
    let pkg = app.join("node_modules/replay-node");
    assert!(pkg.join("replay_node.node").is_file());

    let log = tmp.join("app.replay");
    let node = |mode: &str| {
        let mut c = replay_command(Path::new("node"), mode, &log);
        c.current_dir(&app)
            .args(["--require", "replay-node", "app.js"]);
        run(&mut c)
    };
    let rec = node("record");
    assert_eq!(rec.code(), 0, "record: {}", rec.stderr);
    assert!(
        rec.stdout_text().starts_with("now "),
        "{}",
        rec.stdout_text()
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    let rep = node("replay");
    assert_eq!(rep.code(), 0, "replay: {}", rep.stderr);
    assert_eq!(rep.stdout_text(), rec.stdout_text());
    let live = node("off");
    assert_ne!(
        live.stdout_text(),
        rec.stdout_text(),
        "a live run prints new values"
    );

    // The same package with no binary for this platform and no source: one line, non-zero.
    std::fs::remove_dir_all(pkg.join("prebuilt")).unwrap();
    let mut again = command(Path::new("node"));
    again.current_dir(&pkg).arg("build.js");
    let failed = run(&mut again);
    assert_ne!(failed.code(), 0);
    assert!(
        failed
            .stderr
            .starts_with("replay-node: no prebuilt binary for linux-x64")
            && failed.stderr.contains("no source to build from")
            && failed.stderr.lines().count() == 1,
        "{}",
        failed.stderr
    );
}
