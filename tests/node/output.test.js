'use strict';
// Replay never lies: what the program writes to stdout and stderr is recorded and compared in
// replay, and so is its exit status; every stop ends the process with the core's status
// whatever the program's exit listeners do; a log of another program is refused in one line;
// a cut log ends in one line.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { tmpdir, runNode, script, cli, OUTPUT_OFF } = require('./harness.js');

// Its output depends on an environment variable, which no hook covers.
const ENV_APP = `
const t = Date.now();
console.log('X=' + process.env.X);
console.log('done', typeof t);
`;

function setup(name, source, file = 'app.js') {
  const dir = tmpdir(`replay-output-${name}`);
  return { dir, app: script(dir, file, source), log: path.join(dir, 'app.replay') };
}

test('output that depends on what no hook covers is a divergence naming the line and the write', () => {
  const t = setup('env', ENV_APP);
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.strictEqual(rec.stdout, 'X=one\ndone number\n');
  const same = runNode('replay', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(same.code, 0, same.stderr);
  assert.strictEqual(same.stderr, '');
  assert.strictEqual(same.stdout, rec.stdout);

  const rep = runNode('replay', t.log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /DIVERGENCE/);
  assert.match(rep.stderr, /stdout differs from the recording at byte 2 \(line 1\)/);
  assert.match(rep.stderr, /recorded: "X=one"/);
  assert.match(rep.stderr, /replayed: "X=two"/);
  // The JS stack of the write: the program's console.log line.
  assert.match(rep.stderr, /app\.js:3:\d+/);
  assert.match(rep.stderr, /policy abort: exiting with status 86/);
  // Stopped before the differing line was written, and nothing after it ran.
  assert.strictEqual(rep.stdout, '');
});

test('with verify-output=off the same replay runs to its end', () => {
  const t = setup('env-off', ENV_APP);
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const rep = runNode('replay', t.log, t.app, { env: { X: 'two', ...OUTPUT_OFF } });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, 'X=two\ndone number\n');
  // Recorded with it off: the log holds no output, and replay says it compares none.
  const log = path.join(t.dir, 'off.replay');
  const rec2 = runNode('record', log, t.app, { env: { X: 'one', ...OUTPUT_OFF } });
  assert.strictEqual(rec2.code, 0, rec2.stderr);
  const rep2 = runNode('replay', log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep2.code, 0, rep2.stderr);
  assert.match(rep2.stderr, /holds no output of the program/);
});

