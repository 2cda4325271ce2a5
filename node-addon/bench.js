'use strict';
// Hot-loop cost of the hooks: run bare, then under record and replay, and compare.
//   node bench.js
//   REPLAY_MODE=record REPLAY_LOG=/tmp/b.replay node --require . bench.js
//   REPLAY_MODE=replay REPLAY_LOG=/tmp/b.replay node --require . bench.js
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
  const t = process.hrtime.bigint();
  f();
  const ns = Number(process.hrtime.bigint() - t) / N;
  console.log(`${name.padEnd(16)} ${ns.toFixed(1)} ns/call`);
}
