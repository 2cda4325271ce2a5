'use strict';
// Per-request cost of the network hooks (lib/net.js): sequential http.get requests over a
// keep-alive connection and fetch() calls against a loopback server, run live (no addon),
// recorded, and replayed with the server stopped. Prints ms/request, elapsed and CPU time of
// the client process (all its threads), medians over the runs, and the ratios to live.
//   node bench-http.js [requests] [runs]
// REPLAY_NODE_PKG=<dir> points at an installed package (default: this folder, which needs
// replay_node.node, i.e. npm install).
const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

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
  await get(); // warm-up
  let t = process.uptime();
  let c = process.cpuUsage();
  for (let i = 0; i < n; i++) await get();
  const httpMs = ((process.uptime() - t) * 1e3) / n;
  const httpCpu = cpu(c) / n;
  await (await fetch('http://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  t = process.uptime();
  c = process.cpuUsage();
  for (let i = 0; i < n; i++) await (await fetch('http://127.0.0.1:' + port + '/b?size=' + size)).arrayBuffer();
  const fetchMs = ((process.uptime() - t) * 1e3) / n;
  const fetchCpu = cpu(c) / n;
  agent.destroy();
  console.log(JSON.stringify({ httpMs, fetchMs, httpCpu, fetchCpu }));
})();
`;

function run(pkg, client, mode, log, args) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('REPLAY_') && k !== 'NODE_OPTIONS') env[k] = v;
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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-http-'));
  const client = path.join(dir, 'client.js');
  fs.writeFileSync(client, CLIENT);
  for (const size of [1024, 65536]) {
    const body = Buffer.alloc(size, 'x');
    const server = http.createServer((req, res) => res.end(body));
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const port = server.address().port;
    const live = [];
    const rec = [];
    const logs = [];
    for (let i = 0; i < runs; i++) {
      live.push(await run(pkg, client, null, null, [port, n, size]));
      const log = path.join(dir, `s${size}-${i}.replay`);
      logs.push(log);
      rec.push(await run(pkg, client, 'record', log, [port, n, size]));
    }
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    const rep = [];
    for (const log of logs) rep.push(await run(pkg, client, 'replay', log, [port, n, size]));
    for (const what of ['http', 'fetch']) {
      const name = `${what === 'http' ? 'http.get' : 'fetch'} ${size / 1024} KB`;
      const line = (unit) => {
        const l = median(live.map((x) => x[what + unit]));
        const r = median(rec.map((x) => x[what + unit]));
        const p = median(rep.map((x) => x[what + unit]));
        return (
          `live ${l.toFixed(3)} ms  record ${r.toFixed(3)} ms (${(r / l).toFixed(2)}x)  ` +
          `replay ${p.toFixed(3)} ms (${(p / l).toFixed(2)}x)`
        );
      };
      console.log(`${name.padEnd(16)} elapsed ${line('Ms')}`);
      console.log(`${''.padEnd(16)} cpu     ${line('Cpu')}`);
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
