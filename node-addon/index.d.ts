// Types of the replay-node package. Loading it (node --require replay-node, or
// node --import replay-node for ES modules: the same exports) installs the hooks when
// REPLAY_MODE is record or replay; these exports are for programs that want to know the mode
// or make sure recorded events are on disk.

/** What the addon does in this process: recording, replaying, or nothing. */
export declare const mode: 'off' | 'record' | 'replay';

/**
 * Record mode: hands the events buffered on the JS side to the native recorder and waits
 * until everything recorded so far is written to the log. Elsewhere it does nothing.
 */
export declare function flush(): void;
