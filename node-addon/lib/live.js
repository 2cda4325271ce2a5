'use strict';
// Replay: what the addon knowingly lets run live, counted for the core's reports (a
// divergence report lists them, so the person sees where to look when every hooked call
// replayed faithfully and the program still went another way): child processes (they run
// for real). vm contexts and worker threads get the hooks (lib/vm.js, index.js
// installWorker). Counting costs nothing on the program's hot paths: a diagnostics channel
// message per child.

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
}

module.exports = { install };
