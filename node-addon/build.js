'use strict';
// npm install hook: builds the native part from source with cargo (from the workspace this
// folder belongs to) and copies it next to index.js as replay_node.node. No download.
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

function die(msg) {
  process.stderr.write(`replay-node: ${msg}\n`);
  process.exit(1);
}

const cargo = process.env.CARGO || 'cargo';
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
const dest = path.join(__dirname, 'replay_node.node');
// Write a new file and rename it over the old one: a running process keeps its mapping.
const tmp = `${dest}.tmp-${process.pid}`;
fs.copyFileSync(lib, tmp);
fs.renameSync(tmp, dest);
process.stdout.write(`replay-node: built ${dest}\n`);
