'use strict';
// What the `os` module says about the machine: its name, CPUs, memory, load, uptime, network
// interfaces, the user and the kernel. A replay on another machine (the point of a recording:
// a bug from production, debugged on a laptop) got other answers, and programs act on them:
// jest and other tools size their worker pools by os.cpus() / os.availableParallelism(), logs
// and reports print the host name. Each call's value is an event of its own kind
// (`node.os.<name>`); replay returns the recorded value. Node's own argument checks still run
// (the real function is called in replay too, inside ev.live: its value is dropped), so a bad
// argument throws as it would.

const os = require('os');

// Calls whose value describes this machine or this moment. Not hooked: constants and what
// comes from the environment the launcher already replays (tmpdir, EOL, endianness).
const NAMES = [
  'hostname',
  'cpus',
  'availableParallelism',
  'uptime',
  'freemem',
  'totalmem',
  'loadavg',
  'networkInterfaces',
  'userInfo',
  'homedir',
  'release',
  'version',
  'machine',
];

function install(ev) {
  const replaying = ev.mode === 'replay';
  const real = {};
  for (const name of NAMES) {
    const fn = os[name];
    if (typeof fn !== 'function') continue;
    real[name] = fn;
    const kind = ev.kind(`node.os.${name}`);
    const hook = {
      [name](...args) {
        if (!ev.on || ev.busy) return Reflect.apply(fn, this, args);
        const v = ev.live(() => Reflect.apply(fn, this, args));
        if (!replaying) {
          ev.record(kind, null, v);
          return v;
        }
        const r = ev.replay(kind, null);
        return r === ev.LIVE ? v : r;
      },
    }[name];
    Object.defineProperty(hook, 'length', { value: fn.length, configurable: true });
    os[name] = hook;
  }
  ev.onDisable(() => {
    for (const [name, fn] of Object.entries(real)) os[name] = fn;
  });
}

module.exports = { install, NAMES };
