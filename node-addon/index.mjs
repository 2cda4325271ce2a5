// ES module entry of replay-node: `node --import replay-node app.mjs`. Importing the
// CommonJS index.js runs its install synchronously, so the hooks are in place before the
// program's module graph is loaded and evaluated (--import modules finish first).
import api from './index.js';

export const mode = api.mode;
export function flush() {
  api.flush();
}
