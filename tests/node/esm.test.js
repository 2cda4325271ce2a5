'use strict';
// ES modules: `node --import replay-node app.mjs` installs the hooks before the program's
// module graph runs; its file reads, random values and clocks replay; the ESM loader's own
// reads of the program's modules are not events (an edited module runs edited).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { PKG, tmpdir, runNode, script, OUTPUT_OFF } = require('./harness.js');

const APP = `
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { mode, flush } from 'replay-node';
import * as replay from 'replay-node';
import { label } from './helper.mjs';
const file = process.argv[2];
console.log('mode', mode, Object.keys(replay).join(), typeof flush);
console.log(label, await readFile(file, 'utf8'), readFileSync(file).length);
const id = randomUUID();
console.log('uuid', id.length, id === randomUUID(), id);
console.log('clock', typeof Date.now(), new Date().getTime() > 0, Math.random() < 1);
console.log('stamp', Date.now(), Math.random());
`;

function setup() {
  const dir = tmpdir('replay-esm');
  // Resolved from the cwd like --require: the package as npm would install it.
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(PKG, path.join(dir, 'node_modules', 'replay-node'), 'dir');
  const app = script(dir, 'app.mjs', APP);
  script(dir, 'helper.mjs', "export const label = 'first';\n");
  const input = path.join(dir, 'in.txt');
  fs.writeFileSync(input, 'recorded contents');
  return { dir, app, input, log: path.join(dir, 'app.replay') };
}

const IMPORT = { nodeArgs: ['--import', 'replay-node'] };

test('an ES module program replays with --import after its input changed', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { ...IMPORT, args: [t.input] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.match(rec.stdout, /^mode record flush,mode function\nfirst recorded contents 17\nuuid 36 false [0-9a-f-]{36}\nclock number true true\n/);

  fs.writeFileSync(t.input, 'edited');
  // The program prints the mode, which differs in replay by nature: output not compared.
  const rep = runNode('replay', t.log, t.app, { ...IMPORT, args: [t.input], env: OUTPUT_OFF });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout.replace('mode record', 'mode replay'));

  // The program's own modules are read live: an edited helper runs edited, and replay says
  // so (the loader's read of it is compared by digest, as CommonJS modules are).
  script(t.dir, 'helper.mjs', "export const label = 'second';\n");
  const edited = runNode('replay', t.log, t.app, { ...IMPORT, args: [t.input], env: OUTPUT_OFF });
  assert.strictEqual(edited.code, 0, edited.stderr);
  assert.match(edited.stderr, /^replay: warning: the program's source file \S+helper\.mjs differs from the recorded one: this replay runs other code than was recorded\n$/);
  assert.strictEqual(edited.stdout, rec.stdout.replace('mode record', 'mode replay').replace('first', 'second'));

  // Without the addon (import of the package only, mode off) the program runs as usual.
  const off = runNode('off', null, t.app, { ...IMPORT, args: [t.input] });
  assert.strictEqual(off.code, 0, off.stderr);
  assert.match(off.stdout, /^mode off flush,mode function\nsecond edited 6\n/);
});

test('an ES module program reading another file than recorded diverges', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app, { ...IMPORT, args: [t.input] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const other = runNode('replay', t.log, t.app, { ...IMPORT, args: [t.app], env: OUTPUT_OFF });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE/);
  assert.match(other.stderr, /node\.fs\.promises\.readFile/);
  assert.match(other.stderr, /app\.mjs:\d+/);
});
