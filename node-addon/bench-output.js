'use strict';
// What output verification costs: a program printing N lines with console.log (default
// 100 000), timed as a whole process (start-up included), stdout to a file, under record and
// replay with verify-output on and off, alternating, `runs` times (default 7). Prints the
// medians and the on/off ratios (the target is <= 1.05 for both).
//   node bench-output.js [lines] [runs]
// REPLAY_NODE_PKG=<dir> points at an installed package (default: this folder).
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const lines = Number(process.argv[2]) || 100000;
const runs = Number(process.argv[3]) || 7;
const pkg = process.env.REPLAY_NODE_PKG || __dirname;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-bench-output-'));
const app = path.join(dir, 'app.js');
// The same text every run (a replayed run must print what was recorded), lines of ~40 bytes
// made of a few values, as a log line is.
fs.writeFileSync(
  app,
  `const n = ${lines};
for (let i = 0; i < n; i++) console.log('line', i, 'of', n, i % 7 === 0 ? 'seven' : 'other');
`,
);

function env(mode, log, verify) {
  const e = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('REPLAY_') && k !== 'NODE_OPTIONS') e[k] = v;
  if (mode) Object.assign(e, { REPLAY_MODE: mode, REPLAY_LOG: log, REPLAY_VERIFY_OUTPUT: verify });
  return e;
}

// Milliseconds of one whole run.
function run(mode, log, verify) {
  const out = fs.openSync(path.join(dir, 'out.txt'), 'w');
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, mode ? ['--require', pkg, app] : [app], {
    env: env(mode, log, verify),
    stdio: ['ignore', out, 'pipe'],
    encoding: 'utf8',
  });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  fs.closeSync(out);
  if (r.status !== 0) throw new Error(`${mode || 'bare'} verify-output=${verify} exited with ${r.status}: ${r.stderr}`);
  return ms;
}

const cases = [
  ['bare', null, null],
  ['record on', 'record', 'on'],
  ['record off', 'record', 'off'],
  ['replay on', 'replay', 'on'],
  ['replay off', 'replay', 'off'],
];
const times = Object.fromEntries(cases.map(([name]) => [name, []]));
const logOn = path.join(dir, 'on.replay');
const logOff = path.join(dir, 'off.replay');
run('record', logOn, 'on'); // warm-up (disk cache, the addon loaded once)
for (let i = 0; i < runs; i++) {
  for (const [name, mode, verify] of cases) {
    // Replay with verification off reads the log recorded with it on (the writes are passed
    // over): the same log as "replay on", so only the comparison differs.
    const log = mode === 'record' && verify === 'off' ? logOff : logOn;
    times[name].push(run(mode, log, verify));
  }
}
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${lines} console.log lines, stdout to a file, whole process, median of ${runs} runs (ms):`);
for (const [name] of cases) console.log(`  ${name.padEnd(11)} ${median(times[name]).toFixed(1)}`);
const ratio = (a, b) => (median(times[a]) / median(times[b])).toFixed(3);
console.log(`  record: verify-output on / off = ${ratio('record on', 'record off')}`);
console.log(`  replay: verify-output on / off = ${ratio('replay on', 'replay off')}`);
console.log(`  log with output: ${fs.statSync(logOn).size} bytes; without: ${fs.statSync(logOff).size} bytes`);
fs.rmSync(dir, { recursive: true, force: true });
