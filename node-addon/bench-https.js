'use strict';
// Per-request cost of the network hooks over TLS (lib/net.js, tls.connect): sequential
// https.get requests over one keep-alive connection, https.get with a new TLS connection per
// request (agent: false, a full handshake each), and fetch() of an https URL, against a
// loopback https server with a self-signed certificate; run live (no addon), recorded, and
// replayed with the server stopped. Prints ms/request and the ratios to live.
//   node bench-https.js [requests] [runs]
// REPLAY_NODE_PKG=<dir> points at an installed package (default: this folder, which needs
// replay_node.node, i.e. npm install). Needs openssl, or the test pair in
// ../tests/node/fixtures/. The loop is bench/common.js's, the certificate the tests' helper.
const https = require('https');
const path = require('path');
const { main, line } = require('./bench/common.js');
const { certificate } = require(path.join(__dirname, '..', 'tests', 'node', 'certs.js'));

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
  // Warm-up of n/4 requests per loop, recorded too: see bench-http.js.
  for (let i = 0; i < n / 4; i++) await get(agent);
  let t = process.uptime();
  for (let i = 0; i < n; i++) await get(agent);
  const httpsMs = ((process.uptime() - t) * 1e3) / n;
  for (let i = 0; i < n / 4; i++) await get(false);
  t = process.uptime();
  for (let i = 0; i < n; i++) await get(false);
  const handshakeMs = ((process.uptime() - t) * 1e3) / n;
  for (let i = 0; i < n / 4; i++) await (await fetch('https://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  t = process.uptime();
  for (let i = 0; i < n; i++) await (await fetch('https://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  const fetchMs = ((process.uptime() - t) * 1e3) / n;
  agent.destroy();
  console.log(JSON.stringify({ httpsMs, handshakeMs, fetchMs }));
})();
`;

const NAMES = { httpsMs: 'https.get', handshakeMs: 'https.get new', fetchMs: 'fetch https' };

main({
  name: 'bench-https',
  client: CLIENT,
  sizes: [1024, 65536],
  setup: (dir) => certificate(dir),
  server: (next, files) => https.createServer({ key: files.key, cert: files.cert }, (req, res) => res.end(next())),
  args: (port, n, size, files) => [port, n, size, files.certPath],
  // fetch trusts the test certificate through NODE_EXTRA_CA_CERTS (https.get gets `ca`).
  env: (files) => ({ NODE_EXTRA_CA_CERTS: files.certPath }),
  report(label, pick) {
    for (const what of Object.keys(NAMES)) {
      const name = `${NAMES[what]} ${label}`;
      console.log(`${name.padEnd(20)} ${line(pick(what))}`);
    }
  },
});
