//! Embeds the Node front end's JavaScript (node-addon/index.js and lib/) into the `replay`
//! binary, so that `replay record -- node app.js` needs nothing but this build: the launcher
//! writes the files out next to a copy of the addon this build made (see
//! `src/cmd/runtime.rs`). The list is taken from the directory, so new lib files come along.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let rel = format!("{rel}{name}");
        if path.is_dir() {
            collect(&path, &format!("{rel}/"), out);
        } else if name.ends_with(".js") || name.ends_with(".mjs") || name.ends_with(".json") {
            out.push((rel, path));
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("..")
        .join("node-addon");
    let mut files = Vec::new();
    for top in ["index.js", "index.mjs", "package.json"] {
        let p = root.join(top);
        if p.is_file() {
            files.push((top.to_string(), p));
        }
    }
    collect(&root.join("lib"), "lib/", &mut files);
    let mut code = String::from("pub const NODE_FILES: &[(&str, &str)] = &[\n");
    for (rel, path) in &files {
        let abs = path.canonicalize().unwrap_or_else(|_| path.clone());
        writeln!(
            code,
            "    ({rel:?}, include_str!({:?})),",
            abs.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("node_files.rs");
    std::fs::write(out, code).unwrap();
    println!("cargo:rerun-if-changed={}", root.join("index.js").display());
    println!(
        "cargo:rerun-if-changed={}",
        root.join("index.mjs").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        root.join("package.json").display()
    );
    println!("cargo:rerun-if-changed={}", root.join("lib").display());
}
