'use strict';
// process.hrtime (with and without a previous time), process.hrtime.bigint and
// performance.timeOrigin replay the recorded readings, even when the replayed run takes a
// different time; a changed number of calls is a divergence.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { tmpdir, runNode, script } = require('./harness.js');

const APP = `
const extra = process.argv[2] === 'extra';
const sleep = Number(process.argv[3] || 0);
const t0 = process.hrtime();
const b0 = process.hrtime.bigint();
// A wait that reads no hooked clock.
if (sleep) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, sleep);
const d = process.hrtime(t0);
const b1 = process.hrtime.bigint();
console.log('hrtime', t0.length, Number.isInteger(t0[0]), t0[1] < 1e9, t0.join(' '));
console.log('diff', d.join(' '), d[1] >= 0 && d[1] < 1e9);
console.log('bigint', typeof b0, b0, b1 - b0, b1 > b0);
console.log('origin', performance.timeOrigin, performance.timeOrigin === require('perf_hooks').performance.timeOrigin);
try { process.hrtime([1]); } catch (e) { console.log('bad', e.code); }
try { process.hrtime('x'); } catch (e) { console.log('bad', e.code); }
console.log('names', process.hrtime.name, process.hrtime.length, process.hrtime.bigint.name);
if (extra) process.hrtime();
`;

function setup() {
  const dir = tmpdir('replay-clocks');
  return { app: script(dir, 'app.js', APP), log: path.join(dir, 'app.replay') };
}

test('hrtime, hrtime.bigint and timeOrigin replay the recorded readings', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { args: ['', '20'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.match(rec.stdout, /^hrtime 2 true true \d+ \d+\ndiff 0 \d+ true\nbigint bigint \d+n \d+n true\n/);
  assert.match(rec.stdout, /origin \d+(\.\d+)? true\nbad ERR_OUT_OF_RANGE\nbad ERR_INVALID_ARG_TYPE\nnames hrtime 1 hrtimeBigInt\n$/);
  const diff = Number(/diff 0 (\d+)/.exec(rec.stdout)[1]);
  assert.ok(diff >= 20e6, rec.stdout);

  // Replayed without the busy wait, in a new process (another timeOrigin, other readings).
  const rep = runNode('replay', t.log, t.app, { args: ['', '0'] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('an hrtime call more than recorded is a divergence', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  const other = runNode('replay', t.log, t.app, { args: ['extra'] });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE/);
  assert.match(other.stderr, /node\.process\.hrtime/);
  assert.match(other.stderr, /app\.js:\d+/);
});
