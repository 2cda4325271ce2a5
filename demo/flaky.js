// flaky.js: the C demo's job in Node. A pretend service answers after a random latency
// (Math.random), each attempt has a jittered timeout, and performance.now measures it.
// All three attempts time out in about one run out of three: the job then exits with status 1.
// Nothing here knows about replay: the addon records the clock reads, the random draws and
// what is printed.
//
//   replay hunt -- node demo/flaky.js      # records until a run fails, keeps that recording
//   replay replay -- node demo/flaky.js    # the same failure, every time
'use strict';
const { setTimeout: sleep } = require('node:timers/promises');

const ATTEMPTS = 3;
const draw = (n) => Math.floor(Math.random() * n);
const nowMs = () => performance.now();

async function callService(attempt, timeoutMs) {
  const latencyMs = 5 + draw(105);
  const start = nowMs();
  await sleep(Math.min(latencyMs, timeoutMs));
  const elapsed = nowMs() - start;
  if (elapsed >= timeoutMs) {
    console.log(`  attempt ${attempt}: no answer within ${timeoutMs} ms, giving up on it`);
    return false;
  }
  console.log(`  attempt ${attempt}: answer after ${elapsed.toFixed(1)} ms (timeout ${timeoutMs} ms)`);
  return true;
}

async function main() {
  const t0 = nowMs();
  console.log(`flaky: fetching the report (${ATTEMPTS} attempts)`);
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const timeout = 30 + draw(20);
    if (await callService(attempt, timeout)) {
      console.log(`flaky: OK after ${attempt} attempt(s), ${(nowMs() - t0).toFixed(0)} ms in all`);
      return;
    }
    if (attempt < ATTEMPTS) {
      const backoff = 1 + draw(5);
      console.log(`  backing off ${backoff} ms`);
      await sleep(backoff);
    }
  }
  console.log(`flaky: FAILED: all ${ATTEMPTS} attempts timed out (${(nowMs() - t0).toFixed(0)} ms in all)`);
  process.exitCode = 1;
}

main();
