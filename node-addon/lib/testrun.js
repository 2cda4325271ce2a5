'use strict';
// `node --test`: the runner process (the parent that starts one child per test file) times
// each file and the whole run with a `process.hrtime.bigint` it took from `process` before
// any preload module ran (internal/test_runner/test.js: `const { bigint: hrtime } =
// process.hrtime`). The clock hooks never see those reads, so a replay printed another
// `# duration_ms` and diverged on every run. The durations leave the runner as messages
// pushed into its report stream (a Readable in object mode that the reporters read): each
// duration the runner computed is an event (`node.test.duration`) where it is pushed, and
// replay puts the recorded value back. The children's own tests are timed by hooked clocks
// (node:test loads after the preload there); the runner forwards their durations unchanged,
// and those are not events.

const { Readable } = require('stream');

// The runner process: `--test` among Node's options, and not itself a test file the runner
// started (those carry NODE_TEST_CONTEXT).
function isRunner() {
  return process.execArgv.includes('--test') && process.env.NODE_TEST_CONTEXT === undefined;
}

function install(ev) {
  if (!isRunner()) return;
  const replaying = ev.mode === 'replay';
  const kind = ev.kind('node.test.duration');
  // The input names what was timed (a test file, or the run), so a replay that reaches the
  // durations in another order says so instead of swapping them.
  const swap = (what, v) => {
    if (!ev.on || ev.busy || typeof v !== 'number') return v;
    if (!replaying) {
      ev.record(kind, what, v);
      return v;
    }
    const r = ev.replay(kind, what);
    return r === ev.LIVE ? v : r;
  };
  const realPush = Readable.prototype.push;
  const push = {
    push(chunk, encoding) {
      if (this.readableObjectMode && chunk !== null && typeof chunk === 'object') {
        try {
          durations(chunk, swap);
        } catch (e) {
          ev.fail('replaying the test runner durations', e);
        }
      }
      return Reflect.apply(realPush, this, arguments);
    },
  }.push;
  Readable.prototype.push = push;
  ev.onDisable(() => {
    if (Readable.prototype.push === push) Readable.prototype.push = realPush;
  });
}

// The runner's own timings among the report messages: the run's `duration_ms` diagnostic and
// each test file's result (a test named by its file). Results forwarded from a child name
// their test, not the file.
function durations(msg, swap) {
  const data = msg.data;
  if (data === null || typeof data !== 'object') return;
  if (msg.type === 'test:diagnostic' && typeof data.message === 'string') {
    const m = /^duration_ms (\S+)$/.exec(data.message);
    if (m !== null && data.nesting === 0) {
      const v = swap('run', Number(m[1]));
      data.message = `duration_ms ${v}`;
    }
    return;
  }
  if (
    (msg.type === 'test:complete' || msg.type === 'test:pass' || msg.type === 'test:fail') &&
    data.details !== null &&
    typeof data.details === 'object' &&
    typeof data.file === 'string' &&
    data.name === data.file
  ) {
    data.details.duration_ms = swap(data.file, data.details.duration_ms);
  }
}

module.exports = { install, isRunner };
