'use strict';
// V8's code cache bytes (vm.Script#createCachedData, and a Script made with
// produceCachedData, which v8-compile-cache writes into its .BLOB files for ts-node, yarn and
// older eslint) differ from run to run for the same script: they are an input the program
// writes out. Each call is one event holding the bytes;
// replay returns the recorded ones (V8 still compiles the script: only these bytes are
// replayed), so the cache file the program writes is the recorded one (it was a divergence
// of the file check in every replay).

const vm = require('vm');

function install(ev) {
  const proto = vm.Script.prototype;
  const real = proto.createCachedData;
  if (typeof real !== 'function') return;
  const k = ev.kind('node.vm.Script.createCachedData');
  const hook = {
    createCachedData() {
      if (!ev.on || ev.busy) return real.apply(this, arguments);
      const live = ev.live(() => real.apply(this, arguments));
      if (ev.mode === 'replay') {
        const v = ev.replay(k, null);
        if (v === ev.LIVE || v === null || typeof v !== 'object' || !ArrayBuffer.isView(v.b)) return live;
        return Buffer.from(v.b.buffer, v.b.byteOffset, v.b.byteLength);
      }
      ev.record(k, null, { b: live });
      return live;
    },
  }.createCachedData;
  Object.defineProperty(hook, 'length', { value: real.length, configurable: true });
  proto.createCachedData = hook;

  // new vm.Script(code, { cachedData, produceCachedData }): what V8 said of the cache given
  // (cachedDataRejected) and made (cachedDataProduced, cachedData) is one event; replay sets
  // the recorded values on the script (v8-compile-cache branches on them and writes the bytes).
  const RealScript = vm.Script;
  const kNew = ev.kind('node.vm.Script.cachedData');
  const FIELDS = ['cachedDataRejected', 'cachedDataProduced', 'cachedData'];
  class Script extends RealScript {
    constructor(code, options) {
      super(code, options);
      const asks = options !== null && typeof options === 'object' && (options.produceCachedData || options.cachedData);
      if (!asks || !ev.on || ev.busy) return;
      if (ev.mode === 'replay') {
        const v = ev.replay(kNew, null);
        if (v === ev.LIVE || v === null || typeof v !== 'object') return;
        for (const f of FIELDS) {
          if (!(f in v)) continue;
          const x = v[f];
          this[f] = ArrayBuffer.isView(x) ? Buffer.from(x.buffer, x.byteOffset, x.byteLength) : x;
        }
        return;
      }
      const rec = {};
      for (const f of FIELDS) if (this[f] !== undefined) rec[f] = this[f];
      ev.record(kNew, null, rec);
    }
  }
  Object.defineProperty(Script, 'name', { value: 'Script' });
  vm.Script = Script;
  ev.onDisable(() => {
    proto.createCachedData = real;
    if (vm.Script === Script) vm.Script = RealScript;
  });
}

module.exports = { install };
