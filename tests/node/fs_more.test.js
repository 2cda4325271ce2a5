'use strict';
// lib/fs.js: fs.statfsSync / fs.statfs / fs.promises.statfs and FileHandle.readableWebStream()
// (both stream types, default and BYOB readers). Node's readableWebStream reads the handle
// below the hooked FileHandle methods (its StreamBase, or for type 'bytes' fh.read called
// from Node's own code), so it has hooks of its own. Each test records, deletes or rewrites
// the files, and replays with identical stdout; recorded errors (ENOENT, EISDIR,
// ERR_INVALID_STATE) come back the same.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { tmpdir, runNode, runNodeAsync, script, recordChangeReplay: recordChangeReplayIn } = require('./harness.js');

// data/: a small text file and one of 70000 bytes (several 16 KiB and 64 KiB chunks).
function world(dir) {
  const d = path.join(dir, 'data');
  fs.mkdirSync(path.join(d, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(d, 'a.txt'), 'hello web stream\nline two\n');
  fs.writeFileSync(path.join(d, 'big.bin'), Buffer.from(Array.from({ length: 70000 }, (_, i) => (i * 7) % 251)));
  return d;
}

function setup(source) {
  const dir = tmpdir('replay-fs-more');
  const d = world(dir);
  const app = script(dir, 'app.js', source);
  return { dir, d, app, log: path.join(dir, 'app.replay') };
}

const PRELUDE = `
const fs = require('fs');
const fsp = require('fs/promises');
const path = require('path');
const crypto = require('crypto');
const d = process.argv[2];
const p = (n) => path.join(d, n);
const err = (e) => [e.code, e.syscall, e.errno, e instanceof Error, e.path && path.relative(d, String(e.path))].join(' ');
const hash = (b) => crypto.createHash('sha256').update(Buffer.from(b)).digest('hex').slice(0, 12);
`;

test('statfs in every form replays after the directory was deleted', () => {
  const t = setup(`${PRELUDE}
const sf = fs.statfsSync(d);
console.log('statfsSync', Object.getPrototypeOf(sf).constructor.name, Object.keys(sf).join(','), typeof sf.bsize,
  sf.bsize > 0);
const big = fs.statfsSync(p('a.txt'), { bigint: true });
console.log('statfsSync bigint', Object.getPrototypeOf(big) === Object.getPrototypeOf(sf), typeof big.blocks,
  big.type === BigInt(sf.type));
try { fs.statfsSync(p('missing')); } catch (e) { console.log('statfsSync missing', err(e)); }
fs.statfs(p('a.txt'), (e, s) => console.log('statfs', e, s.type === sf.type, s.bsize === sf.bsize));
fs.statfs(p('sub'), { bigint: true }, (e, s) => console.log('statfs bigint', e, typeof s.ffree));
fs.statfs(p('missing'), { bigint: true }, (e) => console.log('statfs missing', err(e)));
fsp.statfs(d, { bigint: true })
  .then((s) => console.log('promises statfs', typeof s.ffree, s.bsize === BigInt(sf.bsize)));
fsp.statfs(p('missing')).catch((e) => console.log('promises statfs missing', err(e)));
`);
  const out = recordChangeReplayIn(t, (s) => {
    assert.match(s, /^statfsSync StatFs type,bsize,blocks,bfree,bavail,files,ffree number true\n/);
    assert.match(s, /\nstatfsSync bigint true bigint true\n/);
    assert.match(s, /\nstatfsSync missing ENOENT statfs -2 true missing\n/);
    assert.match(s, /\nstatfs null true true\n/);
    assert.match(s, /\nstatfs bigint null bigint\n/);
    assert.match(s, /\nstatfs missing ENOENT statfs -2 true missing\n/);
    assert.match(s, /\npromises statfs bigint true\n/);
    assert.match(s, /\npromises statfs missing ENOENT statfs -2 true missing\n/);
  }, (d) => fs.rmSync(d, { recursive: true }));
  assert.strictEqual(out.split('\n').length, 9);
});

test('replayed statfs values are the recorded ones, not the file system of the replay', () => {
  // Free blocks and inodes change from run to run on a live file system: only record and
  // replay are compared here.
  const t = setup(`${PRELUDE}
const show = (s) => JSON.stringify(Object.entries(s).map(([k, v]) => k + '=' + v));
console.log(show(fs.statfsSync(d)), show(fs.statfsSync(d, { bigint: true })));
fsp.statfs(p('a.txt')).then((s) => console.log(show(s)));
`);
  const rec = runNode('record', t.log, t.app, { args: [t.d] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^\["type=\d+","bsize=\d+","blocks=\d+",.*"ffree=\d+"\]/);
  fs.rmSync(t.d, { recursive: true });
  // /proc is another file system: every field but bsize differs from the recorded ones.
  fs.symlinkSync('/proc', t.d);
  const rep = runNode('replay', t.log, t.app, { args: [t.d] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

const WEB_APP = `${PRELUDE}
(async () => {
  const fh = await fsp.open(p('a.txt'));
  const s = fh.readableWebStream();
  console.log('readableWebStream', s.constructor.name, fh.readableWebStream.length);
  const parts = [];
  for await (const c of s) parts.push(Object.prototype.toString.call(c) + ':' + Buffer.from(c).toString());
  console.log('default', JSON.stringify(parts));
  try { fh.readableWebStream(); } catch (e) { console.log('locked', e.code, e.message); }
  await fh.close();
  try { fh.readableWebStream(); } catch (e) { console.log('closed', e.code, e.message); }

  // Other awaited calls between the reads: each read is its own completion, in order.
  const fh2 = await fsp.open(p('big.bin'));
  const r = fh2.readableWebStream({ type: 'bytes' }).getReader({ mode: 'byob' });
  const got = [];
  for (let x; !(x = await r.read(new Uint8Array(30000))).done;) {
    const st = await fsp.stat(p('a.txt'));
    got.push(x.value.byteLength + ':' + hash(x.value) + ':' + st.size);
  }
  console.log('bytes byob', got.join(' '));
  await fh2.close();

  const fh3 = await fsp.open(p('big.bin'));
  const sizes = [];
  for await (const c of fh3.readableWebStream({ type: 'bytes' })) {
    sizes.push(Object.prototype.toString.call(c) + ' ' + c.byteLength + '/' + c.buffer.byteLength + ':' + hash(c));
  }
  console.log('bytes', sizes.join(' '));
  await fh3.close();

  const fh4 = await fsp.open(p('big.bin'));
  const chunks = [];
  for await (const c of fh4.readableWebStream()) chunks.push(c.byteLength + ':' + hash(c));
  console.log('default chunks', chunks.join(' '));
  await fh4.close();

  // Opening a directory works; reading it fails (a handle left open: Node 20 never settles
  // the close of a handle whose byte stream failed).
  const dh = await fsp.open(p('sub'));
  // Kept reachable: a collected open FileHandle prints a warning whenever GC runs.
  globalThis.keptOpen = dh;
  try {
    await dh.readableWebStream({ type: 'bytes' }).getReader().read();
  } catch (e) {
    console.log('directory', err(e));
  }
})();
`;

test('FileHandle readableWebStream, both types and readers, replays after the files changed and were deleted', () => {
  const t = setup(WEB_APP);
  recordChangeReplayIn(t, (s) => {
    assert.match(s, /^readableWebStream ReadableStream 0\n/);
    assert.match(s, /\ndefault \["\[object ArrayBuffer\]:hello web stream\\nline two\\n"\]\n/);
    assert.match(s, /\nlocked ERR_INVALID_STATE Invalid state: The FileHandle is locked\n/);
    assert.match(s, /\nclosed ERR_INVALID_STATE Invalid state: The FileHandle is closed\n/);
    assert.match(s, /\nbytes byob 30000:[0-9a-f]{12}:26 30000:[0-9a-f]{12}:26 10000:[0-9a-f]{12}:26\n/);
    assert.match(s, /\nbytes (\[object Uint8Array\] 16384\/16384:[0-9a-f]{12} ){4}\[object Uint8Array\] 4464\/16384:/);
    assert.match(s, /\ndefault chunks 65536:[0-9a-f]{12} 4464:[0-9a-f]{12}\n/);
    assert.match(s, /\ndirectory EISDIR read -21 true \n/);
  }, (d) => {
    fs.writeFileSync(path.join(d, 'a.txt'), 'rewritten: another text, longer than before');
    fs.rmSync(path.join(d, 'big.bin'));
    fs.rmSync(path.join(d, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(d, 'sub'), 'a file now');
  });
});

test('statfs of another path, a web stream of another type or other BYOB views than recorded diverge', () => {
  const t = setup(`
const fs = require('fs');
const [d, name, type, size] = process.argv.slice(2);
console.log(fs.statfsSync(d + '/' + name).bsize > 0);
fs.promises.open(d + '/big.bin').then(async (fh) => {
  const s = fh.readableWebStream(type ? { type } : {});
  const r = type ? s.getReader({ mode: 'byob' }) : s.getReader();
  const x = type ? await r.read(new Uint8Array(Number(size))) : await r.read();
  console.log(x.value.byteLength);
});
`);
  const args = (...a) => ({ args: [t.d, ...a], env: { REPLAY_TIMEOUT: '1s' } });
  const rec = runNode('record', t.log, t.app, args('a.txt', 'bytes', '1000'));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'true\n1000\n');
  const same = runNode('replay', t.log, t.app, args('a.txt', 'bytes', '1000'));
  assert.strictEqual(same.code, 0, same.stderr);
  assert.strictEqual(same.stdout, rec.stdout);
  const other = runNode('replay', t.log, t.app, args('sub', 'bytes', '1000'));
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE/);
  assert.match(other.stderr, /node\.fs\.statfsSync/);
  assert.match(other.stderr, /app\.js:4/);
  const type = runNode('replay', t.log, t.app, args('a.txt', '', '1000'));
  assert.strictEqual(type.code, 86, type.stderr);
  assert.match(type.stderr, /node\.fs\.FileHandle\.readableWebStream/);
  assert.match(type.stderr, /app\.js:6/);
  // The view's size is part of each read's completion key: a read of another size waits
  // for a completion that was never recorded.
  const size = runNode('replay', t.log, t.app, args('a.txt', 'bytes', '500'));
  assert.strictEqual(size.code, 86, size.stderr);
  assert.match(size.stderr, /FileHandle\.readableWebStream .*bytes#1 0 1000/);
  assert.match(size.stderr, /bytes#1 0 500/);
});

test('fs.watch reports the recorded changes in replay, with nobody changing anything', async () => {
  // A watcher's reports are completions; replay watches nothing real. Before, a replayed
  // watcher waited for changes no one made any more (chokidar hung).
  const dir = tmpdir('replay-watch');
  fs.mkdirSync(path.join(dir, 'w'));
  const app = script(dir, 'watch.js', `
const fs = require('fs');
let n = 0;
const w = fs.watch('w', (event, file) => {
  if (file !== 'f.txt' || n++ > 0) return;
  console.log('saw', event, file);
  w.close();
});
w.on('close', () => console.log('closed'));
try {
  fs.watch('missing');
} catch (e) {
  console.log('missing', e.code);
}
console.log('watching');
`);
  const log = path.join(dir, 'watch.replay');
  const writer = setTimeout(() => fs.writeFileSync(path.join(dir, 'w', 'f.txt'), 'x'), 700);
  const rec = await runNodeAsync('record', log, app, { timeout: 20000 });
  clearTimeout(writer);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^missing ENOENT\nwatching\nsaw (rename|change) f\.txt\nclosed\n$/);
  fs.rmSync(path.join(dir, 'w'), { recursive: true });
  const rep = runNode('replay', log, app, { timeout: 20000 });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('fs.watchFile gives the recorded Stats in replay, with nobody changing anything', async () => {
  // A StatWatcher's reports are completions; replay polls nothing. Before, a replayed
  // watchFile waited for a change no one made any more (chokidar with usePolling hung), and
  // one that saw a change got the live file's sizes.
  const dir = tmpdir('replay-watchfile');
  fs.writeFileSync(path.join(dir, 'data.txt'), 'hello\n');
  const app = script(dir, 'watchfile.js', `
const fs = require('fs');
const seen = [];
const onChange = (cur, prev) => {
  seen.push(prev.size + '->' + cur.size + (cur.mtime instanceof Date ? ' date' : ''));
  if (seen.length === 1) return;
  fs.unwatchFile('data.txt', onChange);
  console.log(seen.join(' '), typeof cur.isFile === 'function' && cur.isFile());
};
const w = fs.watchFile('data.txt', { interval: 20 }, onChange);
w.on('stop', () => console.log('stopped'));
const other = () => {};
console.log('watching', w === fs.watchFile('data.txt', other));
fs.unwatchFile('data.txt', other);
`);
  const log = path.join(dir, 'watchfile.replay');
  const data = path.join(dir, 'data.txt');
  const w1 = setTimeout(() => fs.appendFileSync(data, 'more\n'), 600);
  const w2 = setTimeout(() => fs.appendFileSync(data, 'and more\n'), 1200);
  const rec = await runNodeAsync('record', log, app, { timeout: 20000 });
  clearTimeout(w1);
  clearTimeout(w2);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'watching true\n6->11 date 11->20 date true\nstopped\n');
  fs.writeFileSync(data, 'something else entirely\n');
  const rep = runNode('replay', log, app, { timeout: 20000 });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('copyFileSync, copyFile, promises.copyFile and cpSync write the recorded copy after the source changed', () => {
  // A copy reads its source: replayed live, it copied the edited file (fs-extra's copy).
  const dir = tmpdir('replay-copyfile');
  const d = path.join(dir, 'data');
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'a.txt'), 'alpha one');
  fs.writeFileSync(path.join(d, 'b.txt'), 'beta one');
  fs.writeFileSync(path.join(d, 'c.txt'), 'gamma one');
  fs.chmodSync(path.join(d, 'c.txt'), 0o600);
  fs.mkdirSync(path.join(d, 'tree'));
  fs.writeFileSync(path.join(d, 'tree', 'deep.txt'), 'deep one');
  const app = script(dir, 'app.js', `
const fs = require('fs');
const path = require('path');
const d = process.argv[2];
const out = path.join(d, 'out');
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out);
fs.copyFileSync(path.join(d, 'a.txt'), path.join(out, 'a.txt'));
try {
  fs.copyFileSync(path.join(d, 'missing.txt'), path.join(out, 'm.txt'));
} catch (e) {
  console.log('sync', e.code);
}
fs.copyFile(path.join(d, 'b.txt'), path.join(out, 'b.txt'), (err) => {
  console.log('callback', err);
  fs.promises.copyFile(path.join(d, 'c.txt'), path.join(out, 'c.txt')).then(() => {
    console.log('promise done');
    for (const n of ['a.txt', 'b.txt', 'c.txt']) {
      console.log(n, fs.readFileSync(path.join(out, n), 'utf8'));
    }
    // fs.cpSync copies each file through copyFileSync (Node's own call).
    fs.cpSync(path.join(d, 'tree'), path.join(out, 'tree'), { recursive: true });
    console.log('cp', fs.readFileSync(path.join(out, 'tree', 'deep.txt'), 'utf8'));
  });
});
`);
  recordChangeReplayIn({ d, app, log: path.join(dir, 'app.replay') }, (s) => {
    assert.strictEqual(s, 'sync ENOENT\ncallback null\npromise done\na.txt alpha one\nb.txt beta one\nc.txt gamma one\ncp deep one\n');
  }, (dd) => {
    for (const n of ['a.txt', 'b.txt', 'c.txt', 'tree/deep.txt']) fs.writeFileSync(path.join(dd, n), 'CHANGED');
    fs.writeFileSync(path.join(dd, 'missing.txt'), 'now here');
  });
  // On disk too: the copies the replay made hold the recorded bytes and mode.
  assert.strictEqual(fs.readFileSync(path.join(d, 'out', 'b.txt'), 'utf8'), 'beta one');
  assert.strictEqual(fs.readFileSync(path.join(d, 'out', 'c.txt'), 'utf8'), 'gamma one');
  assert.strictEqual(fs.statSync(path.join(d, 'out', 'c.txt')).mode & 0o777, 0o600);
  assert.ok(!fs.existsSync(path.join(d, 'out', 'm.txt')));
  assert.strictEqual(fs.readFileSync(path.join(d, 'out', 'tree', 'deep.txt'), 'utf8'), 'deep one');
});

test('a replayed createReadStream is an fs.ReadStream: open and ready, a pipe from open, close(), pauses between timers', () => {
  // form-data and exceljs use the ReadStream's own events and methods; a program that
  // pauses a stream and resumes it from a timer gets the rest after that timer.
  const t = setup(`${PRELUDE}
const out = p('copy.txt');
fs.rmSync(out, { force: true });
const s = fs.createReadStream(p('big.bin'), { highWaterMark: 16384 });
const seen = [s instanceof fs.ReadStream, typeof s.close, s.pending];
s.on('open', (fd) => {
  seen.push('open', typeof fd);
  s.pipe(fs.createWriteStream(out)).on('finish', () => {
    console.log('copied', hash(fs.readFileSync(out)));
    const t2 = fs.createReadStream(p('a.txt'), { encoding: 'utf8', highWaterMark: 5 });
    let n = 0;
    t2.on('data', (c) => {
      n++;
      if (n === 1) {
        t2.pause();
        setTimeout(() => { console.log('resumed after', JSON.stringify(c)); t2.resume(); }, 5);
      }
      if (n === 3) t2.close();
    });
    t2.on('close', () => console.log('chunks', n, t2.bytesRead, t2.destroyed));
    fs.createReadStream(p('missing')).on('error', (e) => console.log('missing', err(e)));
  });
});
s.on('ready', () => seen.push('ready'));
s.on('end', () => console.log(seen.join(' '), s.bytesRead));
`);
  recordChangeReplayIn(t, (out) => {
    assert.match(out, /^true function true open number ready 70000\ncopied [0-9a-f]{12}\n/);
    assert.match(out, /resumed after "hello"\n/);
    assert.match(out, /chunks 3 15 true\n/);
    assert.match(out, /missing ENOENT open -2 true missing\n/);
  }, (d) => {
    fs.writeFileSync(path.join(d, 'big.bin'), 'short now');
    fs.writeFileSync(path.join(d, 'a.txt'), 'other text entirely');
    fs.writeFileSync(path.join(d, 'missing'), 'here now');
  });
});

test('fs.openAsBlob replays the recorded bytes after the file changed', () => {
  const t = setup(`${PRELUDE}
fs.openAsBlob(p('a.txt'), { type: 'text/plain' }).then(async (b) => {
  console.log(b.size, b.type, JSON.stringify(await b.text()));
  return fs.openAsBlob(p('missing'));
}).catch((e) => console.log('missing', e.code));
`);
  recordChangeReplayIn(t, (out) => {
    assert.strictEqual(out, '26 text/plain "hello web stream\\nline two\\n"\nmissing ERR_INVALID_ARG_VALUE\n');
  }, (d) => {
    fs.writeFileSync(path.join(d, 'a.txt'), 'edited');
    fs.writeFileSync(path.join(d, 'missing'), 'here now');
  });
});

test('asynchronous changes of the file system replay their recorded outcome and are made again', () => {
  // The callback and fs.promises forms of mkdir, mkdtemp, rename, unlink, rm, symlink,
  // writeFile and appendFile, in parallel. The recording itself changes the world (the
  // directories exist, the renamed file is gone): replay gets the recorded outcomes, in the
  // recorded order, and makes the successful changes again (the callback writes into the
  // directory mkdir made).
  const dir = tmpdir('replay-fs-async-mutations');
  const app = script(dir, 'app.js', `
const fs = require('fs');
const fsp = fs.promises;
const path = require('path');
const d = process.argv[2];
const at = (n) => path.join(d, n);
const out = {};
const cb = (name, then) => (err, v) => {
  out[name] = err ? err.code : typeof v === 'string' ? 'ok ' + path.basename(v).slice(0, 4) : 'ok';
  if (then && !err) then(v);
};
const step = (name, p) => p.then((v) => { out[name] = v === undefined ? 'ok' : 'ok ' + String(v).length; }, (e) => { out[name] = e.code; });
fs.mkdir(at('made'), cb('mkdir', () => fs.writeFile(at('made/inside.txt'), 'in', cb('writeFile inside'))));
fs.mkdir(at('deep/er/est'), { recursive: true }, cb('mkdir recursive'));
fs.mkdtemp(at('tmp-'), cb('mkdtemp', (p) => fs.writeFile(path.join(p, 'x'), 'x', cb('writeFile in temp'))));
fs.rename(at('src.txt'), at('dst.txt'), cb('rename'));
fs.unlink(at('gone.txt'), cb('unlink'));
fs.symlink('dst.txt', at('link'), cb('symlink'));
fs.appendFile(at('log.txt'), 'line\\n', cb('appendFile'));
Promise.all([
  step('p.mkdir', fsp.mkdir(at('pmade'))),
  step('p.rm', fsp.rm(at('old'), { recursive: true })),
  step('p.writeFile', fsp.writeFile(at('big.txt'), 'y'.repeat(300000))),
  step('p.rename', fsp.rename(at('psrc.txt'), at('pdst.txt'))),
]).then(() => setTimeout(() => {
  console.log(JSON.stringify(Object.keys(out).sort().map((k) => [k, out[k]])));
}, 20));
`);
  const d = path.join(dir, 'w');
  fs.mkdirSync(path.join(d, 'old', 'sub'), { recursive: true });
  for (const f of ['src.txt', 'gone.txt', 'psrc.txt']) fs.writeFileSync(path.join(d, f), f);
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app, { args: [d] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  const results = new Map(JSON.parse(rec.stdout));
  for (const [k, v] of results) assert.match(v, /^ok/, `${k}: ${v}`);
  assert.strictEqual(results.size, 13, rec.stdout);
  // The world as the recording left it: a live run now fails most of these.
  const live = runNode(null, null, app, { args: [d] });
  assert.notStrictEqual(live.stdout, rec.stdout);
  fs.rmSync(path.join(d, 'made'), { recursive: true });
  fs.appendFileSync(path.join(d, 'log.txt'), 'other\n');
  const rep = runNode('replay', log, app, { args: [d] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  // Made again: the directory the callback wrote into, and its file.
  assert.strictEqual(fs.readFileSync(path.join(d, 'made', 'inside.txt'), 'utf8'), 'in');
});

test("Node's own calls through graceful-fs's wrappers are not the program's (npm's gracefulify)", () => {
  // gracefulify puts wrappers in front of fs's functions; fs.promises.rm's own lstat and
  // rmdir then reached the hooks from graceful-fs's file and were recorded as the program's
  // calls, which replay (where rm is not run) never made: every `npm run` with more than
  // ten logs in ~/.npm/_logs diverged. A stand-in for graceful-fs wraps as it does.
  const dir = tmpdir('replay-graceful');
  const mod = path.join(dir, 'node_modules', 'graceful-fs');
  fs.mkdirSync(mod, { recursive: true });
  fs.writeFileSync(path.join(mod, 'index.js'), `
exports.gracefulify = (fs) => {
  for (const name of ['lstat', 'stat', 'rmdir', 'unlink', 'readdir', 'open', 'close']) {
    const real = fs[name];
    fs[name] = function (...args) { return real.apply(fs, args); };
  }
};
`);
  const app = script(dir, 'app.js', `
const fs = require('fs');
require('graceful-fs').gracefulify(fs);
fs.mkdirSync('victim/sub', { recursive: true });
fs.writeFileSync('victim/sub/a.log', 'x');
fs.writeFileSync('victim/b.log', 'y');
fs.promises.rm('victim', { recursive: true, force: true }).then(() => {
  fs.lstat('app.js', (err, st) => console.log('removed', fs.existsSync('victim'), st.isFile()));
});
`);
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'removed false true\n');
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('a recursive fs.watch replays with nobody changing anything', async () => {
  // On Linux Node watches each directory below with fs.watch itself: those calls were
  // recorded as the program's, which replay (feeding the program's watcher) never made.
  const dir = tmpdir('replay-watch-recursive');
  fs.mkdirSync(path.join(dir, 'w', 'sub', 'deep'), { recursive: true });
  const app = script(dir, 'watch.js', `
const fs = require('fs');
const seen = new Set();
const w = fs.watch('w', { recursive: true }, (type, name) => {
  seen.add(name);
  if (seen.has('sub/deep/c.txt')) {
    w.close();
    console.log('saw', [...seen].sort().join(' '));
  }
});
console.log('watching');
`);
  const log = path.join(dir, 'watch.replay');
  const writer = setTimeout(() => {
    fs.writeFileSync(path.join(dir, 'w', 'a.txt'), '1');
    fs.writeFileSync(path.join(dir, 'w', 'sub', 'deep', 'c.txt'), '3');
  }, 800);
  const rec = await runNodeAsync('record', log, app, { timeout: 20000 });
  clearTimeout(writer);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^watching\nsaw .*sub\/deep\/c\.txt/);
  fs.rmSync(path.join(dir, 'w'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'w'));
  const rep = runNode('replay', log, app, { timeout: 20000 });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('open/write/fsync/close chains on several files replay in their recorded order (write-file-atomic)', () => {
  // What write-file-atomic does for each file, for four files at once: open a temporary file
  // for writing, write, fsync, fchmod, close, chmod, utimes, rename over the target. The
  // completions on the written descriptors were live, in the order the disk gave, and the
  // renames (events) followed that order: replay diverged every time. And a lock file taken
  // with openSync 'wx', which the recording leaves behind: replay takes it again.
  const dir = tmpdir('replay-fs-write-chains');
  const app = script(dir, 'app.js', `
const fs = require('fs');
const path = require('path');
const d = process.argv[2];
const at = (n) => path.join(d, n);
const lock = fs.openSync(at('lock'), 'wx');
fs.writeSync(lock, String(process.pid));
fs.closeSync(lock);
const order = [];
const input = fs.readFileSync(at('in.txt'), 'utf8');
let left = 0;
for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) {
  left++;
  const tmp = at(name + '.tmp');
  const step = (what, next) => (err, ...rest) => {
    if (err) throw err;
    order.push(name + ':' + what);
    next(...rest);
  };
  fs.open(tmp, 'w', step('open', (fd) =>
    fs.write(fd, input + name.repeat(200000), step('write', (n) =>
      fs.fsync(fd, step('fsync', () =>
        fs.fchmod(fd, 0o640, step('fchmod', () =>
          fs.ftruncate(fd, n - 1, step('ftruncate', () =>
            fs.close(fd, step('close', () =>
              fs.chmod(tmp, 0o644, step('chmod', () =>
                fs.utimes(tmp, 1e9, 1e9, step('utimes', () =>
                  fs.rename(tmp, at(name + '.txt'), step('rename', () => {
                    if (--left === 0) console.log(order.join(' '));
                  }))))))))))))))))));
}
`);
  const d = path.join(dir, 'w');
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'in.txt'), 'recorded\n');
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app, { args: [d] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  const files = (names) => names.map((n) => {
    const f = path.join(d, `${n}.txt`);
    return [n, fs.readFileSync(f, 'utf8').slice(0, 12), fs.statSync(f).size, fs.statSync(f).mode & 0o777,
      fs.statSync(f).mtimeMs];
  });
  const recorded = files(['a', 'b', 'c', 'd', 'e', 'f']);
  assert.deepStrictEqual(recorded[0], ['a', 'recorded\naaa', 200008, 0o644, 1e12]);
  // The world changes: the input edited, the written files gone; the lock is still there.
  fs.writeFileSync(path.join(d, 'in.txt'), 'edited, longer\n');
  for (const n of ['a', 'b', 'c', 'd', 'e', 'f']) fs.rmSync(path.join(d, `${n}.txt`));
  for (let i = 0; i < 3; i++) {
    const rep = runNode('replay', log, app, { args: [d] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.deepStrictEqual(files(['a', 'b', 'c', 'd', 'e', 'f']), recorded);
    assert.deepStrictEqual(fs.readdirSync(d).filter((f) => f.endsWith('.tmp')), []);
  }
});

test('FileHandles opened for writing settle in their recorded order', () => {
  // fs.promises.open(path, 'w') and the handle's write, sync, stat and close: live in both
  // modes, their promises settle in the recorded order among the recorded events (the
  // renames). Before, four files written at once renamed in the disk's order of the day.
  const dir = tmpdir('replay-fs-write-handles');
  const app = script(dir, 'app.js', `
const fsp = require('fs/promises');
const path = require('path');
const d = process.argv[2];
const at = (n) => path.join(d, n);
const order = [];
async function one(n) {
  const input = await fsp.readFile(at('in.txt'), 'utf8');
  const fh = await fsp.open(at(n + '.tmp'), 'wx');
  await fh.write(input + n.repeat(300000));
  await fh.sync();
  order.push(n + ':' + (await fh.stat()).size);
  await fh.close();
  await fsp.rename(at(n + '.tmp'), at(n + '.txt'));
  order.push(n);
}
Promise.all(['a', 'b', 'c', 'd', 'e'].map(one)).then(() => console.log(order.join(' ')));
`);
  const d = path.join(dir, 'w');
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'in.txt'), 'recorded\n');
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app, { args: [d] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /\ba:300009\b/);
  fs.writeFileSync(path.join(d, 'in.txt'), 'edited, longer\n');
  for (const n of ['a', 'b', 'c', 'd', 'e']) fs.rmSync(path.join(d, `${n}.txt`));
  // A temporary file left behind: 'wx' takes it again in replay.
  fs.writeFileSync(path.join(d, 'c.tmp'), 'left');
  for (let i = 0; i < 3; i++) {
    const rep = runNode('replay', log, app, { args: [d] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.strictEqual(fs.readFileSync(path.join(d, 'a.txt'), 'utf8').slice(0, 12), 'recorded\naaa');
  }
});

test("graceful-fs's close wrappers, called by Node's own code, read no recorded clock", () => {
  // graceful-fs replaces fs.close and fs.closeSync when it is loaded (webpack, postcss,
  // archiver); its wrappers read Date.now, the callback form in its own callback. Node calls
  // fs.close at the end of an async writeFile and of a read stream, which the hooks take
  // whole: replay never closes there, and every replay ended with clock events left over. A
  // stand-in wraps as graceful-fs 4.2 does.
  const dir = tmpdir('replay-graceful-close');
  const app = script(dir, 'app.js', `
const fs = require('fs');
let queued = 0;
const resetQueue = () => { queued = Date.now(); };
fs.close = (function (fs$close) {
  function close(fd, cb) {
    return fs$close.call(fs, fd, function (err) {
      if (!err) resetQueue();
      if (typeof cb === 'function') cb.apply(this, arguments);
    });
  }
  Object.defineProperty(close, Symbol.for('graceful-fs.previous'), { value: fs$close });
  return close;
})(fs.close);
fs.closeSync = (function (fs$closeSync) {
  function closeSync(fd) {
    fs$closeSync.apply(fs, arguments);
    resetQueue();
  }
  return closeSync;
})(fs.closeSync);
const input = fs.readFileSync('in.txt');
fs.writeFile('out.txt', input, (err) => {
  console.log('written', err, Math.round(Math.random() * 1000));
  let text = '';
  fs.createReadStream('in.txt', 'utf8').on('data', (c) => (text += c)).on('close', () => {
    console.log('read', text.trim(), typeof fs.close[Symbol.for('graceful-fs.previous')]);
    setTimeout(() => console.log('at', Date.now() > 0), 5);
  });
});
`);
  fs.writeFileSync(path.join(dir, 'in.txt'), 'recorded\n');
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^written null \d+\nread recorded function\nat true\n$/);
  fs.writeFileSync(path.join(dir, 'in.txt'), 'edited\n');
  fs.rmSync(path.join(dir, 'out.txt'));
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(fs.readFileSync(path.join(dir, 'out.txt'), 'utf8'), 'recorded\n');
});

test("a write stream's writes complete in their recorded order among timers (a log line before exit)", () => {
  // fs.createWriteStream: Node opens, writes and closes the file itself. Its completions now
  // come in the recorded order: before, the timer came first in replay, the second line
  // stayed in the stream's buffer and process.exit lost it from the file (exit 0; bunyan's
  // last line before an exit). A descriptor the program opened and gave the stream too.
  const dir = tmpdir('replay-write-stream-order');
  const app = script(dir, 'app.js', `
const fs = require('fs');
const s = fs.createWriteStream('app.log');
const t = fs.createWriteStream(null, { fd: fs.openSync('own.log', 'w') });
s.write('first ' + fs.readFileSync('in.txt', 'utf8').trim() + '\\n');
t.write('own first\\n');
setTimeout(() => {
  s.write('second ' + Date.now() + '\\n');
  t.write('own second ' + s.writableLength + '\\n');
  process.exit(0);
}, 20);
`);
  fs.writeFileSync(path.join(dir, 'in.txt'), 'recorded\n');
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  const files = () => ['app.log', 'own.log'].map((f) => fs.readFileSync(path.join(dir, f), 'utf8'));
  const recorded = files();
  assert.match(recorded[0], /^first recorded\nsecond \d+\n$/);
  fs.writeFileSync(path.join(dir, 'in.txt'), 'edited\n');
  for (let i = 0; i < 3; i++) {
    for (const f of ['app.log', 'own.log']) fs.rmSync(path.join(dir, f));
    const rep = runNode('replay', log, app);
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.deepStrictEqual(files(), recorded);
  }
});

test("graceful-fs's own read streams are the program's reads (hexo's source hashes)", () => {
  // graceful-fs's createReadStream makes its own ReadStream, whose open goes through its
  // fs.open from Node's stream code: taken for Node's call, the open and every read ran live
  // in both modes (a hash of an edited file, completions in another order than recorded:
  // hexo diverged every time). A stand-in with graceful-fs 4.2's stream code.
  const dir = tmpdir('replay-graceful-stream');
  const mod = path.join(dir, 'node_modules', 'graceful-fs');
  fs.mkdirSync(mod, { recursive: true });
  fs.writeFileSync(path.join(mod, 'index.js'), `
const fs = require('fs');
const fs$ReadStream = fs.ReadStream;
function open(path, flags, mode, cb) { return fs.open(path, flags, mode, cb); }
function ReadStream(path, options) {
  if (this instanceof ReadStream) return fs$ReadStream.apply(this, arguments), this;
  return ReadStream.apply(Object.create(ReadStream.prototype), arguments);
}
function ReadStream$open() {
  var that = this;
  open(that.path, that.flags, that.mode, function (err, fd) {
    if (err) {
      if (that.autoClose) that.destroy();
      that.emit('error', err);
    } else {
      that.fd = fd;
      that.emit('open', fd);
      that.read();
    }
  });
}
ReadStream.prototype = Object.create(fs$ReadStream.prototype);
ReadStream.prototype.open = ReadStream$open;
exports.createReadStream = (p, o) => new ReadStream(p, o);
`);
  const app = script(dir, 'app.js', `
const gfs = require('graceful-fs');
const fs = require('fs');
const crypto = require('crypto');
const seen = [];
for (const name of ['a.txt', 'b.txt']) {
  const h = crypto.createHash('sha1');
  gfs.createReadStream(name).on('data', (c) => h.update(c)).on('end', () => {
    seen.push(name + ' ' + h.digest('hex').slice(0, 12));
    fs.stat(name, (e, st) => seen.push(name + ' size ' + st.size));
  });
}
let n = 0;
const tick = () => fs.stat('app.js', () => (++n < 20 ? setImmediate(tick) : null));
tick();
process.on('exit', () => console.log(seen.join('\\n')));
`);
  fs.writeFileSync(path.join(dir, 'a.txt'), 'a'.repeat(200000));
  fs.writeFileSync(path.join(dir, 'b.txt'), 'recorded b\n');
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /a\.txt size 200000/);
  fs.writeFileSync(path.join(dir, 'a.txt'), 'edited');
  fs.rmSync(path.join(dir, 'b.txt'));
  for (let i = 0; i < 3; i++) {
    const rep = runNode('replay', log, app);
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
  }
});

test('a replayed read-only FileHandle can be synced (nedb fsyncs its directory so)', () => {
  const dir = tmpdir('replay-fh-sync');
  const app = script(dir, 'app.js', `
const fsp = require('fs/promises');
(async () => {
  const fh = await fsp.open(process.argv[2], 'r');
  await fh.sync();
  await fh.datasync();
  await fh.close();
  console.log('synced', Date.now() > 0);
})().catch((e) => console.log('failed', e.code || e.message));
`);
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app, { args: [dir] });
  assert.strictEqual(rec.stdout, 'synced true\n', rec.stderr);
  const rep = runNode('replay', log, app, { args: [dir] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});
