'use strict';
// Children that are not recorded themselves (native binaries, shell commands) are recorded and
// replayed from the parent's side (node-addon/lib/child.js): replay does not start them. Each
// test proves the child did not run in replay (it appends to a marker file, or its binary is
// gone) while the program saw the recorded pipe traffic and exit status.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { PKG, tmpdir, runNode, script } = require('./harness.js');

function setup(name, source) {
  const d = tmpdir(`replay-children-${name}`);
  return { d, app: script(d, 'app.js', source), log: path.join(d, 'app.replay'), marker: path.join(d, 'marker') };
}

// The end of a replay that answered children from the recording says they did not run.
const NOT_RUN = /replay: note: not run, answered from the recording: \d+ child process(es)?; [^\n]*\n/;
const withoutNote = (stderr) => {
  assert.match(stderr, NOT_RUN);
  return stderr.replace(NOT_RUN, '');
};

const markerLines = (t) => (fs.existsSync(t.marker) ? fs.readFileSync(t.marker, 'utf8').split('\n').filter(Boolean) : []);

// Records with X=one, replays with X=two (the children print $X, and append it to the marker):
// the replay prints what was recorded and no child ran.
function recordReplay(t, args = [t.d]) {
  const rec = runNode('record', t.log, t.app, { args, env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  const ran = markerLines(t).length;
  assert.ok(ran > 0, 'the children ran in record');
  const rep = runNode('replay', t.log, t.app, { args, env: { X: 'two' } });
  assert.strictEqual(withoutNote(rep.stderr), '');
  assert.strictEqual(rep.code, 0);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(markerLines(t).length, ran, 'a child ran in replay');
  return rec.stdout;
}

test('async children: pipes in recorded order, stdin, exit status, ENOENT, exec and execFile', () => {
  const t = setup('async', `
const { spawn, exec, execFile } = require('child_process');
const d = process.argv[2];
const m = d + '/marker';
const log = (...a) => console.log(...a);
const c = spawn('/bin/sh', ['-c', 'echo out $X; echo err $X >&2; sort; echo $X >> ' + m + '; exit 3']);
c.stdout.setEncoding('utf8').on('data', (s) => log('stdout', JSON.stringify(s)));
c.stderr.setEncoding('utf8').on('data', (s) => log('stderr', JSON.stringify(s)));
c.on('spawn', () => log('spawn', typeof c.pid));
c.on('exit', (code, sig) => log('exit', code, sig));
c.stdin.write('zeta\\nalpha\\n');
c.stdin.end('mid\\n');
c.on('close', (code, sig) => {
  log('close', code, sig);
  const e = spawn(d + '/no-such-binary', ['a']);
  e.on('error', (err) => log('error', err.code, err.syscall, err.path === d + '/no-such-binary', err.spawnargs));
  e.on('close', (code) => {
    log('enoent close', code);
    exec('echo exec $X; echo $X >> ' + m + '; exit 2', (err, so, se) => {
      log('exec', err && err.code, JSON.stringify(so), JSON.stringify(se));
      execFile('cat', ['-'], (err2, so2) => {
        log('execFile', err2, JSON.stringify(so2));
        const i = spawn('sh', ['-c', 'echo inherited $X; echo $X >> ' + m], { stdio: 'inherit' });
        i.on('close', (code) => log('inherit close', code, i.stdout, i.stderr));
      }).stdin.end('piped to cat\\n');
    });
  });
});
`);
  const out = recordReplay(t);
  assert.match(out, /^spawn number\n/);
  assert.match(out, /stdout "out one\\n/);
  assert.match(out, /stderr "err one\\n"/);
  assert.match(out, /alpha\\nmid\\nzeta\\n/);
  assert.match(out, /exit 3 null\nclose 3 null\n/);
  assert.match(out, /error ENOENT spawn .* true \[ 'a' \]\nenoent close -2\n/);
  assert.match(out, /exec 2 "exec one\\n" ""\n/);
  assert.match(out, /execFile null "piped to cat\\n"\n/);
  assert.match(out, /inherited one\ninherit close 0 null null\n$/);
});

test('sync children: spawnSync with input, execSync, execFileSync with inherit, spawnSync ENOENT', () => {
  const t = setup('sync', `
const { spawnSync, execSync, execFileSync } = require('child_process');
const m = process.argv[2] + '/marker';
const r = spawnSync('sh', ['-c', 'sort; echo $X >> ' + m + '; exit 4'], { input: 'b\\na\\n' });
console.log('spawnSync', r.status, r.signal, JSON.stringify(String(r.stdout)), typeof r.pid);
console.log('execSync', JSON.stringify(execSync('echo hi $X; echo $X >> ' + m, { encoding: 'utf8' })));
execFileSync('sh', ['-c', 'echo inherited $X; echo to stderr $X >&2; echo $X >> ' + m], { stdio: 'inherit' });
const e = spawnSync('/no/such/binary');
console.log('enoent', e.error && e.error.code, e.status);
try {
  execSync('echo failing $X >&2; exit 5', { stdio: 'pipe' });
} catch (err) {
  console.log('thrown', err.status, JSON.stringify(String(err.stderr)));
}
`);
  const rec = runNode('record', t.log, t.app, { args: [t.d], env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(
    rec.stdout,
    'spawnSync 4 null "a\\nb\\n" number\nexecSync "hi one\\n"\ninherited one\nenoent ENOENT null\nthrown 5 "failing one\\n"\n',
  );
  // The inherited stderr went to the parent's stderr (captured and written by the parent).
  assert.strictEqual(rec.stderr, 'to stderr one\n');
  const ran = markerLines(t).length;
  assert.strictEqual(ran, 3);
  const rep = runNode('replay', t.log, t.app, { args: [t.d], env: { X: 'two' } });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(withoutNote(rep.stderr), rec.stderr);
  assert.strictEqual(markerLines(t).length, ran);
});

test('a compiled binary talking a request/response protocol replays after it was deleted', (t0) => {
  const cc = spawnSync('cc', ['--version']);
  if (cc.status !== 0) {
    t0.skip('no C compiler');
    return;
  }
  const t = setup('binary', `
const { spawn } = require('child_process');
const bin = process.argv[2] + '/answer';
const c = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
let buf = '';
let n = 0;
const ask = () => c.stdin.write('q' + n + ' ' + Date.now() % 1 + '\\n');
c.stdout.setEncoding('utf8').on('data', (s) => {
  buf += s;
  let i;
  while ((i = buf.indexOf('\\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    console.log('got', line);
    if (++n < 5) ask();
    else c.stdin.end();
  }
});
c.on('close', (code) => console.log('closed', code));
ask();
`);
  fs.writeFileSync(
    path.join(t.d, 'answer.c'),
    `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(void) {
  char line[256];
  FILE *m = fopen("marker", "a");
  fprintf(m, "ran\\n");
  fclose(m);
  srand((unsigned)time(NULL) ^ (unsigned)clock());
  while (fgets(line, sizeof line, stdin)) {
    printf("answer to %.*s: %d\\n", (int)(sizeof line - 40), line, rand() % 100000);
    fflush(stdout);
  }
  fprintf(stderr, "bye\\n");
  return 7;
}
`,
  );
  const built = spawnSync('cc', ['-O1', '-o', path.join(t.d, 'answer'), path.join(t.d, 'answer.c')]);
  assert.strictEqual(built.status, 0, String(built.stderr));
  const rec = runNode('record', t.log, t.app, { args: [t.d], cwd: t.d });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, 'bye\n');
  assert.strictEqual(rec.stdout.split('\n').filter((l) => l.startsWith('got answer to q')).length, 5, rec.stdout);
  assert.match(rec.stdout, /closed 7\n$/);
  fs.rmSync(path.join(t.d, 'answer'));
  const rep = runNode('replay', t.log, t.app, { args: [t.d], cwd: t.d });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(withoutNote(rep.stderr), rec.stderr);
  assert.deepStrictEqual(markerLines(t), ['ran']);
});

test('a child still running when the parent exits (unref\'d, as esbuild\'s service) replays to the same end', () => {
  const t = setup('unref', `
const { spawn } = require('child_process');
const c = spawn('sh', ['-c', 'echo ready $X; echo $X >> ' + process.argv[2] + '/marker; exec sleep 5']);
c.stdout.setEncoding('utf8').once('data', (s) => {
  console.log('got', s.trim());
  c.unref();
  c.stdin.unref();
  c.stdout.unref();
  c.stderr.unref();
  setTimeout(() => console.log('parent done'), 20);
});
`);
  const out = recordReplay(t);
  assert.strictEqual(out, 'got ready one\nparent done\n');
});

test('a detached child writing to the inherited stdout outlives the parent in both modes (a daemon)', () => {
  // Through a pipe of the parent's (how other children's inherited output is recorded), it
  // would die of SIGPIPE at its first write after the parent exited: it runs live.
  const t = setup('daemon', `
const { spawn } = require('child_process');
const c = spawn('sh', ['-c', 'sleep 0.4; echo late; echo alive >> ' + process.argv[2] + '/marker'],
  { detached: true, stdio: 'inherit' });
c.unref();
console.log('parent exits');
`);
  const wait = () => {
    const until = Date.now() + 5000;
    while (markerLines(t).length === 0 && Date.now() < until) spawnSync('sleep', ['0.1']);
  };
  const rec = runNode('record', t.log, t.app, { args: [t.d] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  wait();
  assert.deepStrictEqual(markerLines(t), ['alive']);
  fs.rmSync(t.marker);
  const rep = runNode('replay', t.log, t.app, { args: [t.d] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout.split('\n')[0], 'parent exits');
  wait();
  assert.deepStrictEqual(markerLines(t), ['alive']);
});

test('what the parent writes to a replayed child is checked: another request is a divergence', () => {
  const t = setup('stdin', `
const { spawn } = require('child_process');
const c = spawn('cat');
c.stdout.on('data', (b) => process.stdout.write(b));
c.stdin.end('request ' + process.env.X + '\\n');
`);
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'request one\n');
  const same = runNode('replay', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(same.code, 0, same.stderr);
  const rep = runNode('replay', t.log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /DIVERGENCE/);
  assert.match(rep.stderr, /node\.child\.stdin/);
});

test('another command than recorded is a divergence', () => {
  const t = setup('command', `
const { execFileSync } = require('child_process');
console.log(execFileSync('echo', [process.env.X], { encoding: 'utf8' }).trim());
`);
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const rep = runNode('replay', t.log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /node\.child\.spawnSync/);
});

test('children the process tree records run live; ipc children run live, counted, their messages replayed', () => {
  const { recordedByTree, slots } = require(path.join(PKG, 'lib', 'child.js'));
  const tree = ['REPLAY_TREE=/tmp/rec', 'REPLAY_MODE=record'];
  assert.strictEqual(recordedByTree(process.execPath, [process.execPath, 'a.js'], tree), true);
  assert.strictEqual(recordedByTree('java', ['java', '-cp', '.', 'Main'], tree), true);
  assert.strictEqual(recordedByTree('/bin/sh', ['/bin/sh', '-c', 'cd x && node b.js'], tree), true);
  assert.strictEqual(recordedByTree('/bin/sh', ['/bin/sh', '-c', 'sort < f'], tree), false);
  assert.strictEqual(recordedByTree('/x/esbuild', ['/x/esbuild', '--service'], tree), false);
  // npm bin shims: scripts whose #! line runs node, started by name on the child's PATH
  // (npx runs `sh -c mocha`), by path, or first in a shell command; a shell script is not.
  const bin = tmpdir('replay-children-bin');
  fs.writeFileSync(path.join(bin, 'mocha'), '#!/usr/bin/env node\nrequire("x")\n', { mode: 0o755 });
  fs.writeFileSync(path.join(bin, 'tool'), '#!/bin/sh\necho tool\n', { mode: 0o755 });
  const onPath = [...tree, `PATH=/nonexistent:${bin}`];
  assert.strictEqual(recordedByTree('/bin/sh', ['/bin/sh', '-c', 'mocha --reporter dot'], onPath), true);
  assert.strictEqual(recordedByTree('/bin/sh', ['/bin/sh', '-c', 'FOO=1 exec mocha'], onPath), true);
  assert.strictEqual(recordedByTree('mocha', ['mocha'], onPath), true);
  assert.strictEqual(recordedByTree('./mocha', ['./mocha'], tree, bin), true);
  assert.strictEqual(recordedByTree('/bin/sh', ['/bin/sh', '-c', 'tool'], onPath), false);
  assert.strictEqual(recordedByTree('tool', ['tool'], onPath), false);
  assert.strictEqual(recordedByTree('/bin/sh', ['/bin/sh', '-c', 'mocha'], tree), false);
  // Recording not inherited: the child's environment has no tree.
  assert.strictEqual(recordedByTree(process.execPath, [process.execPath, 'a.js'], ['PATH=/bin']), false);
  assert.deepStrictEqual(slots('inherit'), ['inherit', 'inherit', 'inherit']);
  assert.deepStrictEqual(slots([0, 'pipe', 2]), ['inherit', 'pipe', 'inherit']);
  assert.strictEqual(slots(['pipe', 'pipe', 'pipe', 'ipc']), null);

  const t = setup('ipc', `
const { spawn } = require('child_process');
const c = spawn(process.execPath, ['-e', 'process.send(process.env.X); process.disconnect()'], { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] });
c.on('message', (m) => console.log('message', m));
`);
  const rec = runNode('record', t.log, t.app, { env: { X: 'one' } });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'message one\n');
  // The child runs live (counted), but what it sends is the parent's input: the recorded
  // message comes back at its turn (lib/ipc.js), the live one ("two") is not delivered.
  const rep = runNode('replay', t.log, t.app, { env: { X: 'two' } });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, 'message one\n');
  assert.match(rep.stderr, /ran live \(1 child process\)/);
});

// The real esbuild npm package (a Go binary spoken to over stdin/stdout): needs the npm
// registry, so only with REPLAY_TEST_ESBUILD=1.
test('esbuild: a build recorded, the source edited and the binary broken, replays the same', (t0) => {
  if (!process.env.REPLAY_TEST_ESBUILD) {
    t0.skip('set REPLAY_TEST_ESBUILD=1 (npm installs esbuild)');
    return;
  }
  const t = setup('esbuild', `
const esbuild = require('esbuild');
(async () => {
  const r = await esbuild.build({ entryPoints: ['src/main.js'], bundle: true, write: false, format: 'cjs' });
  process.stdout.write(r.outputFiles[0].text);
  const x = await esbuild.transform('let x: number = 1 + 2', { loader: 'ts' });
  console.log('transform:', x.code.trim());
})();
`);
  const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', 'esbuild'], { cwd: t.d, encoding: 'utf8', timeout: 300000 });
  assert.strictEqual(npm.status, 0, npm.stderr);
  fs.mkdirSync(path.join(t.d, 'src'));
  fs.writeFileSync(path.join(t.d, 'src', 'main.js'), 'import { msg } from "./lib.js";\nconsole.log(msg);\n');
  fs.writeFileSync(path.join(t.d, 'src', 'lib.js'), 'export const msg = "recorded";\n');
  const rec = runNode('record', t.log, t.app, { cwd: t.d });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /var msg = "recorded";/);
  assert.match(rec.stdout, /transform: let x = 1 \+ 2;/);
  fs.writeFileSync(path.join(t.d, 'src', 'lib.js'), 'export const msg = "EDITED";\n');
  // Broken, not deleted: module resolution (live by design) must still find the file.
  const bin = require.resolve('@esbuild/linux-x64/bin/esbuild', { paths: [path.join(t.d, 'node_modules', 'esbuild')] });
  fs.writeFileSync(bin, `#!/bin/sh\necho ran >> ${t.marker}\nexit 1\n`);
  const rep = runNode('replay', t.log, t.app, { cwd: t.d });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.deepStrictEqual(markerLines(t), []);
});
