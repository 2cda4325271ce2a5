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

// The same for what `process` says about this moment of this process: programs print how
// long they ran and how much memory they used (a replay printed other numbers and diverged
// on them). The arguments (cpuUsage's previous value) are the call's input.
const PROCESS_NAMES = ['uptime', 'memoryUsage', 'cpuUsage', 'resourceUsage'];

// What V8 says about its heap: tools print it (jest --logHeapUsage, benchmarks, servers'
// health output), and it differs from run to run.
const V8_NAMES = ['getHeapStatistics', 'getHeapSpaceStatistics', 'getHeapCodeStatistics'];

function install(ev) {
  const replaying = ev.mode === 'replay';
  const restore = [];
  const hookOn = (obj, name, kindName, withInput) => {
    const fn = obj[name];
    if (typeof fn !== 'function') return null;
    const kind = ev.kind(kindName);
    const hook = {
      [name](...args) {
        if (!ev.on || ev.busy) return Reflect.apply(fn, this, args);
        const v = ev.live(() => Reflect.apply(fn, this, args));
        const input = withInput && args.length > 0 ? JSON.stringify(args) : null;
        if (!replaying) {
          ev.record(kind, input, v);
          return v;
        }
        const r = ev.replay(kind, input);
        return r === ev.LIVE ? v : r;
      },
    }[name];
    Object.defineProperty(hook, 'length', { value: fn.length, configurable: true });
    for (const key of Object.keys(fn)) hook[key] = fn[key];
    obj[name] = hook;
    restore.push(() => {
      if (obj[name] === hook) obj[name] = fn;
    });
    return hook;
  };
  for (const name of NAMES) hookOn(os, name, `node.os.${name}`, false);
  for (const name of PROCESS_NAMES) {
    const hook = hookOn(process, name, `node.process.${name}`, true);
    // process.memoryUsage.rss(): a function of its own.
    if (hook !== null && name === 'memoryUsage' && typeof hook.rss === 'function') {
      hookOn(hook, 'rss', 'node.process.memoryUsage.rss', false);
    }
  }
  const v8 = require('v8');
  for (const name of V8_NAMES) hookOn(v8, name, `node.v8.${name}`, false);
  // perf_hooks: marks and measures take their times from Node's own clock (not the hooked
  // performance.now), and the event loop's utilization is measured live; programs write
  // them into reports (a timing breakdown, a benchmark's JSON). A mark is made in replay at
  // its recorded startTime; a measure with its recorded start and duration; the utilization
  // is recorded per call.
  const perf = globalThis.performance;
  if (perf && typeof perf.mark === 'function' && typeof perf.measure === 'function') {
    hookOn(perf, 'eventLoopUtilization', 'node.performance.eventLoopUtilization', true);
    const kMark = ev.kind('node.performance.mark');
    const kMeasure = ev.kind('node.performance.measure');
    const realMark = perf.mark;
    const realMeasure = perf.measure;
    const timed = (k, name, run, again) => {
      if (!ev.on || ev.busy) return run();
      const input = String(name);
      if (!replaying) {
        const e = ev.live(run);
        if (e && typeof e.startTime === 'number') ev.record(k, input, { s: e.startTime, d: e.duration });
        return e;
      }
      const r = ev.replay(k, input);
      if (r === ev.LIVE || r === null || typeof r !== 'object') return ev.live(run);
      return ev.live(() => again(r));
    };
    const mark = {
      mark(name, options) {
        const self = this;
        const args = arguments;
        if (options !== null && typeof options === 'object' && options.startTime !== undefined) {
          return Reflect.apply(realMark, self, args);
        }
        const detail = options !== null && typeof options === 'object' ? options.detail : undefined;
        return timed(kMark, name, () => Reflect.apply(realMark, self, args),
          (r) => Reflect.apply(realMark, self, [name, { detail, startTime: r.s }]));
      },
    }.mark;
    const measure = {
      measure(name, startOrOptions, endMark) {
        const self = this;
        const args = arguments;
        const detail = startOrOptions !== null && typeof startOrOptions === 'object' ? startOrOptions.detail : undefined;
        return timed(kMeasure, name, () => Reflect.apply(realMeasure, self, args),
          (r) => Reflect.apply(realMeasure, self, [name, { detail, start: r.s, duration: r.d }]));
      },
    }.measure;
    // nodeTiming's getters (bootstrapComplete, loopStart, idleTime, ...): per read. Node makes
    // nodeTiming at its first read (1 ms): wrapped then, by a getter of our own.
    const wrapTiming = (timing) => {
      const kTiming = ev.kind('node.performance.nodeTiming');
      for (const n of Object.getOwnPropertyNames(timing)) {
        const desc = Object.getOwnPropertyDescriptor(timing, n);
        if (!desc || typeof desc.get !== 'function' || !desc.configurable) continue;
        const get = desc.get;
        Object.defineProperty(timing, n, {
          ...desc,
          get() {
            const v = Reflect.apply(get, this, []);
            if (!ev.on || ev.busy || typeof v !== 'number') return v;
            if (!replaying) {
              ev.record(kTiming, n, v);
              return v;
            }
            const r = ev.replay(kTiming, n);
            return r === ev.LIVE ? v : r;
          },
        });
        restore.push(() => Object.defineProperty(timing, n, desc));
      }
      return timing;
    };
    if (!Object.prototype.hasOwnProperty.call(perf, 'nodeTiming')) {
      let timing = null;
      Object.defineProperty(perf, 'nodeTiming', {
        configurable: true,
        enumerable: false,
        get() {
          if (timing === null) {
            const proto = Object.getPrototypeOf(perf);
            const t = Reflect.get(proto, 'nodeTiming', perf);
            timing = t !== null && typeof t === 'object' ? wrapTiming(t) : t;
          }
          return timing;
        },
      });
      restore.push(() => delete perf.nodeTiming);
    }
    for (const [n, hook, realFn] of [['mark', mark, realMark], ['measure', measure, realMeasure]]) {
      Object.defineProperty(hook, 'length', { value: realFn.length, configurable: true });
      perf[n] = hook;
      restore.push(() => {
        if (perf[n] === hook) delete perf[n];
      });
    }
  }
  // process.ppid, a plain value Node sets at start: read once (an event at the program's first
  // read of it), then kept. A program that writes its name into its output (a pid file, a
  // report) wrote the live parent's. Replay maps a signal sent to the recorded parent's pid
  // to the live parent (process.kill, as for children's pids; foreground-child's watchdog
  // checks its parent so).
  {
    const desc = Object.getOwnPropertyDescriptor(process, 'ppid');
    if (desc && desc.configurable && 'value' in desc) {
      const kind = ev.kind('node.process.ppid');
      let value = desc.value;
      let read = false;
      Object.defineProperty(process, 'ppid', {
        configurable: true,
        enumerable: desc.enumerable,
        get() {
          if (read || !ev.on || ev.busy) return value;
          read = true;
          if (!replaying) {
            ev.record(kind, null, value);
            return value;
          }
          const r = ev.replay(kind, null);
          if (r !== ev.LIVE && typeof r === 'number') {
            if (ev.livePids && r !== value) ev.livePids.set(r, value);
            value = r;
          }
          return value;
        },
        set(v) {
          read = true;
          value = v;
        },
      });
      restore.push(() => Object.defineProperty(process, 'ppid', { ...desc, value }));
    }
  }
  ev.onDisable(() => {
    for (const r of restore) r();
  });
}

module.exports = { install, NAMES, PROCESS_NAMES, V8_NAMES };
