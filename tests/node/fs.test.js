'use strict';
// lib/fs.js: file reads replay what was recorded after the files changed or were deleted;
// reading another path is a divergence; the module loader's own reads are not events.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { PKG, tmpdir, runNode, script, OUTPUT_OFF } = require('./harness.js');

const APP = `
const fs = require('fs');
const fsp = require('fs/promises');
const [a, b, missing, dir] = process.argv.slice(2);
// A local module and a JSON file: the loader reads them itself (not events), so editing
// them changes the replayed run like any program edit would.
const local = require('./local.js');
const data = require('./data.json');
console.log('local', local.v, data.v);
console.log('sync', fs.readFileSync(a, 'utf8'), fs.readFileSync(b).subarray(0, 8).toString('hex'));
try { fs.readFileSync(missing); } catch (e) { console.log('missing', e instanceof Error, e.code, e.syscall, e.errno, e.message); }
console.log('exists', fs.existsSync(a), fs.existsSync(missing));
const st = fs.statSync(a);
console.log('stat', st.isFile(), st.isDirectory(), st.size, st.mtime instanceof Date, st.mtime.getTime() === Math.round(st.mtimeMs));
const sd = fs.statSync(dir);
console.log('statdir', sd.isFile(), sd.isDirectory());
const sb = fs.statSync(a, { bigint: true });
console.log('bigint', typeof sb.size, sb.size, sb.isFile());
console.log('nothrow', fs.statSync(missing, { throwIfNoEntry: false }));
try { fs.statSync(missing); } catch (e) { console.log('stat missing', e.code, e.syscall); }
const fd = fs.openSync(a, 'r');
const buf = Buffer.alloc(4);
const n1 = fs.readSync(fd, buf, 0, 4, null);
const n2 = fs.readSync(fd, buf, { offset: 1, length: 3 });
console.log('readSync', n1, n2, buf.toString());
console.log('readFileSync fd', fs.readFileSync(fd, 'utf8'));
fs.closeSync(fd);
try { fs.openSync(missing); } catch (e) { console.log('open missing', e.code); }
fs.readFile(a, 'utf8', (err, s) => console.log('readFile a', err, s));
fs.readFile(b, (err, s) => console.log('readFile b', err, s.length));
fs.readFile(missing, (err) => console.log('readFile missing', err.code));
fsp.readFile(a, { encoding: 'utf8' }).then((s) => console.log('promises a', s));
fs.promises.readFile(missing).catch((e) => console.log('promises missing', e.code));
const chunks = [];
fs.createReadStream(b, { highWaterMark: 1000 })
  .on('data', (c) => chunks.push(c.length))
  .on('end', () => console.log('stream', chunks.join(',')));
fs.createReadStream(missing).on('error', (e) => console.log('stream missing', e.code));
`;

function setup() {
  const dir = tmpdir('replay-fs');
  const app = script(dir, 'app.js', APP);
  script(dir, 'local.js', 'module.exports = { v: "one" };');
  script(dir, 'data.json', '{ "v": 1 }');
  const a = path.join(dir, 'a.txt');
  const b = path.join(dir, 'b.bin');
  fs.writeFileSync(a, 'hello world');
  fs.writeFileSync(b, Buffer.from(Array.from({ length: 2500 }, (_, i) => i & 255)));
  return { dir, app, a, b, missing: path.join(dir, 'missing.txt'), log: path.join(dir, 'app.replay') };
}

test('file reads replay the recorded contents after the files changed', () => {
  const t = setup();
  const args = [t.a, t.b, t.missing, t.dir];
  const rec = runNode('record', t.log, t.app, { args });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.match(rec.stdout, /^local one 1\nsync hello world 000102/);
  assert.match(rec.stdout, /missing true ENOENT open -2 ENOENT/);
  assert.match(rec.stdout, /stat true false 11 true true/);
  assert.match(rec.stdout, /bigint bigint 11n true/);
  assert.match(rec.stdout, /readSync 4 3 ho w\nreadFileSync fd orld\n/);
  assert.match(rec.stdout, /stream 1000,1000,500/);
  assert.match(rec.stdout, /promises a hello world/);
  // The same program without the addon prints the same (record changes nothing).
  const bare = runNode(null, null, t.app, { args });
  assert.strictEqual(bare.stdout.split('\n').sort().join('\n'), rec.stdout.split('\n').sort().join('\n'));

  // The outside world changes: files edited, one deleted, the missing one created.
  fs.writeFileSync(t.a, 'other text, longer than before');
  fs.rmSync(t.b);
  fs.writeFileSync(t.missing, 'now here');
  const rep = runNode('replay', t.log, t.app, { args });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);

  // A program edit reaches replay: the loader's reads of local.js are not events.
  fs.writeFileSync(path.join(t.dir, 'local.js'), 'module.exports = { v: "two" };');
  // (So it prints another line than recorded: output not compared.)
  const edited = runNode('replay', t.log, t.app, { args, env: OUTPUT_OFF });
  assert.strictEqual(edited.code, 0, edited.stderr);
  assert.strictEqual(edited.stdout, rec.stdout.replace('local one', 'local two'));
});

