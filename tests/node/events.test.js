'use strict';
// The event API every hook module is built on (node-addon/lib/events.js), end to end
// through the native part: values with bytes, bigints and errors; per-kind order; async
// completions delivered in recorded order whatever order they come in live.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { tmpdir, runNode, script } = require('./harness.js');

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
    setTimeout(() => { ev.done(op, { key }); console.log('done', key); }, delay);
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
