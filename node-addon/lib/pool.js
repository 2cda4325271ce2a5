'use strict';
// Work Node does on its thread pool whose result does not depend on the world, but whose
// completion the program sees among the recorded ones: zlib's one-shot functions (gzip,
// deflate, brotliCompress and their inverses) and crypto's key derivations (pbkdf2, scrypt,
// hkdf). They run live in both modes (ev.orderedCall); their callbacks come in the recorded
// order. Before, several in flight finished in the pool's order of the day, and what the
// program did next (recorded fs calls, writes) came in another order than recorded: a
// divergence in most replays.

const zlib = require('zlib');
const crypto = require('crypto');

const ZLIB = ['gzip', 'gunzip', 'deflate', 'inflate', 'deflateRaw', 'inflateRaw', 'unzip', 'brotliCompress',
  'brotliDecompress'];
const CRYPTO = ['pbkdf2', 'scrypt', 'hkdf'];

function install(ev) {
  const restore = [];
  const hook = (obj, prefix, name) => {
    const real = obj[name];
    if (typeof real !== 'function') return;
    const identity = `${prefix}.${name}`;
    const hooked = {
      [name](...args) {
        if (!ev.on || ev.busy || typeof args[args.length - 1] !== 'function') return real.apply(this, args);
        return ev.orderedCall(identity, this, args, real);
      },
    }[name];
    Object.defineProperty(hooked, 'length', { value: real.length, configurable: true });
    obj[name] = hooked;
    restore.push(() => {
      obj[name] = real;
    });
  };
  for (const name of ZLIB) hook(zlib, 'zlib', name);
  for (const name of CRYPTO) hook(crypto, 'crypto', name);
  ev.onDisable(() => {
    for (const fn of restore.splice(0)) fn();
  });
}

module.exports = { install };
