'use strict';
// jest runs each test file in a vm context of its own: a jest test printing clock and random
// values records and replays byte for byte. Needs jest installed somewhere (not a dependency
// of this repository): REPLAY_TEST_JEST=/path/to/node_modules/.bin/jest, else skipped.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { tmpdir, runNode, script } = require('./harness.js');

const JEST = process.env.REPLAY_TEST_JEST;

test('a jest test printing Date.now, Math.random and performance.now replays identically', { skip: !(JEST && fs.existsSync(JEST)) && 'REPLAY_TEST_JEST not set' }, () => {
  const d = tmpdir('jest');
  script(d, 'package.json', '{"name": "jest-replay-probe", "private": true}\n');
  script(
    d,
    'clock.test.js',
    `test('values', () => {
  const r = Math.random();
  console.log('VALUES', Date.now(), r, performance.now() > 0, new Date().toISOString(), [1, 2, 3].map(() => Math.random()).join(','));
  expect(r).toBeLessThan(1);
});
`,
  );
  const log = `${d}/jest.replay`;
  const args = ['--runInBand', '--rootDir', d, '--cacheDirectory', `${d}/cache`];
  const rec = runNode('record', log, JEST, { args, cwd: d, timeout: 120000 });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /VALUES \d+ 0\.\d+ true/);
  for (let i = 0; i < 2; i++) {
    const rep = runNode('replay', log, JEST, { args, cwd: d, timeout: 120000 });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.doesNotMatch(rep.stderr, /DIVERGENCE/);
  }
});
