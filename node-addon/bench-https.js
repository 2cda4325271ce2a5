'use strict';
// Per-request cost of the network hooks over TLS (lib/net.js, tls.connect): sequential
// https.get requests over one keep-alive connection, https.get with a new TLS connection per
// request (agent: false, a full handshake each), and fetch() of an https URL, against a
// loopback https server with a self-signed certificate; run live (no addon), recorded, and
// replayed with the server stopped. Prints ms/request and the ratios to live.
//   node bench-https.js [requests] [runs]
// REPLAY_NODE_PKG=<dir> points at an installed package (default: this folder, which needs
// replay_node.node, i.e. npm install). Needs openssl, or the test pair in
// ../tests/node/fixtures/.
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');

const CLIENT = `
const https = require('https');
const [port, n, size] = process.argv.slice(2).map(Number);
const ca = require('fs').readFileSync(process.argv[5]);
const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
const get = (a) => new Promise((resolve, reject) => {
  https.get({ host: '127.0.0.1', port, path: '/b?size=' + size, agent: a, ca }, (r) => {
    let len = 0;
    r.on('data', (d) => (len += d.length));
    r.on('end', () => resolve(len));
  }).on('error', reject);
});
(async () => {
  // process.uptime: the same monotonic clock as performance.now, which is hooked (replay
  // would hand back the recorded timings).
  await get(agent); // warm-up
  let t = process.uptime();
  for (let i = 0; i < n; i++) await get(agent);
  const httpsMs = ((process.uptime() - t) * 1e3) / n;
  await get(false);
  t = process.uptime();
  for (let i = 0; i < n; i++) await get(false);
  const handshakeMs = ((process.uptime() - t) * 1e3) / n;
  await (await fetch('https://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  t = process.uptime();
  for (let i = 0; i < n; i++) await (await fetch('https://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  const fetchMs = ((process.uptime() - t) * 1e3) / n;
  agent.destroy();
  console.log(JSON.stringify({ httpsMs, handshakeMs, fetchMs }));
})();
`;

// A key and self-signed certificate for 127.0.0.1 in `dir`: openssl's, else the test pair.
function certificate(dir) {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  const r = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key,
      '-out', cert, '-days', '30', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    { encoding: 'utf8' },
  );
  if (r.error || r.status !== 0) {
    const fixtures = path.join(__dirname, '..', 'tests', 'node', 'fixtures');
    fs.copyFileSync(path.join(fixtures, 'localhost-key.pem'), key);
    fs.copyFileSync(path.join(fixtures, 'localhost-cert.pem'), cert);
  }
  return { key: fs.readFileSync(key), cert: fs.readFileSync(cert), certPath: cert };
}

function run(pkg, client, mode, log, args) {
  // fetch trusts the test certificate through NODE_EXTRA_CA_CERTS (https.get gets `ca`).
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('REPLAY_') && k !== 'NODE_OPTIONS') env[k] = v;
  env.NODE_EXTRA_CA_CERTS = args[3];
  const nodeArgs = [];
  if (mode) {
    env.REPLAY_MODE = mode;
    env.REPLAY_LOG = log;
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

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const n = Number(process.argv[2] || 300);
  const runs = Number(process.argv[3] || 3);
  const pkg = process.env.REPLAY_NODE_PKG || __dirname;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-https-'));
  const client = path.join(dir, 'client.js');
  fs.writeFileSync(client, CLIENT);
  const files = certificate(dir);
  for (const size of [1024, 65536]) {
    const body = Buffer.alloc(size, 'x');
    const server = https.createServer({ key: files.key, cert: files.cert }, (req, res) => res.end(body));
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const port = server.address().port;
    const live = [];
    const rec = [];
    const logs = [];
    for (let i = 0; i < runs; i++) {
      live.push(await run(pkg, client, null, null, [port, n, size, files.certPath]));
      const log = path.join(dir, `s${size}-${i}.replay`);
      logs.push(log);
      rec.push(await run(pkg, client, 'record', log, [port, n, size, files.certPath]));
    }
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    const rep = [];
    for (const log of logs) rep.push(await run(pkg, client, 'replay', log, [port, n, size, files.certPath]));
    const names = { httpsMs: 'https.get', handshakeMs: 'https.get new', fetchMs: 'fetch https' };
    for (const what of Object.keys(names)) {
      const l = median(live.map((x) => x[what]));
      const r = median(rec.map((x) => x[what]));
      const p = median(rep.map((x) => x[what]));
      const name = `${names[what]} ${size / 1024} KB`;
      console.log(
        `${name.padEnd(20)} live ${l.toFixed(3)} ms  record ${r.toFixed(3)} ms (${(r / l).toFixed(2)}x)  ` +
          `replay ${p.toFixed(3)} ms (${(p / l).toFixed(2)}x)`,
      );
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
