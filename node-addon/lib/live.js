'use strict';
// Replay: what the addon knowingly lets run live, counted for the core's reports (a
// divergence report lists them, so the person sees where to look when every hooked call
// replayed faithfully and the program still went another way): worker threads (the addon
// does nothing in them) and child processes (they run for real); vm contexts get the hooks
// (lib/vm.js). Counting costs nothing on the program's hot paths: a
// diagnostics channel message per child or worker, a counter call per new context.

const dc = require('diagnostics_channel');

function install(native) {
  const count = (what) => () => {
    try {
      native.ranLive(what);
    } catch (_) {
      // Only a report's detail is lost.
    }
  };
  const child = count('child process');
  dc.subscribe('child_process', child);
  // The channel does not see synchronous children (execSync, execFileSync, spawnSync: a
  // CLI that hands its work to a native binary, as TypeScript 7's tsc does): their common
  // binding does.
  try {
    const binding = process.binding('spawn_sync');
    const real = binding.spawn;
    if (typeof real === 'function') {
      binding.spawn = function spawn() {
        child();
        return Reflect.apply(real, this, arguments);
      };
    }
  } catch (_) {
    // Without the binding, synchronous children go uncounted.
  }
  dc.subscribe('worker_threads', count('worker thread'));
}

module.exports = { install };
