'use strict';
// npm prepack/postpack hook: `npm pack` ships the release build of the native part as
// prebuilt/<platform>-<arch>/replay_node.node, so the packed package installs without cargo
// (build.js). `node prepack.js --clean` (postpack) removes the folder again.
// REPLAY_NODE_LIB=/path/to/libreplay_node.so packs that file instead of the workspace's build.
const fs = require('fs');
const path = require('path');

function die(msg) {
  process.stderr.write(`replay-node prepack: ${msg}\n`);
  process.exit(1);
}

const out = path.join(__dirname, 'prebuilt');
if (process.argv.includes('--clean')) {
  fs.rmSync(out, { recursive: true, force: true });
  process.exit(0);
}

function workspace() {
  for (let d = __dirname; ; d = path.dirname(d)) {
    const toml = path.join(d, 'Cargo.toml');
    if (fs.existsSync(toml) && /^\s*\[workspace\]/m.test(fs.readFileSync(toml, 'utf8'))) return d;
    if (path.dirname(d) === d) die('no Cargo workspace above this folder: pack from a source checkout, or set REPLAY_NODE_LIB');
  }
}

function newest(dir) {
  let best = { t: 0, f: null };
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    const b = e.isDirectory() ? newest(p) : { t: fs.statSync(p).mtimeMs, f: p };
    if (b.t > best.t) best = b;
  }
  return best;
}

const names = { linux: 'libreplay_node.so', darwin: 'libreplay_node.dylib', win32: 'replay_node.dll' };
let lib = process.env.REPLAY_NODE_LIB;
if (!lib) {
  const ws = workspace();
  const target = path.resolve(ws, process.env.CARGO_TARGET_DIR || 'target');
  lib = path.join(target, 'release', names[process.platform] || names.linux);
  if (!fs.existsSync(lib)) die(`${lib} is not built: run cargo build --release -p replay-node first`);
  // Cargo rebuilds when a source is newer than its output, so the same test tells a stale library.
  const lt = fs.statSync(lib).mtimeMs;
  for (const src of [path.join(__dirname, 'src'), path.join(ws, 'core', 'src')]) {
    if (!fs.existsSync(src)) continue;
    const n = newest(src);
    if (n.t > lt) die(`${lib} is older than ${n.f}: run cargo build --release -p replay-node first`);
  }
} else if (!fs.existsSync(lib)) {
  die(`REPLAY_NODE_LIB=${lib} does not exist`);
}
const dir = path.join(out, `${process.platform}-${process.arch}`);
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });
fs.copyFileSync(lib, path.join(dir, 'replay_node.node'));
process.stderr.write(`replay-node prepack: packed ${lib} as prebuilt/${process.platform}-${process.arch}/replay_node.node\n`);