test('reading another path than recorded is a divergence', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { args: [t.a, t.b, t.missing, t.dir] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const other = runNode('replay', t.log, t.app, { args: [t.b, t.b, t.missing, t.dir] });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE/);
  assert.match(other.stderr, /node\.fs\.readFileSync/);
  assert.match(other.stderr, /app\.js:\d+/);
});

const STATS_APP = `
const fs = require('fs');
const util = require('util');
const [f, ln] = process.argv.slice(2);
const json = (s) => JSON.stringify(s, (k, v) => (typeof v === 'bigint' ? v + 'n' : v));
const show = (tag, s) => console.log(tag, s.constructor.name, s instanceof fs.Stats, s.isFile(), s.isSymbolicLink(),
  s.mtime instanceof Date, Object.keys(s).join(','), util.inspect(s, { breakLength: Infinity }), json(s));
show('statSync', fs.statSync(f));
show('bigint', fs.statSync(f, { bigint: true }));
show('lstatSync', fs.lstatSync(ln));
show('lstat bigint', fs.lstatSync(ln, { bigint: true }));
const fd = fs.openSync(f);
show('fstatSync', fs.fstatSync(fd, { bigint: true }));
fs.closeSync(fd);
console.log('nothrow', fs.lstatSync(f + '.missing', { throwIfNoEntry: false }));
fs.stat(f, (e, s) => {
  show('stat', s);
  fs.promises.lstat(ln, { bigint: true }).then((s) => show('promises.lstat', s));
});
`;

function setupStats(name) {
  const dir = tmpdir(name);
  const f = path.join(dir, 'f.txt');
  fs.writeFileSync(f, 'twelve bytes');
  fs.utimesSync(f, new Date('2001-02-03T04:05:06.789Z'), new Date('2002-03-04T05:06:07.891Z'));
  fs.symlinkSync('f.txt', path.join(dir, 'ln'));
  const app = script(dir, 'app.js', STATS_APP);
  return { dir, f, app, args: [f, path.join(dir, 'ln')], log: path.join(dir, 'app.replay') };
}

// Other contents, size, times, mode; the link points elsewhere. Returns what the app prints now.
function changeStats(t) {
  fs.writeFileSync(t.f, 'a longer text than before');
  fs.chmodSync(t.f, 0o600);
  fs.utimesSync(t.f, new Date('2011-01-01T00:00:00Z'), new Date('2012-01-01T00:00:00Z'));
  fs.rmSync(path.join(t.dir, 'ln'));
  fs.symlinkSync('app.js', path.join(t.dir, 'ln'));
  return runNode(null, null, t.app, { args: t.args }).stdout;
}

test('replayed Stats equal the recorded ones field by field, in every form, after the file changed', () => {
  // Stats are recorded as one array in Node's key order (lib/fs.js encodeStats): every field,
  // the Dates, the bigint ones (atimeNs...) and the key order must come back as recorded.
  const t = setupStats('replay-fs-stats');
  const rec = runNode('record', t.log, t.app, { args: t.args });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.match(rec.stdout, /^statSync Stats true true false true dev,mode,nlink.*,birthtimeMs,atime,mtime,ctime,birthtime /);
  assert.match(rec.stdout,
    /\nbigint BigIntStats false true false true .*,atimeNs,.*size: 12n.*atime: 2001-02-03T04:05:06\.789Z/);
  assert.match(rec.stdout, /\nlstatSync Stats true false true /);
  assert.match(rec.stdout, /\nnothrow undefined\n/);
  const bare = runNode(null, null, t.app, { args: t.args });
  assert.strictEqual(bare.stdout, rec.stdout);

  assert.notStrictEqual(changeStats(t), rec.stdout);
  const rep = runNode('replay', t.log, t.app, { args: t.args });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('Stats recorded field by field (logs from before the array form) still replay', () => {
  // A copy of the package whose encodeStats always takes its field-by-field form, the only
  // one earlier versions wrote; the package under test replays its log.
  const t = setupStats('replay-fs-stats-old');
  const old = path.join(t.dir, 'old', 'replay-node');
  fs.cpSync(PKG, old, { recursive: true });
  const src = fs.readFileSync(path.join(old, 'lib', 'fs.js'), 'utf8');
  const patched = src.replace('if (sameLayout(own, keys)) {', 'if (false) {');
  assert.notStrictEqual(patched, src, 'lib/fs.js has no array form of Stats to turn off');
  fs.writeFileSync(path.join(old, 'lib', 'fs.js'), patched);
  const rec = runNode('record', t.log, t.app, { args: t.args, nodeArgs: ['--require', old] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.strictEqual(runNode(null, null, t.app, { args: t.args }).stdout, rec.stdout);

  assert.notStrictEqual(changeStats(t), rec.stdout);
  const rep = runNode('replay', t.log, t.app, { args: t.args });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});
