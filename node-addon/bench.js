'use strict';
// Hot-loop cost of the hooks: run bare, then under record and replay, and compare.
//   node bench.js
//   REPLAY_MODE=record REPLAY_LOG=/tmp/b.replay node --require . bench.js
//   REPLAY_MODE=replay REPLAY_LOG=/tmp/b.replay REPLAY_VERIFY_OUTPUT=off node --require . bench.js
// (verify-output=off: the timings printed differ from the recorded ones by nature)
const N = 5e6;
function loopNow() {
  let s = 0;
  for (let i = 0; i < N; i++) s += Date.now();
  return s;
}
function loopRandom() {
  let s = 0;
  for (let i = 0; i < N; i++) s += Math.random();
  return s;
}
function loopPerf() {
  let s = 0;
  for (let i = 0; i < N; i++) s += performance.now();
  return s;
}
for (const [name, f] of [['Date.now', loopNow], ['Math.random', loopRandom], ['performance.now', loopPerf]]) {
  f(); // warm-up (also recorded, so record and replay make the same calls)
  // process.uptime, not hrtime or performance.now: those are hooked (replay would print the
  // recorded timings); uptime reads the same monotonic clock and is not.
  const t = process.uptime();
  f();
  const ns = ((process.uptime() - t) * 1e9) / N;
  console.log(`${name.padEnd(16)} ${ns.toFixed(1)} ns/call`);
}
