'use strict';
// lib/fs.js: realpath and readlink (sync, .native, callback and promise forms), directories
// read entry by entry (fs.opendirSync / fs.opendir / fs.promises.opendir and their Dir:
// read, readSync, close, closeSync, async iteration) and readv on recorded descriptors and
// FileHandles. Each test records with real files and links, then retargets, deletes and adds
// them, and replays with identical stdout; recorded errors (ENOENT, EINVAL, ENOTDIR,
// ERR_DIR_CLOSED) come back the same although the paths are now fine.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { tmpdir, runNode, script, OUTPUT_OFF, recordChangeReplay: recordChangeReplayIn } = require('./harness.js');

// data/: files, a subdirectory, links to a file, a directory and a link, and a dangling one.
function world(dir) {
  const d = path.join(dir, 'data');
  fs.mkdirSync(path.join(d, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(d, 'a.txt'), 'hello world');
  fs.writeFileSync(path.join(d, 'b.txt'), 'second file\nwith lines\n');
  fs.writeFileSync(path.join(d, 'sub', 'c.txt'), 'deep');
  fs.writeFileSync(path.join(d, 'sub', 'e.txt'), 'also deep');
  fs.symlinkSync('a.txt', path.join(d, 'link'));
  fs.symlinkSync('sub', path.join(d, 'dlink'));
  fs.symlinkSync('link', path.join(d, 'chain'));
  fs.symlinkSync('nowhere', path.join(d, 'broken'));
  return d;
}

// Retargets and deletes the links, replaces files by directories and the other way round,
// edits and adds files: every recorded answer is now different, every recorded error path fine.
function changeWorld(d) {
  fs.rmSync(path.join(d, 'link'));
  fs.symlinkSync('sub/c.txt', path.join(d, 'link'));
  fs.rmSync(path.join(d, 'dlink'));
  fs.writeFileSync(path.join(d, 'nowhere'), 'the dangling link points somewhere now');
  fs.rmSync(path.join(d, 'a.txt'));
  fs.mkdirSync(path.join(d, 'a.txt'));
  fs.writeFileSync(path.join(d, 'b.txt'), 'edited, and longer than before');
  fs.rmSync(path.join(d, 'sub', 'c.txt'));
  fs.writeFileSync(path.join(d, 'sub', 'new.txt'), 'added');
  fs.mkdirSync(path.join(d, 'sub', 'deeper'));
  fs.writeFileSync(path.join(d, 'missing'), 'exists now');
}

function setup(source) {
  const dir = tmpdir('replay-fs3');
  const d = world(dir);
  const app = script(dir, 'app.js', source);
  return { dir, d, app, log: path.join(dir, 'app.replay') };
}

// Record, check, change the world, replay: harness.js's recordChangeReplay over this world.
const recordChangeReplay = (t, check) => recordChangeReplayIn(t, check, changeWorld);

// Shared by the programs: paths relative to the data directory, errors as their fields.
const PRELUDE = `
const fs = require('fs');
const fsp = require('fs/promises');
const util = require('util');
const path = require('path');
const d = process.argv[2];
const p = (n) => path.join(d, n);
const rel = (r) => (Buffer.isBuffer(r) ? 'buffer:' + path.relative(d, r.toString()) : path.relative(d, r));
const err = (e) => [e.code, e.syscall, e.errno, e instanceof Error, e.path && path.relative(d, String(e.path))].join(' ');
`;

const LINK_APP = `${PRELUDE}
console.log('realpathSync', rel(fs.realpathSync(p('link'))), rel(fs.realpathSync(p('chain'))),
  rel(fs.realpathSync(p('dlink'))), rel(fs.realpathSync(p('a.txt'))));
console.log('realpathSync buffer', rel(fs.realpathSync(p('chain'), 'buffer')),
  rel(fs.realpathSync(p('dlink'), { encoding: 'buffer' })));
console.log('realpathSync.native', rel(fs.realpathSync.native(p('chain'))), rel(fs.realpathSync.native(p('dlink'), 'buffer')));
try { fs.realpathSync(p('broken')); } catch (e) { console.log('realpathSync broken', err(e)); }
try { fs.realpathSync(p('missing')); } catch (e) { console.log('realpathSync missing', err(e)); }
try { fs.realpathSync.native(p('missing')); } catch (e) { console.log('realpathSync.native missing', err(e)); }
console.log('readlinkSync', fs.readlinkSync(p('link')), fs.readlinkSync(p('chain')), fs.readlinkSync(p('broken')));
console.log('readlinkSync buffer', fs.readlinkSync(p('dlink'), 'buffer').toString('hex'));
try { fs.readlinkSync(p('a.txt')); } catch (e) { console.log('readlinkSync file', err(e)); }
try { fs.readlinkSync(p('missing')); } catch (e) { console.log('readlinkSync missing', err(e)); }
// Callback and promise forms: each line printed from a completion, in the order the
// completions reached the program.
fs.realpath(p('chain'), (e, r) => console.log('realpath', e, rel(r)));
fs.realpath(p('dlink'), 'buffer', (e, r) => console.log('realpath buffer', e, rel(r)));
fs.realpath(p('missing'), (e, r) => console.log('realpath missing', err(e), r));
fs.realpath.native(p('link'), (e, r) => console.log('realpath.native', e, rel(r)));
fs.realpath.native(p('broken'), { encoding: 'utf8' }, (e) => console.log('realpath.native broken', err(e)));
fs.readlink(p('chain'), (e, r) => console.log('readlink', e, r));
fs.readlink(p('link'), { encoding: 'buffer' }, (e, r) => console.log('readlink buffer', e, Buffer.isBuffer(r), String(r)));
fs.readlink(p('sub'), (e) => console.log('readlink dir', err(e)));
util.promisify(fs.realpath)(p('link')).then((r) => console.log('promisify realpath', rel(r)));
util.promisify(fs.readlink)(p('dlink')).then((r) => console.log('promisify readlink', r));
fsp.realpath(p('chain')).then((r) => console.log('promises realpath', rel(r)));
fsp.realpath(p('dlink'), 'buffer').then((r) => console.log('promises realpath buffer', rel(r)));
fsp.realpath(p('broken')).catch((e) => console.log('promises realpath broken', err(e)));
fsp.readlink(p('broken')).then((r) => console.log('promises readlink', r));
fsp.readlink(p('a.txt')).catch((e) => console.log('promises readlink file', err(e)));
`;

test('realpath and readlink in every form replay after the links were retargeted and deleted', () => {
  const t = setup(LINK_APP);
  const out = recordChangeReplay(t, (s) => {
    assert.match(s, /^realpathSync a\.txt a\.txt sub a\.txt\n/);
    assert.match(s, /\nrealpathSync buffer buffer:a\.txt buffer:sub\n/);
    assert.match(s, /\nrealpathSync\.native a\.txt buffer:sub\n/);
    assert.match(s, /\nrealpathSync broken ENOENT stat -2 true broken\n/);
    assert.match(s, /\nrealpathSync missing ENOENT lstat -2 true missing\n/);
    assert.match(s, /\nrealpathSync\.native missing ENOENT realpath -2 true missing\n/);
    assert.match(s, /\nreadlinkSync a\.txt link nowhere\n/);
    assert.match(s, /\nreadlinkSync buffer 737562\n/);
    assert.match(s, /\nreadlinkSync file EINVAL readlink -22 true a\.txt\n/);
    assert.match(s, /\nreadlinkSync missing ENOENT readlink -2 true missing\n/);
    assert.match(s, /\nrealpath null a\.txt\n/);
    assert.match(s, /\nrealpath buffer null buffer:sub\n/);
    assert.match(s, /\nrealpath missing ENOENT lstat -2 true missing undefined\n/);
    assert.match(s, /\nrealpath\.native null a\.txt\n/);
    assert.match(s, /\nrealpath\.native broken ENOENT realpath -2 true broken\n/);
    assert.match(s, /\nreadlink null link\n/);
    assert.match(s, /\nreadlink buffer null true a\.txt\n/);
    assert.match(s, /\nreadlink dir EINVAL readlink -22 true sub\n/);
    assert.match(s, /\npromisify realpath a\.txt\n/);
    assert.match(s, /\npromisify readlink sub\n/);
    assert.match(s, /\npromises realpath a\.txt\n/);
    assert.match(s, /\npromises realpath buffer buffer:sub\n/);
    assert.match(s, /\npromises realpath broken ENOENT realpath -2 true broken\n/);
    assert.match(s, /\npromises readlink nowhere\n/);
    assert.match(s, /\npromises readlink file EINVAL readlink -22 true a\.txt\n/);
  });
  assert.strictEqual(out.split('\n').length, 26);
});

const DIR_APP = `${PRELUDE}
const show = (e) => e.name + (e.isFile() ? ':f' : '') + (e.isDirectory() ? ':d' : '') +
  (e.isSymbolicLink() ? ':l' : '') + '@' + path.relative(d, e.parentPath || e.path);
const dir = fs.opendirSync(d);
console.log('opendirSync', dir instanceof fs.Dir, dir.constructor.name, rel(dir.path), typeof dir.read);
const all = [];
for (let e; (e = dir.readSync()) !== null;) all.push(show(e) + (e instanceof fs.Dirent ? '' : ' not a Dirent'));
console.log('readSync', all.sort().join(','));
console.log('readSync at the end', dir.readSync());
console.log('closeSync', dir.closeSync());
try { dir.readSync(); } catch (e) { console.log('readSync after closeSync', e.code); }
try { dir.closeSync(); } catch (e) { console.log('closeSync twice', e.code); }
try { fs.opendirSync(p('missing')); } catch (e) { console.log('opendirSync missing', err(e)); }
try { fs.opendirSync(p('a.txt')); } catch (e) { console.log('opendirSync file', err(e)); }
const bdir = fs.opendirSync(p('sub'), { encoding: 'buffer' });
const bnames = [];
for (let e; (e = bdir.readSync()) !== null;) bnames.push(Buffer.isBuffer(e.name) + ':' + e.name.toString());
console.log('buffer names', bnames.sort().join(','));
bdir.closeSync();
const rdir = fs.opendirSync(d, { recursive: true });
const rnames = [];
for (let e; (e = rdir.readSync()) !== null;) rnames.push(show(e));
console.log('recursive', rnames.sort().join(','));
rdir.closeSync();
// The callback forms, then the promise forms with async iteration: each line printed from a
// completion.
fs.opendir(p('sub'), (e, dir2) => {
  console.log('opendir', e, dir2.constructor.name, rel(dir2.path));
  const got = [];
  const next = () => dir2.read((e2, ent) => {
    if (e2 || ent === null) {
      console.log('read cb', e2, got.sort().join(','));
      dir2.close((e3) => {
        console.log('close cb', e3);
        dir2.close((e4) => console.log('close cb again', e4.code));
      });
      return;
    }
    got.push(show(ent));
    next();
  });
  next();
  try { dir2.readSync(); } catch (e5) { console.log('readSync while a read runs', e5.code); }
});
fs.opendir(p('missing'), (e) => console.log('opendir missing', err(e)));
fs.opendir(p('a.txt'), { bufferSize: 4 }, (e) => console.log('opendir file', err(e)));
(async () => {
  const dir3 = await fsp.opendir(d);
  const got = [];
  for await (const ent of dir3) got.push(show(ent));
  console.log('for await', got.sort().join(','));
  try { await dir3.close(); } catch (e) { console.log('closed by the iteration', e.code); }
  const dir4 = await fsp.opendir(p('sub'), { bufferSize: 1 });
  const first = await dir4.read();
  const rest = [];
  for await (const ent of dir4.entries()) rest.push(show(ent));
  console.log('read promise then entries', [show(first), ...rest].sort().join(','));
  try { dir4.read(); } catch (e) { console.log('read after the iteration', e.code); }
  const dir5 = await fsp.opendir(d);
  for await (const ent of dir5) {
    console.log('break after', typeof ent.name);
    break;
  }
  try { dir5.readSync(); } catch (e) { console.log('break closed it', e.code); }
  const dir6 = await fsp.opendir(p('dlink'));
  console.log('close promise', await dir6.close());
  await dir6.close().catch((e) => console.log('close promise again', e.code));
  try { await fsp.opendir(p('missing')); } catch (e) { console.log('promises opendir missing', err(e)); }
})();
`;

test('opendir in every form and its Dir replay after entries were added, deleted and changed type', () => {
  const t = setup(DIR_APP);
  const out = recordChangeReplay(t, (s) => {
    assert.match(s, /^opendirSync true Dir {2}function\n/);
    assert.match(s, /\nreadSync a\.txt:f@,b\.txt:f@,broken:l@,chain:l@,dlink:l@,link:l@,sub:d@\n/);
    assert.match(s, /\nreadSync at the end null\ncloseSync undefined\n/);
    assert.match(s, /\nreadSync after closeSync ERR_DIR_CLOSED\ncloseSync twice ERR_DIR_CLOSED\n/);
    assert.match(s, /\nopendirSync missing ENOENT opendir -2 true \n/);
    assert.match(s, /\nopendirSync file ENOTDIR opendir -20 true \n/);
    assert.match(s, /\nbuffer names true:c\.txt,true:e\.txt\n/);
    assert.match(s, /\nrecursive a\.txt:f@,.*,c\.txt:f@sub,.*e\.txt:f@sub,.*sub:d@\n/);
    assert.match(s, /\nopendir null Dir sub\n/);
    assert.match(s, /\nreadSync while a read runs ERR_DIR_CONCURRENT_OPERATION\n/);
    assert.match(s, /\nread cb null c\.txt:f@sub,e\.txt:f@sub\n/);
    assert.match(s, /\nclose cb null\n/);
    assert.match(s, /\nclose cb again ERR_DIR_CLOSED\n/);
    assert.match(s, /\nopendir missing ENOENT opendir -2 true missing\n/);
    assert.match(s, /\nopendir file ENOTDIR opendir -20 true a\.txt\n/);
    assert.match(s, /\nfor await a\.txt:f@,b\.txt:f@,broken:l@,chain:l@,dlink:l@,link:l@,sub:d@\n/);
    assert.match(s, /\nclosed by the iteration ERR_DIR_CLOSED\n/);
    assert.match(s, /\nread promise then entries c\.txt:f@sub,e\.txt:f@sub\n/);
    assert.match(s, /\nread after the iteration ERR_DIR_CLOSED\n/);
    assert.match(s, /\nbreak after string\nbreak closed it ERR_DIR_CLOSED\n/);
    assert.match(s, /\nclose promise undefined\nclose promise again ERR_DIR_CLOSED\n/);
    assert.match(s, /\npromises opendir missing ENOENT opendir -2 true missing\n/);
  });
  assert.strictEqual(out.split('\n').length, 27);
});

test('readv on recorded descriptors and FileHandles replays after the file changed', () => {
  const t = setup(`${PRELUDE}
const fd = fs.openSync(p('b.txt'));
const bufs = [Buffer.alloc(3), Buffer.alloc(5)];
console.log('readvSync', fs.readvSync(fd, bufs, 0), JSON.stringify(bufs.map(String)));
const more = [new Uint8Array(4), new Uint16Array(2)];
console.log('readvSync typed', fs.readvSync(fd, more, 12), Buffer.from(more[0]).toString(), Buffer.from(more[1].buffer).toString());
console.log('readvSync from the position', fs.readvSync(fd, [Buffer.alloc(6)]));
fs.closeSync(fd);
fs.open(p('b.txt'), (e, fd2) => {
  const bs = [Buffer.alloc(6), Buffer.alloc(30)];
  fs.readv(fd2, bs, 7, (e2, n, out) => {
    console.log('readv', e2, n, out === bs, JSON.stringify(bs.map(String)));
    util.promisify(fs.readv)(fd2, [Buffer.alloc(2)], 1).then(({ bytesRead, buffers }) => {
      console.log('promisified readv', bytesRead, buffers[0].toString());
      fs.readv(fd2, [Buffer.alloc(4)], (e3, n3, b3) => {
        console.log('readv from the position', e3, n3, b3[0].toString());
        fs.closeSync(fd2);
      });
    });
  });
});
(async () => {
  const fh = await fsp.open(p('b.txt'));
  const r = await fh.readv([Buffer.alloc(4), Buffer.alloc(4)], 2);
  console.log('fh.readv', r.bytesRead, r.buffers.map(String).join('|'), Object.getPrototypeOf(r));
  await fh.close();
})();
`);
  recordChangeReplay(t, (s) => {
    assert.match(s, /^readvSync 8 \["sec","ond f"\]\n/);
    assert.match(s, /\nreadvSync typed 8 with  lin\n/);
    assert.match(s, /\nreadvSync from the position 6\n/);
    assert.match(s, /\nreadv null 16 true \["file\\nw","ith lines\\n\\u0000/);
    assert.match(s, /\npromisified readv 2 ec\n/);
    assert.match(s, /\nreadv from the position null 4 seco\n/);
    assert.match(s, /\nfh\.readv 8 cond\| fil null\n/);
  });
});

test('a realpath, readlink or directory of another path than recorded is a divergence', () => {
  const t = setup(`
const fs = require('fs');
const [name, dir] = process.argv.slice(2);
console.log(fs.realpathSync(name).length);
fs.readlink(name, (e, r) => console.log(r));
fs.promises.opendir(dir).then((d) => d.read()).then((e) => console.log(e.name));
`);
  const args = (name, dir) => ({ args: [path.join(t.d, name), path.join(t.d, dir)] });
  const rec = runNode('record', t.log, t.app, args('link', 'sub'));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^\d+\na\.txt\n[ce]\.txt\n$/);
  const other = runNode('replay', t.log, t.app, args('chain', 'sub'));
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE/);
  assert.match(other.stderr, /node\.fs\.realpathSync/);
  assert.match(other.stderr, /app\.js:4/);
  const dir = runNode('replay', t.log, t.app, args('link', 'dlink'));
  assert.strictEqual(dir.code, 86, dir.stderr);
  assert.match(dir.stderr, /node\.fs\.promises\.opendir/);
  assert.match(dir.stderr, /app\.js:6/);
});

test('directory entries not read in replay are left over, named by their own event, in either order', () => {
  // Clock reads between the reads: the clock's events are fetched ahead in runs past the
  // Dir events (which wait in the per-kind stash), and unused clock values go back. The
  // report must name the first Dir read not made (not #0, nor the end of the log).
  const t = setup(`
const fs = require('fs');
const n = Number(process.argv[3]);
let t = Date.now();
const dir = fs.opendirSync(process.argv[2]);
for (let i = 0; i < n; i++) {
  dir.readSync();
  t = Math.max(t, Date.now());
}
dir.closeSync();
console.log('read', n, typeof t);
`);
  const rec = runNode('record', t.log, t.app, { args: [t.d, '4'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  changeWorld(t.d);
  const full = runNode('replay', t.log, t.app, { args: [t.d, '4'] });
  assert.strictEqual(full.code, 0, full.stderr);
  assert.strictEqual(full.stdout, rec.stdout);
  const firsts = [];
  for (const order of ['strict', 'relaxed']) {
    // (It prints how many it read: output not compared, the events are.)
    const fewer = runNode('replay', t.log, t.app, { args: [t.d, '1'], env: { REPLAY_ORDER: order, ...OUTPUT_OFF } });
    assert.strictEqual(fewer.code, 86, `${order}: ${fewer.stderr}`);
    const m = /recorded events not replayed \(first: #(\d+)\)/.exec(fewer.stderr);
    assert.ok(m, `${order}: ${fewer.stderr}`);
    assert.match(fewer.stderr, new RegExp(`first not replayed: #${m[1]} .*node\\.fs\\.Dir\\.readSync`), order);
    assert.notStrictEqual(m[1], '0', order);
    firsts.push(m[1]);
  }
  assert.strictEqual(firsts[0], firsts[1]);
});

test('module resolution through a symlink is no event: a retargeted module link runs the new target', () => {
  const t = setup(`
const fs = require('fs');
const path = require('path');
console.log(require('./mod.js').v, path.basename(fs.realpathSync(path.join(__dirname, 'mod.js'))));
`);
  script(t.dir, 'one.js', 'exports.v = "one";');
  script(t.dir, 'two.js', 'exports.v = "two";');
  fs.symlinkSync('one.js', path.join(t.dir, 'mod.js'));
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'one one.js\n');
  fs.rmSync(path.join(t.dir, 'mod.js'));
  fs.symlinkSync('two.js', path.join(t.dir, 'mod.js'));
  // The loader resolves and reads the program live; the program's own realpath is replayed.
  // (So it prints the new module's line: output not compared.)
  const rep = runNode('replay', t.log, t.app, { env: OUTPUT_OFF });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.match(rep.stderr, /^replay: warning: the program's source file \S+two\.js was not loaded in the recording: this replay runs other code than was recorded\n$/);
  assert.strictEqual(rep.stdout, 'two one.js\n');
});

test('a required JSON file is the program data: it replays after it was edited', () => {
  // The CommonJS loader reads it (Node's own call, live like source files); a JSON file is
  // data, so its read is an event: the edited value must not reach the replay.
  const dir = tmpdir('replay-require-json');
  const d = path.join(dir, 'data');
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'cfg.json'), '{"greeting":"hello","n":1}');
  const app = script(dir, 'app.js', `
const path = require('path');
const cfg = require(path.join(process.argv[2], 'cfg.json'));
console.log('greeting', cfg.greeting, cfg.n);
try {
  require(path.join(process.argv[2], 'bad.json'));
} catch (e) {
  console.log('bad', e.name, e.message.includes('bad.json'));
}
`);
  fs.writeFileSync(path.join(d, 'bad.json'), '{oops');
  const out = recordChangeReplayIn({ d, app, log: path.join(dir, 'app.replay') }, (s) => {
    assert.strictEqual(s, 'greeting hello 1\nbad SyntaxError true\n');
  }, (dd) => {
    fs.writeFileSync(path.join(dd, 'cfg.json'), '{"greeting":"CHANGED","n":2}');
    fs.writeFileSync(path.join(dd, 'bad.json'), '{"now":"fine"}');
  });
  assert.match(out, /greeting hello 1/);
});

test('a ReadStream over a descriptor the program opened replays its bytes (graceful-fs streams so)', () => {
  // graceful-fs opens a stream's file with fs.open and lets Node's ReadStream read the
  // descriptor; createReadStream({ fd }) does the same. Node's own reads of such a descriptor
  // are events: live, they read /dev/null in replay and the copy came out empty.
  const dir = tmpdir('replay-fd-stream');
  const d = path.join(dir, 'data');
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'in.txt'), 'first\n'.repeat(3000));
  const app = script(dir, 'app.js', `
const fs = require('fs');
const path = require('path');
const d = process.argv[2];
function GracefulLike(p) {
  fs.ReadStream.call(this, p, { highWaterMark: 4096 });
}
GracefulLike.prototype = Object.create(fs.ReadStream.prototype);
GracefulLike.prototype.open = function () {
  fs.open(this.path, 'r', (err, fd) => {
    if (err) return this.destroy(err);
    this.fd = fd;
    this.emit('open', fd);
    this.read();
  });
};
const copy = (stream, name, done) => {
  const chunks = [];
  stream.on('data', (c) => chunks.push(c)).on('end', () => {
    const all = Buffer.concat(chunks);
    fs.writeFileSync(path.join(d, name), all);
    console.log(name, all.length, JSON.stringify(all.subarray(0, 6).toString()));
    done();
  });
};
copy(new GracefulLike(path.join(d, 'in.txt')), 'copy1.txt', () => {
  fs.open(path.join(d, 'in.txt'), 'r', (err, fd) => {
    copy(fs.createReadStream(null, { fd, highWaterMark: 1000 }), 'copy2.txt', () => {});
  });
});
`);
  const out = recordChangeReplayIn({ d, app, log: path.join(dir, 'app.replay') }, (s) => {
    assert.strictEqual(s, 'copy1.txt 18000 "first\\n"\ncopy2.txt 18000 "first\\n"\n');
  }, (dd) => {
    fs.writeFileSync(path.join(dd, 'in.txt'), 'other\n'.repeat(10));
  });
  assert.match(out, /copy2\.txt 18000/);
  assert.strictEqual(fs.readFileSync(path.join(d, 'copy1.txt'), 'utf8'), 'first\n'.repeat(3000));
});
