'use strict';
// Per-request cost of the network hooks (lib/net.js): sequential http.get requests over a
// keep-alive connection and fetch() calls against a loopback server, run live (no addon),
// recorded, and replayed with the server stopped. Prints ms/request, elapsed and CPU time of
// the client process (all its threads), medians over the runs, and the ratios to live.
//   node bench-http.js [requests] [runs]
// REPLAY_NODE_PKG=<dir> points at an installed package (default: this folder, which needs
// replay_node.node, i.e. npm install). The loop is bench/common.js's.
const http = require('http');
const { main, line } = require('./bench/common.js');

const CLIENT = `
const http = require('http');
const [port, n, size] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = () => new Promise((resolve, reject) => {
  http.get({ host: '127.0.0.1', port, path: '/b?size=' + size, agent }, (r) => {
    let len = 0;
    r.on('data', (d) => (len += d.length));
    r.on('end', () => resolve(len));
  }).on('error', reject);
});
(async () => {
  // process.uptime: the same monotonic clock as performance.now, which is hooked (replay
  // would hand back the recorded timings). process.cpuUsage (not hooked) counts the work of
  // every thread of the process, the recorder's included: on a loaded machine it varies less
  // than the elapsed time.
  const cpu = (c) => {
    const d = process.cpuUsage(c);
    return (d.user + d.system) / 1e3;
  };
  // Warm-up (recorded too, so record and replay make the same calls): the first requests
  // run interpreted while V8 tiers the code up, the hooks' code as well as node's, and the
  // figure asked for is the cost per request of a running server's client, not start-up.
  for (let i = 0; i < n / 4; i++) await get();
  let t = process.uptime();
  let c = process.cpuUsage();
  for (let i = 0; i < n; i++) await get();
  const httpMs = ((process.uptime() - t) * 1e3) / n;
  const httpCpu = cpu(c) / n;
  for (let i = 0; i < n / 4; i++) await (await fetch('http://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  t = process.uptime();
  c = process.cpuUsage();
  for (let i = 0; i < n; i++) await (await fetch('http://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  const fetchMs = ((process.uptime() - t) * 1e3) / n;
  const fetchCpu = cpu(c) / n;
  agent.destroy();
  console.log(JSON.stringify({ httpMs, fetchMs, httpCpu, fetchCpu }));
})();
`;

main({
  name: 'bench-http',
  client: CLIENT,
  sizes: [1024, 65536, { size: 65536, json: true }],
  server: (next) => http.createServer((req, res) => res.end(next())),
  args: (port, n, size) => [port, n, size],
  report(label, pick) {
    for (const what of ['http', 'fetch']) {
      const name = `${what === 'http' ? 'http.get' : 'fetch'} ${label}`;
      console.log(`${name.padEnd(19)} elapsed ${line(pick(what + 'Ms'))}`);
      console.log(`${''.padEnd(19)} cpu     ${line(pick(what + 'Cpu'))}`);
    }
  },
});
