'use strict';
// npm install hook: puts the native part next to index.js as replay_node.node.
// - In a source checkout (Cargo.toml beside this file): builds it with cargo. A prebuilt/
//   folder there can only be a leftover of packing, possibly stale, so source wins.
// - In a packed package (npm pack, see prepack.js): copies prebuilt/<platform>-<arch>/ if this
//   Node speaks the N-API version it needs (N-API is ABI-stable, so any Node >= 20 does).
// - Otherwise one line saying why, and a non-zero exit. No download.
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

// The addon is built with napi's `napi4` feature: it needs N-API 4 or later.
const NAPI_VERSION = 4;
const dest = path.join(__dirname, 'replay_node.node');

function die(msg) {
  process.stderr.write(`replay-node: ${msg}\n`);
  process.exit(1);
}

// Write a new file and rename it over the old one: a running process keeps its mapping.
function install(from) {
  const tmp = `${dest}.tmp-${process.pid}`;
  fs.copyFileSync(from, tmp);
  fs.renameSync(tmp, dest);
}

function fromSource() {
  process.stderr.write('replay-node: building the native part from source with cargo (takes a few minutes)...\n');
  const cargo = process.env.CARGO || 'cargo';
  // Progress and diagnostics go to stderr as cargo prints them; stdout carries the JSON that
  // names the built library.
  const r = spawnSync(cargo, ['build', '--release', '-p', 'replay-node', '--message-format=json-render-diagnostics'], {
    cwd: __dirname,
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 256 << 20,
    encoding: 'utf8',
  });
  if (r.error) die(`cannot run ${cargo} (${r.error.code || r.error.message}): install Rust (https://rustup.rs) to build the native part`);
  if (r.status !== 0) die(`cargo build --release -p replay-node failed (status ${r.status}); the compiler output is above`);
  let lib = null;
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    let m;
    try {
      m = JSON.parse(line);
    } catch (_) {
      continue;
    }
    if (m.reason === 'compiler-artifact' && m.target && m.target.name === 'replay_node') {
      lib = (m.filenames || []).find((f) => /\.(so|dylib|dll)$/.test(f)) || lib;
    }
  }
  if (!lib) die('cargo built no replay_node library (no compiler-artifact message named it)');
  install(lib);
  process.stderr.write(`replay-node: built ${dest}\n`);
}

function prebuilt(dir) {
  const napi = Number(process.versions.napi || 0);
  if (napi < NAPI_VERSION) {
    die(`this Node (${process.version}) has N-API ${napi}; the prebuilt binary needs N-API ${NAPI_VERSION} (Node >= 20)`);
  }
  install(path.join(dir, 'replay_node.node'));
  // Load it once here, so a binary this system cannot run (an older C library, say) fails the
  // install with the loader's reason instead of the first recording.
  try {
    require(dest);
  } catch (e) {
    fs.rmSync(dest, { force: true });
    die(`the prebuilt binary for ${process.platform}-${process.arch} does not load here: ${String(e.message).split('\n')[0]}`);
  }
  process.stderr.write(`replay-node: using the prebuilt binary for ${process.platform}-${process.arch}\n`);
}

const target = `${process.platform}-${process.arch}`;
const pre = path.join(__dirname, 'prebuilt', target);
if (fs.existsSync(path.join(__dirname, 'Cargo.toml'))) {
  fromSource();
} else if (fs.existsSync(path.join(pre, 'replay_node.node'))) {
  prebuilt(pre);
} else {
  let have = [];
  try {
    have = fs.readdirSync(path.join(__dirname, 'prebuilt'));
  } catch (_) {
    // no prebuilt folder at all
  }
  die(`no prebuilt binary for ${target} (this package has: ${have.join(', ') || 'none'}) and no source to build from (no Cargo.toml beside ${__filename})`);
}
