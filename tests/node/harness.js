'use strict';
// Shared helpers for the node --test suites in this folder: where the package is, a fresh
// temporary directory per test, and running a script under record or replay.
const assert = require('node:assert');
const { spawnSync, spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

// Set by tests/tests/node_suite.rs (the package as npm install leaves it). Run by hand:
// REPLAY_NODE_PKG=/path/to/assembled/replay-node node --test tests/node/
const PKG = process.env.REPLAY_NODE_PKG || path.join(__dirname, '..', '..', 'node-addon');
if (!fs.existsSync(path.join(PKG, 'replay_node.node'))) {
  throw new Error(`no replay_node.node in ${PKG}: set REPLAY_NODE_PKG (cargo test runs set it)`);
}

function tmpdir(name = 'replay-node-test') {
  const base = process.env.REPLAY_TEST_TMP || os.tmpdir();
  return fs.mkdtempSync(path.join(base, `${name}-`));
}

// The user's config dir of the children (lib/net.js keeps its redaction key there): one of
// this test process, never the real one.
let configDir = null;
function testConfig() {
  if (configDir === null) configDir = tmpdir('config');
  return configDir;
}

// The environment of a child: ours without any REPLAY_* (the test sets what it means).
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('REPLAY_') && k !== 'NODE_OPTIONS' && k !== 'NODE_TEST_CONTEXT') env[k] = v;
  }
  env.XDG_CONFIG_HOME = testConfig();
  return Object.assign(env, extra);
}

// Runs `node [--require PKG] script args...` in `mode` ('record', 'replay', 'off' or null
// for no hook at all) with log `log`. Returns { code, signal, stdout, stderr }.
// opts: { env, args (script args), nodeArgs (before the script, replacing --require PKG when
// set), cwd, timeout (ms, default 60 s: a hang fails the test instead of the suite) }.
function runNode(mode, log, script, opts = {}) {
  const env = cleanEnv(opts.env || {});
  if (mode) {
    env.REPLAY_MODE = mode;
    if (log) env.REPLAY_LOG = log;
  }
  const nodeArgs = opts.nodeArgs || (mode ? ['--require', PKG] : []);
  const r = spawnSync(process.execPath, [...nodeArgs, script, ...(opts.args || [])], {
    env,
    cwd: opts.cwd || path.dirname(script),
    encoding: 'utf8',
    timeout: opts.timeout || 60000,
    maxBuffer: 64 << 20,
  });
  if (r.error) throw r.error;
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

// The same, asynchronously (for a test that serves a loopback server from this process
// while the child runs). Resolves to { code, signal, stdout, stderr }.
function runNodeAsync(mode, log, script, opts = {}) {
  const env = cleanEnv(opts.env || {});
  if (mode) {
    env.REPLAY_MODE = mode;
    if (log) env.REPLAY_LOG = log;
  }
  const nodeArgs = opts.nodeArgs || (mode ? ['--require', PKG] : []);
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [...nodeArgs, script, ...(opts.args || [])], {
      env,
      cwd: opts.cwd || path.dirname(script),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    c.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    c.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => c.kill('SIGKILL'), opts.timeout || 60000);
    c.on('error', reject);
    c.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// Writes `source` to `<dir>/<name>` and returns the path.
function script(dir, name, source) {
  const p = path.join(dir, name);
  fs.writeFileSync(p, source);
  return p;
}

// The `replay` CLI of the same build (beside the addon in target/release), or null.
function cli() {
  const candidates = [
    process.env.CARGO_TARGET_DIR && path.join(process.env.CARGO_TARGET_DIR, 'release', 'replay'),
    path.join(__dirname, '..', '..', 'target', 'release', 'replay'),
  ].filter(Boolean);
  return candidates.find((p) => fs.existsSync(p)) || null;
}

// Records t.app (args: [t.d]) into t.log, lets `check` look at its stdout, checks it against a
// run without the addon, lets `changeWorld(t.d)` change the files and checks that this shows
// without replay, then replays: the same stdout, in the recorded order, and a quiet stderr.
function recordChangeReplay(t, check, changeWorld) {
  const rec = runNode('record', t.log, t.app, { args: [t.d] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  check(rec.stdout);
  const bare = runNode(null, null, t.app, { args: [t.d] });
  assert.strictEqual(bare.code, 0, bare.stderr);
  // Sorted: concurrent completions may come in another order from run to run.
  const sorted = (out) => out.split('\n').sort().join('\n');
  assert.strictEqual(sorted(bare.stdout), sorted(rec.stdout), 'record changes what the program sees');
  changeWorld(t.d);
  const live = runNode(null, null, t.app, { args: [t.d] });
  assert.notStrictEqual(sorted(live.stdout), sorted(rec.stdout), 'the changed world must show without replay');
  const rep = runNode('replay', t.log, t.app, { args: [t.d] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  return rec.stdout;
}

// Replayed with other arguments than recorded (the test's own choice, or a server's new port):
// the core warns in one line, which must be there; returns the rest of stderr.
function argsWarned(stderr) {
  const re = /^replay: warning: the program's arguments differ from the recording's: .*\n/m;
  assert.match(stderr, re);
  return stderr.replace(re, '');
}

// The environment of a replay whose program prints what the test changed on purpose (a
// module edited after recording runs edited, the mode, a count made live): its output is not
// compared with the recording's.
const OUTPUT_OFF = Object.freeze({ REPLAY_VERIFY_OUTPUT: 'off' });

module.exports = { PKG, tmpdir, runNode, runNodeAsync, script, cleanEnv, cli, recordChangeReplay, argsWarned, OUTPUT_OFF };
