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
