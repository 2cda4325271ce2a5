'use strict';
// worker_threads record and replay as logical threads of the process: each worker's
// Date.now, Date, Math.random, performance.now and fs reads, with the file changed after
// recording; a worker that does something else than recorded diverges (exit 86).
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { tmpdir, runNode, script, cli } = require('./harness.js');
const { spawnSync } = require('child_process');

const APP = `
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const fs = require('fs');
if (isMainThread) {
  console.log('main', Date.now(), Math.random());
  const results = [];
  let n = 0;
  for (const id of [1, 2, 3]) {
    const w = new Worker(__filename, { workerData: { id, file: process.argv[2], extra: process.argv[3] === 'extra' } });
    w.on('message', (m) => { results[id] = m; });
    w.on('exit', () => {
      if (++n === 3) {
        console.log(results.slice(1).join('\\n'));
        console.log('main end', Date.now());
      }
    });
  }
} else {
  const vals = [workerData.id, Date.now(), Math.random(), new Date().getTime(), performance.now().toFixed(3)];
  vals.push(JSON.stringify(fs.readFileSync(workerData.file, 'utf8')));
  if (workerData.extra && workerData.id === 2) vals.push(Math.random());
  parentPort.postMessage('worker ' + vals.join(' '));
}
`;

test('worker threads replay their clocks, Math.random and file reads as threads of the process', () => {
  const d = tmpdir('worker');
  const app = script(d, 'app.js', APP);
  const data = `${d}/data.txt`;
  fs.writeFileSync(data, 'recorded\n');
  const log = `${d}/app.replay`;
  const rec = runNode('record', log, app, { args: [data] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.strictEqual(rec.stdout.match(/^worker \d \d+ 0\.\d+ \d+ [\d.]+ "recorded\\n"$/gm).length, 3, rec.stdout);
  if (cli()) {
    const info = spawnSync(cli(), ['info', log], { encoding: 'utf8' });
    for (const id of [1, 2, 3]) assert.match(info.stdout, new RegExp(`worker ${id}`), info.stdout);
  }
  fs.writeFileSync(data, 'changed\n');
  for (let i = 0; i < 3; i++) {
    const rep = runNode('replay', log, app, { args: [data] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
  }
  // Worker 2 draws once more than recorded: a divergence naming it, the process exits 86.
  const extra = runNode('replay', log, app, { args: [data, 'extra'] });
  assert.strictEqual(extra.code, 86, extra.stderr);
  assert.match(extra.stderr, /DIVERGENCE[\s\S]*worker 2[\s\S]*node\.Math\.random\.value/);
});

// Three workers race each other and the main thread's timers: the order their messages and
// exits reach the main thread differs from run to run (live, 5 runs gave 5 orders). Replay
// delivers them in the recorded order, among the timers, every time.
const RACE = `
const { Worker } = require('worker_threads');
const src = \`
const { parentPort, workerData } = require('worker_threads');
let x = 0;
for (let i = 0; i < workerData.n; i++) x = (x * 31 + i) % 1000003;
parentPort.postMessage(workerData.name + ' done ' + x);
setTimeout(() => parentPort.postMessage(workerData.name + ' later'), workerData.ms);
\`;
const out = [];
let exited = 0;
for (const [name, n, ms] of [['a', 3e6, 5], ['b', 3e6, 5], ['c', 1e6, 1]]) {
  const w = new Worker(src, { eval: true, workerData: { name, n, ms } });
  w.on('message', (m) => out.push(m));
  w.on('exit', () => {
    out.push(name + ' exit');
    if (++exited === 3) console.log(out.join('\\n'));
  });
  setTimeout(() => out.push('timer ' + name), 20);
}
`;

test('messages and exits of racing workers arrive in their recorded order', () => {
  const d = tmpdir('worker-race');
  const app = script(d, 'race.js', RACE);
  const log = `${d}/race.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout.split('\n').filter(Boolean).length, 12, rec.stdout);
  for (let i = 0; i < 4; i++) {
    const rep = runNode('replay', log, app);
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
  }
});

// The same race over ports of MessageChannels the program made (as tinypool and birpc
// answer): each worker answers on its own port.
const PORTS = `
const { Worker, MessageChannel } = require('worker_threads');
const src = \`
const { workerData } = require('worker_threads');
let x = 0;
for (let i = 0; i < workerData.n; i++) x = (x * 31 + i) % 1000003;
workerData.port.postMessage(workerData.name + ' done ' + x);
setTimeout(() => { workerData.port.postMessage(workerData.name + ' later'); workerData.port.close(); }, 2);
\`;
const out = [];
let closed = 0;
for (const [name, n] of [['a', 2e6], ['b', 2e6], ['c', 1e6]]) {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (m) => out.push(m));
  port1.on('close', () => { if (++closed === 3) console.log(out.join('\\n')); });
  new Worker(src, { eval: true, workerData: { name, n, port: port2 }, transferList: [port2] });
  setTimeout(() => out.push('timer ' + name), 15);
}
`;

test('messages racing over program-made message ports arrive in their recorded order', () => {
  const d = tmpdir('worker-ports');
  const app = script(d, 'ports.js', PORTS);
  const log = `${d}/ports.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout.split('\n').filter(Boolean).length, 9, rec.stdout);
  for (let i = 0; i < 4; i++) {
    const rep = runNode('replay', log, app);
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
  }
});

test('a worker given shared memory is counted as unchecked at the end of its replay', () => {
  const dir = tmpdir('replay-sab');
  const app = script(dir, 'sab.js', `
const { Worker, isMainThread, workerData } = require('worker_threads');
if (isMainThread) {
  const a = new Int32Array(new SharedArrayBuffer(8));
  new Worker(__filename, { workerData: { a } }).on('exit', () => console.log('sum', a[0], a[1]));
} else {
  Atomics.add(workerData.a, 0, 5);
  workerData.a[1] = 7;
}
`);
  const log = require('path').join(dir, 'sab.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'sum 5 7\n');
  assert.strictEqual(rec.stderr, '');
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.match(rep.stderr, /could not check everything: ran live \(1 shared memory\)/);
});

test('a worker answering its parent through a child process replays while the parent blocks in Atomics.wait', () => {
  // esbuild's synchronous API (tsx runs every file through it): the main thread blocks in
  // Atomics.wait while a worker writes to a child and signals its answer. The child's
  // replayed output must reach the worker after the parent's message that made it ask
  // (before, it came first, went unheard, and the main thread waited forever).
  const dir = tmpdir('replay-atomics-child');
  const app = script(dir, 'app.js', `
const { Worker } = require('worker_threads');
const w = new Worker(\`
const { parentPort } = require('worker_threads');
const c = require('child_process').spawn('cat');
let a;
let got = '';
c.stdout.on('data', (d) => { got += d; if (got.length >= 5) { Atomics.store(a, 0, got.length); Atomics.notify(a, 0); } });
parentPort.on('message', (m) => { a = new Int32Array(m.sab); c.stdin.write(m.text); });
\`, { eval: true });
w.unref();
const sab = new SharedArrayBuffer(4);
w.postMessage({ sab, text: process.argv[2] });
const r = Atomics.wait(new Int32Array(sab), 0, 0, 20000);
console.log('wait:', r, new Int32Array(sab)[0]);
process.exit(0);
`);
  const log = require('path').join(dir, 'app.replay');
  const rec = runNode('record', log, app, { args: ['hello'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'wait: ok 5\n');
  const rep = runNode('replay', log, app, { args: ['hello'] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.doesNotMatch(rep.stderr, /DIVERGENCE/);
});
