'use strict';
// process.hrtime (with and without a previous time), process.hrtime.bigint and
// performance.timeOrigin replay the recorded readings, even when the replayed run takes a
// different time; a changed number of calls is a divergence.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { spawnSync } = require('child_process');
const { tmpdir, runNode, script, argsWarned, OUTPUT_OFF } = require('./harness.js');

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
  assert.strictEqual(argsWarned(rep.stderr), '');
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

// Replay fetches a run of a kind's recorded values per native call and serves the calls
// from it: values fetched and not used by the end are still recorded events left over, and
// runs longer than one fetch are served in order.
const RUNS = `
const n = Number(process.argv[2]);
let s = 0;
const first = [];
for (let i = 0; i < n; i++) {
  const t = process.hrtime.bigint();
  if (i < 3) first.push(t);
  s += Number(t % 1000n);
}
console.log('n', n, first.join(' '), s);
`;

test('clock values fetched ahead but not used are left over at exit', () => {
  const dir = tmpdir('replay-clock-runs');
  const app = script(dir, 'runs.js', RUNS);
  const log = path.join(dir, 'runs.replay');
  const rec = runNode('record', log, app, { args: ['10000'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const rep = runNode('replay', log, app, { args: ['10000'] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  // 10 calls take one run of thousands: the rest must still count as not replayed.
  // (It prints other sums: its output is not compared, the events are.)
  const fewer = runNode('replay', log, app, { args: ['10'], env: OUTPUT_OFF });
  assert.strictEqual(fewer.code, 86, fewer.stderr);
  // (#10 or #11: the program's own source file's digest record may take a number first.)
  assert.match(fewer.stderr, /the program ended with 9990 of 10000 recorded events not replayed \(first: #1[01]\)/);
  assert.match(fewer.stderr, /first not replayed: #1[01] +t0 main +node\.process\.hrtime\.bigint/);
  // One more than recorded: the call after the last fetched run diverges.
  const more = runNode('replay', log, app, { args: ['10001'], env: OUTPUT_OFF });
  assert.strictEqual(more.code, 86, more.stderr);
  assert.match(more.stderr, /made a \S+ call after its 10000 recorded calls of that kind ran out/);
  assert.match(more.stderr, /node\.process\.hrtime\.bigint/);
  assert.match(more.stderr, /runs\.js:6/);
});

test('under warn-live, clock values fetched ahead are dropped once replay goes live', () => {
  const dir = tmpdir('replay-clock-live');
  const app = script(dir, 'live.js', `
const a = Date.now();
const b = Date.now();
require('fs').readFileSync(process.argv[2]);
const c = Date.now();
console.log(a, b, c);
`);
  const log = path.join(dir, 'live.replay');
  const data = script(dir, 'data.txt', 'x');
  const other = script(dir, 'other.txt', 'y');
  const rec = runNode('record', log, app, { args: [data] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const [a, b, c] = rec.stdout.trim().split(' ').map(Number);
  // Another file than recorded: a divergence; warn-live runs the rest live, so the third
  // Date.now is a live reading even though its recorded value was fetched with the first.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  const rep = runNode('replay', log, app, { args: [other], env: { REPLAY_POLICY: 'warn-live' } });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.match(rep.stderr, /DIVERGENCE/);
  const [ra, rb, rc] = rep.stdout.trim().split(' ').map(Number);
  assert.deepStrictEqual([ra, rb], [a, b]);
  assert.ok(rc >= c + 20, `${rep.stdout} vs ${rec.stdout}`);
});

test('process.pid is the recorded one in replay, and process.kill of it signals this process', () => {
  const dir = tmpdir('replay-pid');
  // write-file-atomic names its temporary file after the pid, as programs name logs and locks.
  const app = script(
    dir,
    'pid.js',
    `const fs = require('fs');
     const tmp = __dirname + '/out.' + process.pid + '.tmp';
     fs.writeFileSync(tmp, 'x');
     fs.renameSync(tmp, __dirname + '/out');
     let got = null;
     process.on('SIGUSR2', () => { got = 'SIGUSR2'; });
     process.kill(process.pid, 'SIGUSR2');
     setTimeout(() => console.log('pid', process.pid, 'signal', got, 'alive', process.kill(process.pid, 0)), 20);`,
  );
  const log = path.join(dir, 'pid.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^pid \d+ signal SIGUSR2 alive true\n$/);
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('what os says about the machine (cpus, host name, memory, uptime) is the recorded machine\'s', () => {
  const dir = tmpdir('replay-os');
  const app = script(
    dir,
    'os.js',
    `const os = require('os');
     console.log(JSON.stringify([os.hostname(), os.cpus().length, os.availableParallelism(),
       os.uptime(), os.freemem(), os.totalmem(), os.loadavg(), os.userInfo().username, os.release()]));
     try { os.userInfo({ encoding: 42 }); console.log('accepted'); } catch (e) { console.log('bad', e.code); }`,
  );
  const log = path.join(dir, 'os.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  // Replay a second later: uptime and free memory have moved on; the recorded ones come back.
  spawnSync('sleep', ['1.1']);
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  const live = runNode(null, null, app);
  assert.notStrictEqual(live.stdout, rec.stdout);
});

test('what process says about its run (uptime, memory, CPU time, resources, V8 heap) is the recorded run\'s', () => {
  const dir = tmpdir('replay-process-facts');
  const app = script(
    dir,
    'facts.js',
    `const t0 = process.cpuUsage();
     let s = 0;
     for (let i = 0; i < 1e6; i++) s += i;
     console.log(JSON.stringify([process.uptime(), process.memoryUsage().rss, process.memoryUsage.rss(),
       process.cpuUsage(t0), process.resourceUsage().maxRSS, s, require('v8').getHeapStatistics().used_heap_size,
       require('v8').getHeapSpaceStatistics().length]));`,
  );
  const log = path.join(dir, 'facts.replay');
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  for (let i = 0; i < 2; i++) {
    const rep = runNode('replay', log, app);
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stdout, rec.stdout);
  }
  // Live, the uptime (at least) differs from run to run: the replay was not a coincidence.
  const live = runNode(null, null, app);
  assert.notStrictEqual(live.stdout, rec.stdout);
});

test('perf_hooks marks, measures, event loop utilization and nodeTiming are the recorded run\'s', () => {
  const dir = tmpdir('replay-perf-hooks');
  const app = script(
    dir,
    'perf.js',
    `const { performance } = require('perf_hooks');
     const fs = require('fs');
     performance.mark('start', { detail: 'd' });
     setTimeout(() => {
       performance.mark('end');
       const a = performance.measure('work', 'start');
       const b = performance.measure('between', 'start', 'end');
       const elu = performance.eventLoopUtilization();
       const marks = performance.getEntriesByType('mark').map((m) => [m.name, m.startTime, m.detail]);
       fs.writeFileSync(process.argv[2], JSON.stringify([a.duration, a.startTime, b.duration, elu,
         performance.eventLoopUtilization(elu).utilization, performance.nodeTiming.bootstrapComplete, marks]));
       console.log('written');
     }, 30);`,
  );
  const log = path.join(dir, 'perf.replay');
  const out = path.join(dir, 'timings.json');
  const rec = runNode('record', log, app, { args: [out] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const recorded = require('fs').readFileSync(out, 'utf8');
  const rep = runNode('replay', log, app, { args: [out] });
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.code, 0);
  assert.strictEqual(require('fs').readFileSync(out, 'utf8'), recorded);
  runNode(null, null, app, { args: [out] });
  assert.notStrictEqual(require('fs').readFileSync(out, 'utf8'), recorded, 'two live runs differ');
});
