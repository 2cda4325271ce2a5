'use strict';
// The event API every hook module is built on (node-addon/lib/events.js), end to end
// through the native part: values with bytes, bigints and errors; per-kind order; async
// completions delivered in recorded order whatever order they come in live.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { tmpdir, runNode, script, cli, OUTPUT_OFF } = require('./harness.js');

const APP = `
const ev = require('replay-node')[Symbol.for('replay-node.events')];
const fs = require('fs');
const k = ev.kind('test.read');
function read(p) {
  if (ev.mode === 'record') {
    let v;
    // ev.live, as a hook module does: the real read is not an event of lib/fs.js.
    try { v = { data: ev.live(() => fs.readFileSync(p)), big: 2n ** 70n }; } catch (e) { v = { err: e }; }
    ev.record(k, p, v);
    return v;
  }
  return ev.replay(k, p);
}
const a = read(process.argv[2]);
console.log('a', a.data.toString(), Buffer.isBuffer(a.data), a.big);
const b = read(process.argv[3]);
console.log('b', b.err instanceof Error, b.err.code, b.err.syscall, b.err.message);
// Three operations complete in a random order when recorded; replay keeps that order.
for (const key of ['x', 'y', 'z']) {
  const op = ev.opKey('op ' + key);
  const delay = Math.random() * 30;
  if (ev.mode === 'record') {
    // Through ev.live, as a hook module starts its real operation: that timer is not a
    // completion of the program's (lib/timers.js).
    ev.live(() => setTimeout(() => { ev.done(op, { key }); console.log('done', key); }, delay));
  } else {
    ev.await(op, (v) => console.log('done', v.key));
  }
}
`;