test('stderr is compared too, and fs.writeSync on fd 2', () => {
  const t = setup('stderr', `
console.error('err ' + process.env.Y);
require('fs').writeSync(2, 'direct ' + process.env.Z + '\\n');
`);
  const rec = runNode('record', t.log, t.app, { env: { Y: 'a', Z: 'b' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, 'err a\ndirect b\n');
  const y = runNode('replay', t.log, t.app, { env: { Y: 'c', Z: 'b' } });
  assert.strictEqual(y.code, 86, y.stderr);
  assert.match(y.stderr, /stderr differs from the recording at byte 4 \(line 1\)/);
  assert.match(y.stderr, /recorded: "err a"/);
  assert.match(y.stderr, /replayed: "err c"/);
  assert.match(y.stderr, /app\.js:2:\d+/);
  const z = runNode('replay', t.log, t.app, { env: { Y: 'a', Z: 'd' } });
  assert.strictEqual(z.code, 86, z.stderr);
  assert.match(z.stderr, /stderr differs from the recording at byte 13 \(line 2\)/);
  assert.match(z.stderr, /recorded: "direct b"/);
  assert.match(z.stderr, /replayed: "direct d"/);
  assert.match(z.stderr, /app\.js:3:\d+/);
});

test('every way of writing replays byte for byte, however the writes are split', () => {
  // Strings in several encodings, Buffers, typed-array slices, fs.writeSync/fs.write forms,
  // writes larger than the record queue takes in one piece, and enough lines to take several
  // fetches of recorded bytes in replay.
  const t = setup('forms', `
const fs = require('fs');
process.stdout.write('utf8 é 😀 ' + Date.now() % 1 + '\\n');
// Halves of a surrogate pair in two writes: each alone is written as U+FFFD.
process.stdout.write('half \\ud83d');
process.stdout.write('\\ude00 pair\\n');
process.stdout.write('6c6174696e310a', 'hex');
process.stdout.write(Buffer.from('buffer\\n'));
process.stdout.write(new Uint8Array([116, 121, 112, 101, 100, 10]));
fs.writeSync(1, Buffer.from('xxslicexx\\n'), 2, 5);
fs.writeSync(1, '\\n');
fs.writeSync(1, Buffer.from('options\\n'), { offset: 0, length: 8 });
process.stdout.write('big ' + 'x'.repeat(600000) + '\\n');
for (let i = 0; i < 10000; i++) console.log('line', i);
const split = process.argv[2] === 'split';
fs.write(2, split ? 'async ' : 'async write\\n', () => {
  if (split) fs.writeSync(2, 'write\\n');
  console.error('end');
});
`);
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^utf8 é 😀 0\nhalf \ufffd\ufffd pair\nlatin1\nbuffer\ntyped\nslice\noptions\nbig x{600000}\nline 0\n/);
  assert.strictEqual(rec.stderr, 'async write\nend\n');
  const bare = runNode(null, null, t.app);
  assert.strictEqual(bare.stdout, rec.stdout);
  const rep = runNode('replay', t.log, t.app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, rec.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  // The same bytes in other pieces (and other arguments: a warning line) still match.
  const split = runNode('replay', t.log, t.app, { args: ['split'] });
  assert.strictEqual(split.code, 0, split.stderr);
  assert.strictEqual(split.stdout, rec.stdout);
  assert.match(split.stderr, /arguments differ/);
  const bin = cli();
  assert.ok(bin, 'the replay CLI is built (cargo build --release)');
  const info = require('child_process').execFileSync(bin, ['info', t.log], { encoding: 'utf8' });
  assert.match(info, /output\.stdout/);
  assert.match(info, /output\.stderr/);
});

test('a difference after many lines is reported at its byte and line, with the write\'s stack', () => {
  // Thousands of lines: the comparison runs over several fetches of recorded bytes.
  const t = setup('far', `
const at = Number(process.env.AT);
for (let i = 0; i < 10000; i++) {
  if (i === at) process.stdout.write('changed ' + i + '\\n');
  else console.log('line', i);
}
`);
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  const rep = runNode('replay', t.log, t.app, { env: { AT: '9000' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  let offset = 0;
  for (let i = 0; i < 9000; i++) offset += `line ${i}\n`.length;
  assert.match(rep.stderr, new RegExp(`stdout differs from the recording at byte ${offset} \\(line 9001\\)`));
  assert.match(rep.stderr, /recorded: "line 9000"/);
  assert.match(rep.stderr, /replayed: "changed 9000"/);
  assert.match(rep.stderr, /app\.js:4:\d+/);
  assert.strictEqual(rep.stdout, rec.stdout.slice(0, offset));
});

test('recorded output the program does not write is a divergence at exit', () => {
  const t = setup('short', `
const n = Number(process.env.N);
for (let i = 0; i < n; i++) console.log('line', i);
`);
  const rec = runNode('record', t.log, t.app, { env: { N: '3' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const rep = runNode('replay', t.log, t.app, { env: { N: '2' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /stdout differs from the recording at byte 14 \(line 3\)/);
  assert.match(rep.stderr, /recorded: "line 2"/);
  assert.match(rep.stderr, /replayed: \(nothing: the program ended\)/);
  const more = runNode('replay', t.log, t.app, { env: { N: '4' } });
  assert.strictEqual(more.code, 86, more.stderr);
  assert.match(more.stderr, /stdout differs from the recording at byte 21 \(line 4\)/);
  assert.match(more.stderr, /replayed: "line 3"/);
});

test('another exit status than recorded is a divergence', () => {
  const t = setup('status', `
console.log('hello');
process.exitCode = Number(process.env.CODE || 0);
`);
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  const same = runNode('replay', t.log, t.app);
  assert.strictEqual(same.code, 0, same.stderr);
  assert.strictEqual(same.stderr, '');
  const rep = runNode('replay', t.log, t.app, { env: { CODE: '3' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /DIVERGENCE: the program exited with status 3; the recording exited with 0/);
  assert.strictEqual(rep.stdout, 'hello\n');
  // A recorded non-zero status replays as itself.
  const log = path.join(t.dir, 'five.replay');
  const rec5 = runNode('record', log, t.app, { env: { CODE: '5' } });
  assert.strictEqual(rec5.code, 5, rec5.stderr);
  const rep5 = runNode('replay', log, t.app, { env: { CODE: '5' } });
  assert.strictEqual(rep5.code, 5, rep5.stderr);
  assert.strictEqual(rep5.stderr, '');
});

test('an exit listener calling process.exit(1) (as jest registers) does not hide a stop', () => {
  const t = setup('jest', `
process.on('exit', () => process.exit(1));
if (process.env.MORE) Date.now();
console.log('value', process.env.X);
`);
  const rec = runNode('record', t.log, t.app, { env: { X: 'a', MORE: '1' } });
  assert.strictEqual(rec.code, 1, rec.stderr);
  const same = runNode('replay', t.log, t.app, { env: { X: 'a', MORE: '1' } });
  assert.strictEqual(same.code, 1, same.stderr);
  assert.strictEqual(same.stderr, '');
  // A divergence while the program runs.
  const out = runNode('replay', t.log, t.app, { env: { X: 'b', MORE: '1' } });
  assert.strictEqual(out.code, 86, out.stderr);
  assert.match(out.stderr, /replayed: "value b"/);
  // A divergence found at exit (a recorded Date.now never made).
  const end = runNode('replay', t.log, t.app, { env: { X: 'a' } });
  assert.strictEqual(end.code, 86, end.stderr);
  assert.match(end.stderr, /not replayed/);
  assert.match(end.stderr, /node\.Date\.now/);
});

test('a log recorded by another program is refused in one line with status 3', () => {
  const t = setup('other', ENV_APP, 'a.js');
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const b = script(t.dir, 'b.js', ENV_APP);
  const rep = runNode('replay', t.log, b, { env: { X: 'one' } });
  assert.strictEqual(rep.code, 3, rep.stderr);
  assert.strictEqual(rep.stdout, '', 'the program must not run');
  const lines = rep.stderr.trimEnd().split('\n');
  assert.strictEqual(lines.length, 1, rep.stderr);
  assert.match(lines[0], /^replay: .*app\.replay was recorded by node running .*a\.js, but this is node running .*b\.js/);
  // The same script in another directory is the same program.
  const moved = path.join(t.dir, 'moved');
  require('fs').mkdirSync(moved);
  const a2 = script(moved, 'a.js', ENV_APP);
  const ok = runNode('replay', t.log, a2, { env: { X: 'one' } });
  assert.strictEqual(ok.code, 0, ok.stderr);
  assert.strictEqual(ok.stdout, 'X=one\ndone number\n');
});

test('a cut log (the recorder killed) replays up to its end, then says so in one line', () => {
  const t = setup('cut', `
const flush = globalThis[Symbol.for('replay-node')].flush;
for (let i = 0; i < 5; i++) console.log('before', i, Date.now() > 0);
if (process.env.REPLAY_MODE === 'record') flush();
for (let i = 0; i < 5; i++) console.log('after', i, Date.now() > 0);
if (process.env.REPLAY_MODE === 'record') process.kill(process.pid, 'SIGKILL');
`);
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.signal, 'SIGKILL', rec.stderr);
  assert.match(rec.stdout, /after 4 true\n$/);
  const started = Date.now();
  const rep = runNode('replay', t.log, t.app);
  // Not a stall of the session timeout (10 s).
  assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stdout, /^before 0 true\n(.*\n)*before 4 true\n/);
  const lines = rep.stderr.trimEnd().split('\n');
  assert.strictEqual(lines.length, 1, rep.stderr);
  assert.match(lines[0], /^replay: the recording ends at event #\d+ .*the recorder was killed or cut/);
});

test('a divergence report lists what ran live by rule', () => {
  const t = setup('live', `
const { spawn } = require('child_process');
const vm = require('vm');
vm.runInNewContext('Date.now()');
// An ipc channel: a child replay cannot take the place of (lib/child.js), so it runs live.
spawn(process.execPath, ['-e', '0'], { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] }).on('close', () => console.log('X=' + process.env.X));
`);
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const rep = runNode('replay', t.log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /ran live by rule in this replay: .*1 child process/);
  // vm contexts are hooked (lib/vm.js), not live.
  assert.doesNotMatch(rep.stderr, /vm context/);
});

test('a child that prints to the inherited stdout is replayed from the parent: its recorded bytes', () => {
  // Like TypeScript 7's tsc: the work is done by a child that writes to fd 1 itself. Record
  // gives it a pipe and writes what comes through it to stdout (lib/child.js); replay writes
  // the recorded bytes and does not start it, so the output is the recorded one and checked.
  const t = setup(
    'child',
    `
const { execFileSync, spawnSync } = require('child_process');
execFileSync('sh', ['-c', 'echo child X=$X'], { stdio: 'inherit' });
spawnSync('true');
console.log('parent done');
`
  );
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'child X=one\nparent done\n');
  const rep = runNode('replay', t.log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, 'child X=one\nparent done\n');
  // Not started in replay, which its end says (what they wrote to files did not happen).
  assert.match(rep.stderr, /^replay: note: not run, answered from the recording: 2 child processes; [^\n]*\n$/);
});

test('stacks printed from callbacks, replayed errors and uncaught exceptions replay as recorded', () => {
  // Each callback runs under other frames in replay than in record (the completion queue,
  // not FSReqCallback or the socket's stream; a replayed error is made by the package): the
  // printed stacks show the program's frames alone in both runs. The data file changes
  // before replay, and the last error is thrown uncaught (Node prints it after 'exit').
  const t = setup('stacks', `
const fs = require('fs');
const http = require('http');
const assert = require('assert');
const data = require('path').join(__dirname, 'data.txt');
fs.readFile(data, 'utf8', function check(err, d) {
  try { assert.strictEqual(d, 'never'); } catch (e) { console.log('A', e.stack); }
  setTimeout(() => {
    console.log('B', new Error('timer').stack);
    fs.stat(data + '.missing', (err) => {
      console.log('C', err.stack);
      try { fs.readFileSync(data + '.gone'); } catch (e) { console.log('D', e.stack); }
      const srv = http.createServer((q, r) => { console.log('E', new Error('server').stack); r.end('hi'); });
      srv.listen(0, '127.0.0.1', () => {
        http.get('http://127.0.0.1:' + srv.address().port, (res) => {
          console.log('F', new Error('client').stack);
          res.resume();
          res.on('end', async () => {
            srv.close();
            await fs.promises.stat(data);
            fs.stat(data + '.missing', (err) => { throw err; });
          });
        });
      });
    });
  }, 5);
});
`);
  const fs = require('fs');
  const data = path.join(t.dir, 'data.txt');
  fs.writeFileSync(data, 'recorded');
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 1, rec.stderr);
  // No frame of the package in any stack the program printed or Node printed for it.
  assert.doesNotMatch(rec.stdout + rec.stderr, /node-addon|replay-node|\.cache\/replay/);
  for (const tag of ['A', 'B', 'C', 'D', 'E', 'F']) assert.match(rec.stdout, new RegExp(`^${tag} `, 'm'));
  assert.match(rec.stdout, /^A AssertionError/m);
  assert.match(rec.stdout, /at check \(.*app\.js:7:/);
  assert.match(rec.stdout, /^D Error: ENOENT[^\n]*\n {4}at .*app\.js:12:/m);
  assert.match(rec.stderr, /\[Error: ENOENT: no such file or directory, stat/);
  fs.writeFileSync(data, 'changed after recording');
  const rep = runNode('replay', t.log, t.app);
  assert.strictEqual(rep.stdout, rec.stdout, rep.stderr);
  assert.strictEqual(rep.stderr, rec.stderr);
  assert.strictEqual(rep.code, 1);
});

test('what the program writes into files is compared too: another byte in a file is a divergence at exit', () => {
  // Every way of writing a file (writeFileSync, appendFile, a write stream, fs.write on an
  // opened descriptor, a FileHandle), with a value no hook covers (the environment, outside
  // the launcher) going only into files: replay printed the same and exited 0 with other
  // file contents. The sums per path go into the log's trailer and are compared at exit.
  const t = setup('files', `
const fs = require('fs');
const fsp = require('fs/promises');
const x = process.env.X;
fs.writeFileSync('a.txt', 'sync ' + Date.now() + '\\n');
fs.appendFile('a.txt', 'appended\\n', () => {
  const s = fs.createWriteStream('b.txt');
  s.write('stream ' + Math.random() + '\\n');
  s.end('end\\n', () => {
    const fd = fs.openSync('c.txt', 'w');
    fs.write(fd, 'fd X=' + x + '\\n', () => {
      fs.closeSync(fd);
      fsp.open('d.txt', 'w').then(async (fh) => {
        await fh.write(Buffer.from('handle\\n'));
        await fh.close();
        console.log('done');
      });
    });
  });
});
`);
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'done\n');
  if (cli()) {
    const info = require('child_process').spawnSync(cli(), ['info', t.log, '--json'], { encoding: 'utf8' });
    const files = JSON.parse(info.stdout).files_written;
    assert.deepStrictEqual(files.map((f) => f.path), ['a.txt', 'b.txt', 'c.txt', 'd.txt']);
    assert.deepStrictEqual([files[0].bytes, files[2].bytes, files[3].bytes], [28, 9, 7]);
  }
  const same = runNode('replay', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(same.code, 0, same.stderr);
  assert.strictEqual(same.stderr, '');

  const rep = runNode('replay', t.log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.strictEqual(rep.stdout, 'done\n');
  assert.match(rep.stderr, /DIVERGENCE: the program wrote other bytes into c\.txt than the recording \(9 bytes, as recorded, with another checksum\)/);
  assert.match(rep.stderr, /policy abort: exiting with status 86/);
  const off = runNode('replay', t.log, t.app, { env: { X: 'three!', ...OUTPUT_OFF } });
  assert.strictEqual(off.code, 0, off.stderr);
  assert.strictEqual(off.stderr, '');
});
