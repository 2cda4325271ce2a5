'use strict';
// SIGINT, SIGTERM and SIGHUP are inputs like any other: when one came is part of the
// recording. A server stopped with Ctrl-C or `kill` is the commonest way a recording of one
// ends; without its signal, a replay of it waited for ever.
//
// A program that listens for the signal (`process.on('SIGTERM', ...)`): Node's signal handle
// calls `process.emit(sig, sig, signum)`. Record: that emit is a completion
// (`signal SIGTERM#n`) among all others. Replay: at its turn the program's listeners get it
// the same way.
// A program that does not: the process dies of it. Record: the native handler
// (src/signals.rs) records the completion `signal SIGTERM (default action)` and closes the
// log before the signal ends the process. Replay: at its turn the session is closed and the
// process raises the signal on itself, so it ends with the same status (143, 130, 129).
//
// Both are watched (ev.watch), not awaited: a signal may never come, and replay must not
// wait for one. A real signal that reaches a replay (Ctrl-C on it) acts as without the addon.

const os = require('os');

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
// Signals a program listens for as messages (a server reloading on SIGUSR2, a terminal
// program redrawing on SIGWINCH): with a listener, each is a completion like the three
// above. Without one, their default actions are not recorded.
const HANDLED = [...SIGNALS, 'SIGUSR1', 'SIGUSR2', 'SIGWINCH', 'SIGCONT', 'SIGQUIT', 'SIGALRM', 'SIGPIPE', 'SIGTSTP'];
// The key the native handler records a default action under (src/signals.rs).
const DEFAULT_ACTION = (sig) => `signal ${sig} (default action)`;

// `end(status)`: closes the session as at exit with that status and restores every hook;
// returns the status the process must exit with instead (a divergence found while closing),
// or 0.
function install(ev, native, end) {
  const replaying = ev.mode === 'replay';
  const realEmit = process.emit;
  const counts = new Map(HANDLED.map((s) => [s, 0]));
  // Replay: real signals of each kind let through so far (see below).
  const real = new Map(HANDLED.map((s) => [s, 0]));
  let delivering = false;

  // What Node's signal handle makes: emit(sig, sig, signum). A program emitting the name
  // itself passes other arguments: not a signal.
  const fromHandle = (args) =>
    args.length === 3 && args[0] === args[1] && typeof args[2] === 'number' && counts.has(args[0]);

  const emit = function emit(...args) {
    if (!delivering && ev.on && replaying && fromHandle(args)) {
      // A real signal in replay: the first of each kind is a replay's own doing (a replayed
      // parent forwarding the one it got, as npx does, while this process gets its own
      // recorded one at its turn): not the program's. A second one (Ctrl-C again on a
      // replay that waits) reaches the program.
      const n = real.get(args[0]) + 1;
      real.set(args[0], n);
      if (n === 1) return false;
    }
    if (!delivering && ev.on && !replaying && fromHandle(args)) {
      const sig = args[0];
      const n = counts.get(sig) + 1;
      counts.set(sig, n);
      try {
        ev.done(`signal ${sig}#${n}`, { t: 's' });
      } catch (e) {
        ev.fail('recording a signal', e);
      }
    }
    return realEmit.apply(this, args);
  };
  process.emit = emit;

  // Record: when the program removes its last listener of a signal, libuv leaves the default
  // action: the native handler that completes the log comes back (src/signals.rs). (The
  // listener is there in replay too, where it does nothing: the program sees the same
  // listeners in both.)
  {
    process.on('removeListener', (name) => {
      if (!replaying && SIGNALS.includes(name) && process.listenerCount(name) === 0 && ev.on) {
        try {
          native.signalDefault(os.constants.signals[name]);
        } catch (e) {
          ev.fail('restoring a signal handler', e);
        }
      }
    });
  }

  if (replaying) {
    for (const sig of HANDLED) {
      const signum = os.constants.signals[sig];
      if (typeof signum !== 'number') continue;
      const watchHandled = () => {
        ev.watch(`signal ${sig}#${counts.get(sig) + 1}`, (v) => {
          if (v === ev.LIVE) return;
          counts.set(sig, counts.get(sig) + 1);
          watchHandled();
          delivering = true;
          try {
            realEmit.call(process, sig, sig, signum);
          } finally {
            delivering = false;
          }
        });
      };
      watchHandled();
      if (!SIGNALS.includes(sig)) continue;
      ev.watch(DEFAULT_ACTION(sig), (v) => {
        if (v === ev.LIVE) return;
        let status = 0;
        try {
          status = end(128 + signum);
        } catch (e) {
          process.stderr.write(`replay: internal error in replay-node (ending at ${sig}: ${e.message})\n`);
        }
        if (status) {
          process.exit(status);
          return;
        }
        // No listener of the program's: the default action, as recorded.
        process.removeAllListeners(sig);
        process.kill(process.pid, sig);
      });
    }
  }

  ev.onDisable(() => {
    if (process.emit === emit) process.emit = realEmit;
  });
}

module.exports = { install, DEFAULT_ACTION };
