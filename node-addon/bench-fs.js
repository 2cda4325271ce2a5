'use strict';
// Per-call cost of the fs metadata hooks (lib/fs.js): statSync, lstatSync, existsSync,
// readdirSync, accessSync, readFileSync of a small file and fs.promises.stat in hot loops on a
// small directory, run bare (no addon), recorded, and replayed. Prints ns/call (elapsed),
// medians over the runs, and the ratios to bare; also the process CPU time per call (all its
// threads, the recorder's included), which varies less on a loaded machine.
//   node bench-fs.js [calls] [runs]
// REPLAY_NODE_PKG=<dir> points at an installed package (default: this folder, which needs
// replay_node.node, i.e. npm install).
const fs = require('fs');
const os = require('os');
const path = require('path');

const CLIENT = `
const fs = require('fs');
const path = require('path');
const [dir, n] = [process.argv[2], Number(process.argv[3])];
const file = path.join(dir, 'f3');
const link = path.join(dir, 'link');
const cases = [
  ['statSync', () => fs.statSync(file)],
  ['lstatSync', () => fs.lstatSync(link)],
  ['existsSync', () => fs.existsSync(file)],
  ['readdirSync', () => fs.readdirSync(dir)],
  ['accessSync', () => fs.accessSync(file)],
  ['readFileSync', () => fs.readFileSync(file, 'utf8')],
];
// process.uptime, not hrtime or performance.now: those are hooked (replay would hand back the
// recorded timings); uptime reads the same monotonic clock and is not. process.cpuUsage is not
// hooked either.
const cpu = (c) => {
  const d = process.cpuUsage(c);
  return (d.user + d.system) * 1e3;
};
const out = {};
for (const [name, f] of cases) {
  for (let i = 0; i < n / 4; i++) f(); // warm-up (also recorded: record and replay make the same calls)
  const t = process.uptime();
  const c = process.cpuUsage();
  for (let i = 0; i < n; i++) f();
  out[name] = { ns: ((process.uptime() - t) * 1e9) / n, cpu: cpu(c) / n };
}
(async () => {
  const m = Math.max(1, Math.floor(n / 4));
  for (let i = 0; i < m / 4; i++) await fs.promises.stat(file);
  const t = process.uptime();
  const c = process.cpuUsage();
  for (let i = 0; i < m; i++) await fs.promises.stat(file);
  out['promises.stat'] = { ns: ((process.uptime() - t) * 1e9) / m, cpu: cpu(c) / m };
  console.log(JSON.stringify(out));
})();
`;

// The child runner and median of the network benchmarks.
const { run, median } = require('./bench/common.js');

async function main() {
  const n = Number(process.argv[2] || 20000);
  const runs = Number(process.argv[3] || 3);
  const pkg = process.env.REPLAY_NODE_PKG || __dirname;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-fs-'));
  const data = path.join(dir, 'd');
  fs.mkdirSync(data);
  for (let i = 0; i < 7; i++) fs.writeFileSync(path.join(data, `f${i}`), `file ${i}\n`.repeat(8));
  fs.symlinkSync('f3', path.join(data, 'link'));
  const client = path.join(dir, 'client.js');
  fs.writeFileSync(client, CLIENT);
  const bare = [];
  const rec = [];
  const rep = [];
  for (let i = 0; i < runs; i++) {
    // Interleaved, so a change of load on a shared machine hits every mode alike.
    const log = path.join(dir, `r${i}.replay`);
    bare.push(await run(pkg, client, null, null, [data, n]));
    rec.push(await run(pkg, client, 'record', log, [data, n]));
    rep.push(await run(pkg, client, 'replay', log, [data, n]));
  }
  const logBytes = fs.statSync(path.join(dir, 'r0.replay')).size;
  console.log(`${n} calls per case (promises.stat: ${Math.max(1, Math.floor(n / 4))}), median of ${runs} runs, ns/call`);
  for (const name of Object.keys(bare[0])) {
    for (const unit of ['ns', 'cpu']) {
      const b = median(bare.map((x) => x[name][unit]));
      const r = median(rec.map((x) => x[name][unit]));
      const p = median(rep.map((x) => x[name][unit]));
      console.log(
        `${(unit === 'ns' ? name : '').padEnd(14)} ${unit === 'ns' ? 'elapsed' : 'cpu    '} ` +
          `bare ${b.toFixed(0).padStart(6)}  record ${r.toFixed(0).padStart(6)} (${(r / b).toFixed(2)}x)  ` +
          `replay ${p.toFixed(0).padStart(6)} (${(p / b).toFixed(2)}x)`,
      );
    }
  }
  console.log(`log of one run: ${logBytes} bytes`);
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
