'use strict';
// lib/vm.js: every new vm context gets the clock and Math.random hooks, recorded into the one
// log in call order with the main context's, and replayed.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { PKG, tmpdir, runNode, script } = require('./harness.js');

const APP = `
const vm = require('vm');
const extra = process.argv[2] === 'extra';
console.log('main', Date.now(), Math.random());
console.log('new', vm.runInNewContext('[Date.now(), Math.random(), new Date().getTime(), Date().length > 0, new Date() instanceof Date]').join(' '));
const ctx = vm.createContext({ out: [] });
vm.runInContext('out.push(Date.now(), Math.random(), Date.name, Math.random.name)', ctx);
console.log('ctx', ctx.out.join(' '), Object.keys(ctx).join(','));
const s = new vm.Script('Math.random() + Date.now()');
console.log('script', s.runInNewContext({}), s.runInContext(ctx));
if (extra) vm.runInNewContext('Math.random()');
console.log('main', Date.now(), Math.random(), new Date().toISOString());
`;

test('vm contexts record and replay their Date and Math.random in order with the main context', () => {
  const d = tmpdir('vm');
  const app = script(d, 'app.js', APP);
  const log = `${d}/app.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.match(rec.stdout, /^ctx \d+ 0\.\d+ Date random out$/m);
  const bare = runNode(null, null, app);
  assert.notStrictEqual(bare.stdout, rec.stdout, 'live runs print other values');
  for (let i = 0; i < 2; i++) {
    const rep = runNode('replay', log, app);
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
  }
  // A context that calls Math.random once more than recorded: a divergence, not other values.
  const extra = runNode('replay', log, app, { args: ['extra'] });
  assert.strictEqual(extra.code, 86, extra.stderr);
  assert.match(extra.stderr, /DIVERGENCE[\s\S]*Math\.random/);
});

test('a native addon the program loads is named at the end of a replay that found nothing', () => {
  // A native addon (sharp, @swc/core) reads files in native code, out of every hook's sight:
  // the replay must not pass for faithful without saying so. Any addon but the recorder's own
  // counts: here a copy of it under another name.
  const dir = tmpdir('replay-native-addon');
  fs.copyFileSync(path.join(PKG, 'replay_node.node'), path.join(dir, 'other.node'));
  fs.writeFileSync(path.join(dir, 'in.txt'), 'one');
  const app = script(dir, 'addon.js', `
const fs = require('fs');
require('./other.node');
fs.writeFileSync('out.txt', 'x');
console.log('loaded');
`);
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.doesNotMatch(rec.stderr, /native addon/);
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, 'loaded\n');
  assert.match(rep.stderr, /could not check everything: ran live \(1 native addon\)/);
});

test('UDP and unix-socket traffic, not recorded, is said at once and at the end of a replay', () => {
  const d = tmpdir('replay-udp');
  const sock = path.join(d, 's.sock');
  const app = script(d, 'udp.js', `
const dgram = require('dgram');
const net = require('net');
const u = dgram.createSocket('udp4');
u.on('message', (m) => {
  u.close();
  const srv = net.createServer((c) => c.end('pong')).listen(${JSON.stringify(sock)}, () => {
    net.connect(${JSON.stringify(sock)}).on('data', (x) => {
      console.log('udp', String(m), 'unix', String(x));
      srv.close();
    });
  });
});
u.bind(0, '127.0.0.1', () => u.send('ping', u.address().port, '127.0.0.1'));
`);
  const log = path.join(d, 'udp.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.strictEqual(rec.stdout, 'udp ping unix pong\n');
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.match(rep.stderr, /^replay: warning: UDP sockets are not recorded: [^\n]*\n/);
  assert.match(rep.stderr, /\nreplay: warning: sockets on a file-system path are not recorded: [^\n]*\n/);
  assert.match(rep.stderr, /could not check everything: ran live \(1 UDP socket, 2 unix socket\)/);
});

test("V8's code cache bytes are the recorded ones, so a cache file written from them is too", () => {
  // createCachedData and a Script made with produceCachedData give other bytes every run for
  // the same code (v8-compile-cache writes them into .BLOB files for ts-node): the file
  // check of every replay failed on them.
  const dir = tmpdir('replay-code-cache');
  const app = script(dir, 'app.js', `
const vm = require('vm');
const fs = require('fs');
const code = '(function (a) { return a * 2 + ' + 'Math.max(1, 2); })';
const s = new vm.Script(code, { filename: 'x.js' });
fs.writeFileSync('a.blob', s.createCachedData());
const t = new vm.Script(code, { filename: 'y.js', produceCachedData: true });
fs.writeFileSync('b.blob', t.cachedData || Buffer.alloc(0));
const u = new vm.Script(code, { filename: 'y.js', cachedData: t.cachedData });
console.log(typeof t.cachedDataProduced, typeof u.cachedDataRejected, t instanceof vm.Script, vm.Script.name);
`);
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'boolean boolean true Script\n');
  const blobs = () => ['a.blob', 'b.blob'].map((f) => fs.readFileSync(path.join(dir, f)).toString('hex'));
  const recorded = blobs();
  for (let i = 0; i < 2; i++) {
    const rep = runNode('replay', log, app);
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.deepStrictEqual(blobs(), recorded);
  }
});
