'use strict';
// The measuring loop of the network benchmarks (bench-http.js, bench-https.js): for each body
// size, a loopback server in this process; the client script run `runs` times live (no addon)
// and recorded, alternately, then the server stopped and every recording replayed. Each run
// prints one JSON line of figures; the medians go to the bench's report function.
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

// Runs `node [--require pkg] client args...` with REPLAY_MODE=mode (none when mode is null);
// resolves to the JSON object of the client's last stdout line.
function run(pkg, client, mode, log, args, extraEnv = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('REPLAY_') && k !== 'NODE_OPTIONS') env[k] = v;
  Object.assign(env, extraEnv);
  const nodeArgs = [];
  if (mode) {
    env.REPLAY_MODE = mode;
    env.REPLAY_LOG = log;
    // The client prints its own timings, which replay must not compare with the recording's.
    if (mode === 'replay') env.REPLAY_VERIFY_OUTPUT = 'off';
    nodeArgs.push('--require', pkg);
  }
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [...nodeArgs, client, ...args.map(String)], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('error', reject);
    c.on('close', (code) => {
      if (code !== 0) reject(new Error(`${mode || 'live'} run exited with ${code}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

// `count` bodies of `size` bytes of JSON-like records with pseudo-random numbers (the same
// every run): zstd level 1 gets ~5x out of them at ~500 MB/s, about what API responses give.
function jsonBodies(size, count) {
  const out = [];
  let x = 12345;
  for (let b = 0; b < count; b++) {
    let s = '';
    while (s.length < size) {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      s += `{"id":${x},"name":"user${x % 9973}","score":${(x % 100000) / 7},"tags":["t${x % 13}","u${x % 7}"]},`;
    }
    out.push(Buffer.from(s.slice(0, size)));
  }
  return out;
}

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// opts: {
//   name: temp dir prefix, client: the client's source,
//   sizes: body sizes; a number is that many bytes of 'x', { size, json: true } is 64 distinct
//   JSON-like bodies of that size served in turn (what a log's compression really costs:
//   repeated 'x' bytes or one body over and over compress at many GB/s),
//   setup(dir): once, returns context passed on (e.g. certificate files),
//   server(next, ctx): a listening-ready server (not yet listening) answering next(), the
//   next body,
//   args(port, n, size, ctx): the client's arguments, env(ctx): extra client environment,
//   report(label, pick): prints; label names the body ('64 KB json'); pick(key) is
//   { live, record, replay } medians of that figure.
// }
// REPLAY_NODE_PKG=<dir> points at an installed package (default: node-addon/, which needs
// replay_node.node, i.e. npm install).
async function measure(opts) {
  const n = Number(process.argv[2] || 300);
  const runs = Number(process.argv[3] || 3);
  const pkg = process.env.REPLAY_NODE_PKG || path.join(__dirname, '..');
  // Without the native part the addon runs the program live and the figures would compare
  // live with live (and the replay runs would fail once the server is stopped).
  if (!fs.existsSync(path.join(pkg, 'replay_node.node'))) {
    console.error(`${opts.name}: ${pkg} has no replay_node.node: run npm install (or node build.js) there first`);
    process.exit(2);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${opts.name}-`));
  try {
    const client = path.join(dir, 'client.js');
    fs.writeFileSync(client, opts.client);
    const ctx = opts.setup ? opts.setup(dir) : {};
    const env = opts.env ? opts.env(ctx) : {};
    for (const body of opts.sizes) {
      const size = typeof body === 'number' ? body : body.size;
      const json = typeof body === 'object' && body.json;
      const label = `${size / 1024} KB${json ? ' json' : ''}`;
      const bodies = json ? jsonBodies(size, 64) : [Buffer.alloc(size, 'x')];
      let turn = 0;
      const server = opts.server(() => bodies[turn++ % bodies.length], ctx);
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const args = opts.args(server.address().port, n, size, ctx);
      const live = [];
      const rec = [];
      const logs = [];
      for (let i = 0; i < runs; i++) {
        live.push(await run(pkg, client, null, null, args, env));
        const log = path.join(dir, `s${size}${json ? 'j' : ''}-${i}.replay`);
        logs.push(log);
        rec.push(await run(pkg, client, 'record', log, args, env));
      }
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      const rep = [];
      for (const log of logs) rep.push(await run(pkg, client, 'replay', log, args, env));
      const pick = (key) => ({
        live: median(live.map((x) => x[key])),
        record: median(rec.map((x) => x[key])),
        replay: median(rep.map((x) => x[key])),
      });
      opts.report(label, pick);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// "live 0.615 ms  record 0.624 ms (1.01x)  replay 0.392 ms (0.64x)"
function line(m) {
  return (
    `live ${m.live.toFixed(3)} ms  record ${m.record.toFixed(3)} ms (${(m.record / m.live).toFixed(2)}x)  ` +
    `replay ${m.replay.toFixed(3)} ms (${(m.replay / m.live).toFixed(2)}x)`
  );
}

function main(opts) {
  measure(opts).catch((e) => {
    console.error(e.message);
    process.exit(1);
  });
}

module.exports = { run, median, measure, line, main };
