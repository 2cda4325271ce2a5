'use strict';
// Cost of the timer hooks (lib/timers.js) per timer or immediate, and the time a sleeping
// program takes: run bare, then under record and replay, and compare.
//   node bench-timers.js
//   REPLAY_MODE=record REPLAY_LOG=/tmp/t.replay node --require . bench-timers.js
//   REPLAY_MODE=replay REPLAY_LOG=/tmp/t.replay REPLAY_VERIFY_OUTPUT=off node --require . bench-timers.js
// (verify-output=off: the timings printed differ from the recorded ones by nature)
// `bench-timers.js sleep 60` instead sleeps 60 s in 2 s steps and prints only values derived
// from Date.now (output verified in replay): time it with /usr/bin/time in record and replay.
// process.uptime, not hrtime or performance.now: those are hooked (replay would print the
// recorded timings); uptime reads the same monotonic clock and is not.
const { setImmediate: tick, setTimeout: sleep } = require('timers/promises');
const N_IMM = 200000;
const N_BATCH = 200;
const BATCH = 1000;
const sleepS = process.argv[2] === 'sleep' ? Number(process.argv[3] || 60) : 0;

const immediates = () =>
  new Promise((resolve) => {
    let n = 0;
    const step = () => (++n < N_IMM ? setImmediate(step) : resolve());
    setImmediate(step);
  });
// Timers made 1000 at a time (a chain of setTimeout(0) would measure the 1 ms minimum).
const timeouts = async () => {
  for (let b = 0; b < N_BATCH; b++) {
    await new Promise((resolve) => {
      let left = BATCH;
      for (let i = 0; i < BATCH; i++) setTimeout(() => --left === 0 && resolve(), 0);
    });
  }
};
const ticks = async () => {
  for (let i = 0; i < N_IMM / 2; i++) await tick();
};
(async () => {
  if (sleepS > 0) {
    const t0 = Date.now();
    for (let i = 0; i < sleepS / 2; i++) {
      await sleep(2000);
      console.log(`slept ${Math.round((Date.now() - t0) / 1000)} s`);
    }
    return;
  }
  for (const [name, f, n] of [
    ['setImmediate chain', immediates, N_IMM],
    ['setTimeout(0) x1000', timeouts, N_BATCH * BATCH],
    ['await tick()', ticks, N_IMM / 2],
  ]) {
    await f(); // warm-up (recorded too, so record and replay make the same calls)
    const t = process.uptime();
    await f();
    console.log(`${name.padEnd(20)} ${(((process.uptime() - t) * 1e9) / n).toFixed(0)} ns/timer`);
  }
})();
