'use strict';
// Math.random: a generator seeded from the log (the seed, then checkpoints counting the
// calls). Replay gives back the recorded values in a run that would draw others; a call past
// the recorded ones diverges at that call, fewer calls diverge at exit, and a recording cut
// short by SIGKILL replays up to its last checkpoint and then says in one line that the
// recording ends there.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { tmpdir, runNode, script, OUTPUT_OFF } = require('./harness.js');

// argv: calls in the first loop, then in the second; 'crash' flushes the log between the
// loops and kills the process after the second.
const APP = `
const [a, b] = [Number(process.argv[2]), Number(process.argv[3])];
const crash = process.argv[4] === 'crash';
const draw = (n) => {
  const r = [];
  for (let i = 0; i < n; i++) r.push(Math.random());
  return r;
};
const first = draw(a);
console.log('first', first.length, first[0], first[a - 1], first.every((x) => typeof x === 'number' && x >= 0 && x < 1));
console.log('name', Math.random.name, Math.random.length);
if (crash) globalThis[Symbol.for('replay-node')].flush();
const second = draw(b);
console.log('second', second.length, second[0], second[b - 1]);
if (crash) process.kill(process.pid, 'SIGKILL');
`;

function setup() {
  const dir = tmpdir('replay-random');
  return { app: script(dir, 'app.js', APP), log: path.join(dir, 'app.replay') };
}

test('replayed Math.random values are the recorded ones', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { args: ['5000', '3000'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.match(rec.stdout, /^first 5000 0\.\d+ 0\.\d+ true\nname random 0\n/);
  // A live run draws other values...
  const live = runNode('off', null, t.app, { args: ['5000', '3000'] });
  assert.strictEqual(live.code, 0, live.stderr);
  assert.notStrictEqual(live.stdout, rec.stdout);
  // ...replay the recorded ones, all of them in order.
  const rep = runNode('replay', t.log, t.app, { args: ['5000', '3000'] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  // The values are spread over [0, 1) (a broken generator would repeat or cluster).
  const many = script(path.dirname(t.app), 'many.js', `
const n = 200000, bins = new Array(10).fill(0), seen = new Set();
for (let i = 0; i < n; i++) { const x = Math.random(); bins[Math.floor(x * 10)]++; seen.add(x); }
console.log(seen.size === n, bins.every((c) => Math.abs(c - n / 10) < n / 100));
`);
  const log2 = path.join(path.dirname(t.app), 'many.replay');
  const spread = runNode('record', log2, many);
  assert.strictEqual(spread.stdout, 'true true\n', spread.stderr);
});

test('a Math.random call more than recorded diverges at that call', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { args: ['5000', '3000'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const more = runNode('replay', t.log, t.app, { args: ['5000', '3001'] });
  assert.strictEqual(more.code, 86, more.stderr);
  assert.match(more.stderr, /made a \S+ call after its 8000 recorded calls of that kind ran out/);
  assert.match(more.stderr, /actual: {3}node\.Math\.random/);
  assert.match(more.stderr, /Math\.random call #8001; the recording made 8000 Math\.random calls/);
  assert.match(more.stderr, /app\.js:6/);
  // The first loop's output, up to the divergence, was the recorded one.
  assert.strictEqual(more.stdout, rec.stdout.split('\n').slice(0, 2).join('\n') + '\n');
});

test('fewer Math.random calls than recorded diverge at exit', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { args: ['5000', '3000'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  // (It prints other values: output not compared, the calls are.)
  const fewer = runNode('replay', t.log, t.app, { args: ['5000', '2999'], env: OUTPUT_OFF });
  assert.strictEqual(fewer.code, 86, fewer.stderr);
  assert.match(fewer.stderr, /expected: node\.Math\.random -> 8000u/);
  assert.match(fewer.stderr, /actual: {3}end of the program/);
  assert.match(fewer.stderr, /the program ended after 7999 Math\.random calls; the recording made 8000/);
  // A program that never calls it leaves the seed over.
  const none = runNode('replay', t.log, t.app, { args: ['0', '0'], env: OUTPUT_OFF });
  assert.strictEqual(none.code, 86, none.stderr);
  assert.match(none.stderr, /expected: node\.Math\.random -> bytes\[16\]/);
  assert.match(none.stderr, /the program ended after 0 Math\.random calls/);
});

test('a recording killed after a flush replays up to its last checkpoint', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { args: ['5000', '3000', 'crash'] });
  assert.strictEqual(rec.signal, 'SIGKILL', rec.stderr);
  const lines = rec.stdout.split('\n');
  assert.match(lines[2], /^second 3000 /);
  // The 5000 calls before the flush replay as recorded; the first call after it has no
  // checkpoint covering it: the recording ends there, which is one line, not a report.
  const rep = runNode('replay', t.log, t.app, { args: ['5000', '3000', 'crash'] });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.strictEqual(rep.stdout, lines.slice(0, 2).join('\n') + '\n');
  const err = rep.stderr.trimEnd().split('\n');
  assert.strictEqual(err.length, 1, rep.stderr);
  assert.match(err[0], /^replay: the recording ends at event #\d+ .*the recorder was killed or cut/);
});