test('recorded values, errors and completion order replay after the files changed', () => {
  const dir = tmpdir();
  const app = script(dir, 'app.js', APP.replace("require('replay-node')", `require(${JSON.stringify(require('./harness.js').PKG)})`));
  const input = path.join(dir, 'in.txt');
  const missing = path.join(dir, 'missing.txt');
  fs.writeFileSync(input, 'hello');
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app, { args: [input, missing] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^a hello true 1180591620717411303424n\nb true ENOENT open /);

  fs.writeFileSync(input, 'changed');
  fs.writeFileSync(missing, 'now here');
  const rep = runNode('replay', log, app, { args: [input, missing] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(rep.stderr, '');

  // Another path than recorded: the input digest differs, a divergence at that call.
  const other = runNode('replay', log, app, { args: [missing, missing] });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE/);
  assert.match(other.stderr, /test\.read/);
  assert.match(other.stderr, /app\.js:\d+/);
});

// Events are queued in the process and handed to the native side in batches: what is
// recorded is the value when the event happened, not what the program made of its buffers
// before the batch crossed, and events queued among clock reads keep their place.
const QUEUED = `
const ev = require('replay-node')[Symbol.for('replay-node.events')];
const k = ev.kind('test.chunk');
const parts = [];
for (let i = 0; i < 3; i++) {
  let v;
  const t = Date.now() > 0;
  if (ev.mode === 'record') {
    const b = Buffer.from('chunk ' + i + ' ' + 'x'.repeat(i * 300000));
    v = { b, t };
    ev.record(k, 'chunk ' + i, v);
    b.fill(0x3f); // after the event: must not reach the log
    ev.doneTag('tag ' + i, 'd', Buffer.from('tagged ' + i));
  } else {
    v = ev.replay(k, 'chunk ' + i);
  }
  parts.push(v.b.toString('latin1', 0, 9) + ' ' + v.b.length + ' ' + v.t);
}
console.log(parts.join('|'));
if (ev.mode === 'replay') {
  for (let i = 0; i < 3; i++) ev.await('tag ' + i, (v) => console.log(v.t, v.b.toString()));
}
`;

// Many staging blocks' worth of queued bytes, recorded faster than the flusher encodes
// them (so blocks are still held when the queue wants the next one, and the copying
// fallback runs too): every value reads back as it was at its call.
const BLOCKS = `
const ev = require('replay-node')[Symbol.for('replay-node.events')];
const k = ev.kind('test.block');
const b = Buffer.alloc(20000);
let bad = 0;
let sum = 0;
for (let i = 0; i < 3000; i++) {
  let v;
  const t = Date.now() > 0;
  if (ev.mode === 'record') {
    b.fill(i % 251);
    b.writeUInt32LE(i, 0);
    ev.record(k, 'b ' + i, { b, t });
    b.fill(0); // the same Buffer is reused: what the log holds is the copy
    v = { b: Buffer.alloc(20000, i % 251) };
    v.b.writeUInt32LE(i, 0);
  } else {
    v = ev.replay(k, 'b ' + i);
  }
  if (v.b.readUInt32LE(0) !== i || v.b.length !== 20000 || v.b[19999] !== i % 251) bad++;
  sum += v.b[100];
}
console.log(bad, sum);
`;

test('queued events record the value at the call, in order with clock reads', () => {
  const dir = tmpdir();
  const app = script(dir, 'q.js', QUEUED.replace("require('replay-node')", `require(${JSON.stringify(require('./harness.js').PKG)})`));
  const log = path.join(dir, 'q.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  // chunk 1 and 2 are over a quarter of the queue's bytes: they cross by themselves.
  assert.strictEqual(rec.stdout, '???????? 8 true|????????? 300008 true|????????? 600008 true\n');
  // It prints what replay gives back, not what record saw: output not compared.
  const rep = runNode('replay', log, app, { env: OUTPUT_OFF });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(
    rep.stdout,
    'chunk 0  8 true|chunk 1 x 300008 true|chunk 2 x 600008 true\nd tagged 0\nd tagged 1\nd tagged 2\n',
  );
  // The log's order: each chunk after its clock read, each tag after its chunk.
  const bin = cli();
  assert.ok(bin, 'the replay CLI is built (cargo build --release)');
  const dump = require('child_process').execFileSync(bin, ['dump', log], { encoding: 'utf8' });
  const kinds = dump
    .split('\n')
    .map((l) => (/(node\.Date\.now|test\.chunk|node\.done)/.exec(l) || [])[1])
    .filter(Boolean);
  assert.deepStrictEqual(kinds, [].concat(...[0, 1, 2].map(() => ['node.Date.now', 'test.chunk', 'node.done'])));
});

test('queued bytes of many staging blocks replay intact', () => {
  const dir = tmpdir();
  const app = script(dir, 'blocks.js', BLOCKS.replace("require('replay-node')", `require(${JSON.stringify(require('./harness.js').PKG)})`));
  const log = path.join(dir, 'blocks.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  let sum = 0;
  for (let i = 0; i < 3000; i++) sum += i % 251;
  assert.strictEqual(rec.stdout, `0 ${sum}\n`);
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
});

// REPLAY_COMPRESS (a core option): off stores the log's chunks as they are, and the log
// replays like a compressed one, after the file it recorded changed.
test('REPLAY_COMPRESS=off records an uncompressed log that replays', () => {
  const dir = tmpdir('replay-compress');
  const data = `${dir}/data.json`;
  fs.writeFileSync(data, JSON.stringify({ items: Array.from({ length: 4000 }, (_, i) => ({ i, name: `n${i}` })) }));
  const app = script(dir, 'app.js', `
const fs = require('fs');
const j = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
console.log(j.items.length, j.items[3999].name, Date.now(), Math.random());
`);
  const sizes = {};
  for (const level of ['off', '1']) {
    const log = `${dir}/${level}.replay`;
    const rec = runNode('record', log, app, { args: [data], env: { REPLAY_COMPRESS: level } });
    assert.strictEqual(rec.code, 0, rec.stderr);
    assert.strictEqual(rec.stderr, '');
    sizes[level] = fs.statSync(log).size;
    fs.writeFileSync(data, '{"items":[]}');
    const rep = runNode('replay', log, app, { args: [data] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stdout, rec.stdout);
    fs.writeFileSync(data, JSON.stringify({ items: Array.from({ length: 4000 }, (_, i) => ({ i, name: `n${i}` })) }));
  }
  const raw = fs.statSync(data).size;
  assert.ok(sizes.off > raw, `off: ${sizes.off} bytes for a ${raw}-byte file`);
  assert.ok(sizes['1'] < raw / 3, `level 1: ${sizes['1']} bytes for a ${raw}-byte file`);
});
