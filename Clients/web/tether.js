// tether.js: the Tether protocol client for browsers and Node (protocol 1, docs/PROTOCOL.md).
//
// One ES module with no dependencies and no build step. It mirrors rooms the way the Swift client
// does: a snapshot, then patches applied only when their `from` is the mirror's version; a gap
// rejoins with `since`; a patch that does not apply (never half-applied) rejoins for a snapshot;
// a dropped connection reconnects with capped, jittered backoff and resumes every room.
//
//   import { TetherClient } from "/tether.js";
//   const client = new TetherClient("ws://127.0.0.1:8080", { token });
//   const room = client.room("counter");
//   const stop = room.observe("/count", (value) => (label.textContent = value));
//   await room.send("increment", { by: 1 }, { predict: (state) => { state.count += 1; } });
//
// Actions (docs/CLIENTS.md, "Actions"): each `send` takes the client's next number (`seq`) and
// waits in a queue while the client is offline; once sent, the client follows it to its answer,
// sending it again under the same number after a drop, so `send` settles once with the server's
// outcome. `client.pendingActions` and the `pending` event show what is waiting.
//
// Presence (docs/PROTOCOL.md, "Presence"): who is in a room, a stream of its own beside the state.
//
//   const todo = client.room("todo", { presence: { name: "kim" } });   // listed, and sees who is here
//   const wall = client.room("todo", { watchPresence: true });          // sees who is here, never listed
//   todo.on("members", ({ members }) => show(Object.values(members).map(displayName)));
//   await todo.setPresence({ name: "kim", editing: "t3" });
//
// In Node 20 pass a WebSocket constructor (`{ WebSocket }`) or run with --experimental-websocket;
// browsers and Node 22+ have a global one.

export const PROTOCOL_VERSION = 1;
export const SUBPROTOCOL = "tether.v1";

// MARK: - JSON Pointer (RFC 6901)

/** An error in a JSON Patch or JSON Pointer; `index` is the failing operation's position. */
export class PatchError extends Error {
  constructor(message, index) {
    super(message);
    this.name = "PatchError";
    this.index = index;
  }
}

/** "/a/b~1c" → ["a", "b/c"]; "" is the whole document. Throws a PatchError when malformed. */
export function parsePointer(text) {
  if (typeof text !== "string") throw new PatchError(`a JSON Pointer is a string, got ${typeof text}`);
  if (text === "") return [];
  if (text[0] !== "/") throw new PatchError(`JSON Pointer "${text}" must be empty or start with /`);
  if (/~(?![01])/.test(text)) throw new PatchError(`JSON Pointer "${text}" has a ~ not followed by 0 or 1`);
  // ~1 before ~0, so "~01" becomes "~1" and not "/".
  return text.slice(1).split("/").map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** ["a", "b/c"] → "/a/b~1c". */
export function formatPointer(tokens) {
  return tokens.map((token) => "/" + token.replaceAll("~", "~0").replaceAll("/", "~1")).join("");
}

/** The array index a token names: "0", or digits without a leading zero. "-" is the caller's. */
function arrayIndex(token) {
  return /^(0|[1-9][0-9]{0,14})$/.test(token) ? Number(token) : undefined;
}

function isContainer(value) {
  return typeof value === "object" && value !== null;
}

/** The child `token` of a container, or undefined. Only own members count (not "toString"). */
function childOf(container, token) {
  if (Array.isArray(container)) {
    const index = arrayIndex(token);
    return index !== undefined && index < container.length ? container[index] : undefined;
  }
  if (isContainer(container) && Object.hasOwn(container, token)) return container[token];
  return undefined;
}

/** Sets an object member; "__proto__" becomes a plain member, as JSON.parse makes it. */
function setMember(object, key, value) {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

/** The value at `pointer` (a string or a token array) in `document`, or undefined. */
export function valueAt(document, pointer) {
  const tokens = typeof pointer === "string" ? parsePointer(pointer) : pointer;
  let current = document;
  for (const token of tokens) {
    current = childOf(current, token);
    if (current === undefined) return undefined;
  }
  return current;
}

/** JSON equality: numbers by value, objects regardless of member order. */
export function jsonEqual(a, b) {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b)) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (!Object.hasOwn(b, key) || !jsonEqual(a[key], b[key])) return false;
  return true;
}

/** True when one token path contains the other (a change at one may change the other). */
function overlaps(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

// MARK: - JSON Patch (RFC 6902)

/**
 * Applies `operations` to `document` and returns the result; `document` itself is never modified.
 * Atomic: if any operation fails, it throws a PatchError and nothing changed. Unchanged subtrees
 * are shared with the input, so a patch costs what it touches, not the document's size.
 */
export function applyPatch(document, operations) {
  if (!Array.isArray(operations)) throw new PatchError("a patch is an array of operations");
  const editor = new PatchEditor(document);
  operations.forEach((operation, index) => {
    try {
      editor.apply(operation);
    } catch (error) {
      if (error instanceof PatchError) error.index = index;
      throw error;
    }
  });
  return editor.root;
}

/**
 * Applies operations copy-on-write: a container on the way to a change is copied the first time
 * and edited in place after that (it is then reachable only from the new root), so the input
 * document, and every value a patch carried in, stay untouched.
 */
class PatchEditor {
  constructor(root) {
    this.root = root;
    this.copies = new Set();
  }

  apply(operation) {
    if (!isContainer(operation) || Array.isArray(operation)) throw new PatchError("an operation is an object");
    const { op } = operation;
    const pointer = (member) => {
      if (typeof operation[member] !== "string") throw new PatchError(`"${op}" needs a string "${member}"`);
      return parsePointer(operation[member]);
    };
    const value = () => {
      if (!Object.hasOwn(operation, "value")) throw new PatchError(`"${op}" needs a "value"`);
      return operation.value;
    };
    switch (op) {
      case "add": return this.add(pointer("path"), value());
      case "remove": return void this.remove(pointer("path"));
      case "replace": return this.replace(pointer("path"), value());
      case "move": return this.move(pointer("from"), pointer("path"));
      case "copy": return this.copy(pointer("from"), pointer("path"));
      case "test": return this.test(pointer("path"), value());
      default: throw new PatchError(`unknown op ${JSON.stringify(op)}`);
    }
  }

  add(path, value) {
    if (path.length === 0) { this.root = value; return; }
    const [parent, token] = this.parentOf(path);
    if (Array.isArray(parent)) {
      const index = token === "-" ? parent.length : arrayIndex(token);
      if (index === undefined || index > parent.length) throw new PatchError(`path "${formatPointer(path)}" has an invalid or out-of-range array index`);
      parent.splice(index, 0, value);
    } else {
      setMember(parent, token, value);
    }
  }

  remove(path) {
    if (path.length === 0) throw new PatchError("cannot remove the whole document");
    const [parent, token] = this.parentOf(path);
    if (Array.isArray(parent)) {
      const index = arrayIndex(token);
      if (index === undefined || index >= parent.length) throw new PatchError(`path "${formatPointer(path)}" has an invalid or out-of-range array index`);
      return parent.splice(index, 1)[0];
    }
    if (!Object.hasOwn(parent, token)) throw new PatchError(`path "${formatPointer(path)}" does not exist`);
    const removed = parent[token];
    delete parent[token];
    return removed;
  }

  replace(path, value) {
    if (path.length === 0) { this.root = value; return; }
    const [parent, token] = this.parentOf(path);
    if (Array.isArray(parent)) {
      const index = arrayIndex(token);
      if (index === undefined || index >= parent.length) throw new PatchError(`path "${formatPointer(path)}" has an invalid or out-of-range array index`);
      parent[index] = value;
    } else {
      if (!Object.hasOwn(parent, token)) throw new PatchError(`path "${formatPointer(path)}" does not exist`);
      setMember(parent, token, value);
    }
  }

  move(from, path) {
    if (valueAt(this.root, from) === undefined) throw new PatchError(`path "${formatPointer(from)}" does not exist`);
    if (from.length === path.length && overlaps(from, path)) return;  // onto itself
    if (from.length < path.length && overlaps(from, path)) {
      throw new PatchError(`cannot move "${formatPointer(from)}" into its own child "${formatPointer(path)}"`);
    }
    this.add(path, this.remove(from));
  }

  copy(from, path) {
    const value = valueAt(this.root, from);
    if (value === undefined) throw new PatchError(`path "${formatPointer(from)}" does not exist`);
    // A real copy: the two places must not share containers this editor may edit in place.
    this.add(path, JSON.parse(JSON.stringify(value)));
  }

  test(path, expected) {
    const actual = valueAt(this.root, path);
    if (actual === undefined) throw new PatchError(`path "${formatPointer(path)}" does not exist`);
    if (!jsonEqual(actual, expected)) throw new PatchError(`test failed at "${formatPointer(path)}"`);
  }

  /** A container this editor owns: the original is copied once, then edited in place. */
  writable(container) {
    if (this.copies.has(container)) return container;
    const copy = Array.isArray(container) ? container.slice() : { ...container };
    this.copies.add(copy);
    return copy;
  }

  /** The writable container holding `path`'s last token, copying every container on the way. */
  parentOf(path) {
    if (!isContainer(this.root)) throw new PatchError(`path "${formatPointer(path)}" goes through a value that is not an object or array`);
    this.root = this.writable(this.root);
    let parent = this.root;
    for (let depth = 0; depth < path.length - 1; depth++) {
      const token = path[depth];
      const child = childOf(parent, token);
      if (!isContainer(child)) throw new PatchError(`path "${formatPointer(path)}" does not exist`);
      const copy = this.writable(child);
      if (Array.isArray(parent)) parent[arrayIndex(token)] = copy;
      else setMember(parent, token, copy);
      parent = copy;
    }
    return [parent, path[path.length - 1]];
  }
}

// MARK: - Events and errors

/** An error from the server (`code` as in PROTOCOL.md) or from the client: `not_sent`,
 * `queue_full`, `closed` (actions); `not_connected`, `timeout` (`describe`, `setPresence`); `left`.
 *
 * A server error, and every error that fails a request (`send`, `describe`, `setPresence`), has
 * `applied`: `false` when the request certainly changed nothing (the server said so, or the
 * client never sent it), `"unknown"` when it may have been applied (the server says so or does
 * not say, e.g. `stale_action`; the client was closed after sending it; a request other than an
 * action got no answer in time). An action a kind's typed contract refused also has `reason`,
 * the refusal's name ("overflow"). */
export class TetherError extends Error {
  constructor(code, message, { id, room, applied, reason } = {}) {
    super(message);
    this.name = "TetherError";
    this.code = code;
    if (id !== undefined) this.id = id;
    if (room !== undefined) this.room = room;
    if (applied !== undefined) this.applied = applied;
    if (reason !== undefined) this.reason = reason;
  }
}

/** `on(event, fn)` returns a function that removes `fn`. A throwing listener is reported, not
 * propagated: one bad listener must not break the mirror. */
class Emitter {
  #listeners = new Map();

  on(event, listener) {
    if (!this.#listeners.has(event)) this.#listeners.set(event, new Set());
    this.#listeners.get(event).add(listener);
    return () => this.off(event, listener);
  }

  off(event, listener) {
    this.#listeners.get(event)?.delete(listener);
  }

  emit(event, ...args) {
    const listeners = this.#listeners.get(event);
    if (!listeners || listeners.size === 0) return false;
    for (const listener of [...listeners]) callSafely(listener, args);
    return true;
  }
}

/** A copy that shares nothing with `value` (JSON, as the server sends it). */
function deepCopy(value) {
  return typeof structuredClone === "function" ? structuredClone(value) : JSON.parse(JSON.stringify(value));
}

function callSafely(fn, args) {
  try {
    fn(...args);
  } catch (error) {
    console.error("tether.js: a listener threw", error);
  }
}

/** A promise whose rejection is not reported as unhandled when nobody awaits it. */
function quietly(promise) {
  promise.catch(() => {});
  return promise;
}

/**
 * The wait before reconnect attempt `attempt` (1-based), in milliseconds: `initialDelay ×
 * multiplier^(attempt-1)`, capped at `maxDelay`, then scaled by a random factor in 0.5–1 so
 * clients dropped together don't come back in step.
 */
export function backoffDelay(attempt, { initialDelay = 200, maxDelay = 5000, multiplier = 2 } = {}, random = Math.random) {
  const base = Math.min(initialDelay * multiplier ** Math.max(0, attempt - 1), maxDelay);
  return Math.round(base * (0.5 + 0.5 * random()));
}

// MARK: - Rooms

/** A presence member's name for people: `data.name` when it sent one, else its `user`. */
export function displayName(member) {
  return typeof member?.data?.name === "string" ? member.data.name : member?.user;
}

/**
 * The mirror of one room: `serverState`, `epoch` and `version`, built only from the server's
 * snapshot and patches, and `state`, what it shows: `serverState` with the prediction of every
 * action of this room still waiting for its answer applied on top, in the order of the actions
 * (the same object when there is none). Both are read-only: each change replaces them, never
 * edits them (so a value you hold keeps its contents). A patch that arrives while predictions
 * wait changes `serverState` and `version` at once, but shows (observers, the `patch` event)
 * 20 ms later, or at once when an answer drops a prediction first: the server writes an action's
 * patch and its ack together, in two frames, and between them the action would show twice.
 *
 * Opened with `presence` (an object, `{}` for nothing to say) the client is listed in the room's
 * presence; with `watchPresence: true` it only watches (a spectator: a dashboard, a wall screen).
 * Either way `members` mirrors the presence document, member id → {user, data}, read-only and
 * replaced on each change like `state`; it is null while the client holds no presence snapshot
 * (before the first, while reconnecting, in rooms that keep no presence, or opened with neither).
 * Presence has its own versions (`presenceVersion`): a `presence_patch` applies only to the
 * version it starts from; a gap, or one that does not apply, rejoins for a fresh snapshot. The
 * presence data goes with every join, so a reconnect lists the client again as it was.
 *
 * Events, of the server's stream: `snapshot` ({epoch, version, state, resynced}; `state` is the
 * shown one), `patch` ({epoch, from, version, ops, paths}), `members` ({members, version,
 * joined, left, changed}: the member ids each change added, removed or changed; members null
 * when the mirror forgot them), `joined` (the server's join ack; the presence snapshot, if any,
 * came before it), `error` (a server error about this room that answers no action, e.g. a
 * refused join, or `room_deleted`: an administrator deleted the room, the mirror keeps its last
 * state and stops, and `client.room(name)` joins the new, empty room).
 */
/** How long a patch that arrives while predictions wait waits for an answer before it shows (ms). */
const REBASE_DELAY = 20;

export class RemoteRoom extends Emitter {
  #client;
  #watchers = [];
  #readyWaiters = [];
  /** A join is on its way: patches that don't continue the mirror are dropped until it lands. */
  #joining = false;
  #joinID = null;
  #left = false;
  #presence;
  #serverState = undefined;
  #shown = undefined;
  /** {predict, name} of this room's unanswered actions, in the order of their numbers. */
  #predictions = [];
  /** The shown state is a predicted copy, not the server's. */
  #showsPredictions = false;
  /**
   * A patch arrived while predictions wait: the shown state is recomputed `REBASE_DELAY` ms later,
   * or at once when an answer comes first. The ack of an action comes right behind its patch (the
   * server writes them together, in two frames), so its prediction goes before the patch shows,
   * and the action is not shown twice. The timer, or null.
   */
  #rebaseTimer = null;
  /** The `patch` events of the patches received since the last rebase, emitted with it. */
  #patchesToTell = [];

  constructor(client, name, { presence, watchPresence = false } = {}) {
    super();
    this.#client = client;
    this.name = name;
    this.epoch = null;
    this.version = null;
    /** The paths (pointers) the last patch touched; empty after a snapshot. */
    this.lastChangedPaths = [];
    /** The last server error about this room outside an action. */
    this.lastError = null;
    this.#presence = presence;
    /** Watching the room's presence without being listed (ignored with `presence`). */
    this.watchPresence = watchPresence === true;
    /** Member id → {user, data}, or null (see above). */
    this.members = null;
    this.presenceVersion = null;
  }

  /** What the room shows: the server's state with the pending predictions applied. */
  get state() {
    return this.#shown;
  }

  /** The room's state as the server's snapshot and patches made it. */
  get serverState() {
    return this.#serverState;
  }

  /** The presence data this client joins with (undefined: not listed). */
  get presence() {
    return this.#presence;
  }

  /** True once the mirror has a state and continues the server's stream. */
  get synced() {
    return this.version !== null && !this.#joining;
  }

  /**
   * Calls `listener(value)` now with the value at `path` (undefined while absent) and again each
   * time an operation touches that path, something below or above it, and the value actually
   * changed. Returns a function that stops it.
   */
  observe(path, listener) {
    const watcher = { tokens: parsePointer(path), listener, last: undefined, active: true };
    watcher.last = valueAt(this.#shown, watcher.tokens);
    this.#watchers.push(watcher);
    callSafely(listener, [watcher.last]);
    return () => {
      watcher.active = false;
      this.#watchers = this.#watchers.filter((w) => w !== watcher);
    };
  }

  /** Sends an action to this room: resolves with the ack, rejects with a TetherError (see
   * `TetherClient.send`). `options.predict(state)` shows its effect at once. */
  send(action, args, options) {
    return this.#client.send(this, action, args, options);
  }

  /**
   * Replaces this client's presence data in the room: resolves with the server's ack, or with
   * null when the connection is down or drops first (the rejoin carries the data last set);
   * rejects with the server's error (`invalid_args`, `too_large`, `rate_limited`) or `timeout`.
   * The new data goes with every later join too. Only for a room opened with `presence`.
   */
  setPresence(data, { timeout = this.#client.actionTimeout } = {}) {
    if (this.#presence === undefined) {
      return Promise.reject(new TetherError("invalid_args", `room ${this.name} was not opened with presence: use client.room(name, { presence })`, { room: this.name, applied: false }));
    }
    this.#presence = data;
    return this.#client._updatePresence(this, data, timeout);
  }

  /** Resolves (with the room) once the mirror is synced; rejects if the join is refused. */
  ready() {
    if (this.synced) return Promise.resolve(this);
    if (this.#left) return Promise.reject(new TetherError("left", `room ${this.name} was left`, { room: this.name }));
    if (this.#client.state === "closed") return Promise.reject(new TetherError("closed", "the client was closed"));
    return new Promise((resolve, reject) => this.#readyWaiters.push({ resolve, reject }));
  }

  /** Unsubscribes; the mirror stops changing. Resolves with the server's ack (null when not
   * connected); nothing is reported if you don't await it. */
  leave() {
    if (this.#left) return Promise.resolve(null);
    this.#left = true;
    this.#joining = false;
    this.#cancelRebase();
    this.#settleReady(new TetherError("left", `room ${this.name} was left`, { room: this.name }));
    this.#forgetPresence();
    return this.#client._leave(this);
  }

  // Called by the client (not part of the API).

  _sendJoin(resume) {
    if (this.#left) return;
    this.#joining = true;
    const since = resume && this.epoch !== null ? { epoch: this.epoch, version: this.version } : undefined;
    this.#joinID = this.#client._join(this, since, this.#joinID);
  }

  _joinAnswered(error, ack) {
    this.#joinID = null;
    if (error) {
      this.#joining = false;
      this._receiveError(error);
    } else {
      this.emit("joined", ack);
    }
  }

  _receiveError(error) {
    this.lastError = error;
    if (!this.synced) this.#settleReady(error);
    this.emit("error", error);
  }

  _deleted(error) {
    this.#left = true;
    this.#joining = false;
    this.version = null;
    this.#forgetPresence();
    this._receiveError(error);
  }

  _receiveSnapshot({ epoch, version, state }) {
    const resynced = this.version !== null && (epoch !== this.epoch || this.#joining || version !== this.version);
    this.epoch = epoch;
    this.version = version;
    this.#serverState = state;
    this.#joining = false;
    this.lastChangedPaths = [];
    this.#cancelRebase();  // the snapshot tells it all
    this.#show(null);
    this.emit("snapshot", { epoch, version, state: this.#shown, resynced });
    this.#settleReady(null);
    return resynced;
  }

  _receivePatch({ epoch, from, version, ops }) {
    if (epoch !== this.epoch || from !== this.version) {
      // A gap, or a patch of another epoch: resume from what we have.
      if (!this.#joining) this._sendJoin(true);
      return;
    }
    let state;
    try {
      state = applyPatch(this.#serverState, ops);
    } catch (error) {
      this.#client._warn(`room ${this.name}: patch ${from}->${version} does not apply (${error.message}); resyncing from a snapshot`);
      this._sendJoin(false);
      return;
    }
    this.#serverState = state;
    this.version = version;
    this.#joining = false;
    const changed = [];
    for (const op of ops) {
      if (op.op === "move") changed.push(parsePointer(op.from));
      changed.push(parsePointer(op.path));
    }
    this.lastChangedPaths = changed.map(formatPointer);
    const event = { epoch, from, version, ops, paths: this.lastChangedPaths };
    if (this.#predictions.length > 0 || this.#rebaseTimer !== null) {
      // Shown (and told) with the rebase: 20 ms on, or at once when an answer drops a prediction.
      this.#patchesToTell.push(event);
      this.#rebaseTimer ??= setTimeout(() => this.#rebase(), REBASE_DELAY);
    } else {
      this.#show(changed);
      this.emit("patch", event);
    }
    this.#settleReady(null);
  }

  _receivePresence({ version, members }) {
    this.presenceVersion = version;
    this.#setMembers(members);
  }

  _receivePresencePatch({ from, version, ops }) {
    // No snapshot yet, or a gap already found: the rejoin's snapshot restores the mirror.
    if (this.presenceVersion === null) return;
    if (from !== this.presenceVersion) {
      this.presenceVersion = null;
      if (!this.#joining) this._sendJoin(true);
      return;
    }
    let members;
    try {
      members = applyPatch(this.members, ops);
    } catch (error) {
      this.#client._warn(`room ${this.name}: presence patch ${from}->${version} does not apply (${error.message}); rejoining`);
      this.presenceVersion = null;
      if (!this.#joining) this._sendJoin(true);
      return;
    }
    this.presenceVersion = version;
    this.#setMembers(members);
  }

  _disconnected() {
    this.#joinID = null;
    // Who is here is unknown until the rejoin's presence snapshot: show nobody, not a stale list.
    this.#forgetPresence();
  }

  #forgetPresence() {
    this.presenceVersion = null;
    if (this.members !== null) this.#setMembers(null);
  }

  /** Replaces `members` and tells the `members` listeners which ids came, went or changed. */
  #setMembers(members) {
    const before = this.members ?? {};
    const after = members ?? {};
    const joined = Object.keys(after).filter((id) => !Object.hasOwn(before, id));
    const left = Object.keys(before).filter((id) => !Object.hasOwn(after, id));
    const changed = Object.keys(after).filter((id) => Object.hasOwn(before, id) && !jsonEqual(before[id], after[id]));
    this.members = members;
    this.emit("members", { members, version: this.presenceVersion, joined, left, changed });
  }

  _closed(error) {
    this.#cancelRebase();
    this.#settleReady(error);
  }

  /** Shows `prediction` ({predict, name}) on top of the others, from now until it is dropped. */
  _addPrediction(prediction) {
    this.#predictions.push(prediction);
    this.#rebase();
  }

  /** Drops `prediction`: its action was answered, or will never be sent. */
  _dropPrediction(prediction) {
    const index = this.#predictions.indexOf(prediction);
    if (index < 0) return;
    this.#predictions.splice(index, 1);
    this.#rebase();
  }

  /** Shows the server's state with the predictions over it, then emits the `patch` events that
   * waited for it, in order. */
  #rebase() {
    const patches = this.#patchesToTell;
    this.#cancelRebase();
    this.#show(null);
    for (const event of patches) this.emit("patch", event);
  }

  /** Forgets a waiting rebase and the patches it was to tell. */
  #cancelRebase() {
    clearTimeout(this.#rebaseTimer);
    this.#rebaseTimer = null;
    this.#patchesToTell = [];
  }

  /**
   * Recomputes the shown state and calls the observers whose value changed. `changed` lists the
   * paths a patch touched (token arrays); null means any path may have changed.
   */
  #show(changed) {
    const predictedBefore = this.#showsPredictions;
    this.#shown = this.#predicted();
    this.#showsPredictions = this.#shown !== this.#serverState;
    // A prediction shown, dropped or run again may change any path, not only the patch's.
    const paths = predictedBefore || this.#showsPredictions ? null : changed;
    for (const watcher of [...this.#watchers]) {
      if (paths === null || paths.some((tokens) => overlaps(tokens, watcher.tokens))) this.#update(watcher);
    }
  }

  /** The server's state with every prediction run on it in order; one that throws is dropped. */
  #predicted() {
    if (this.#serverState === undefined || this.#predictions.length === 0) return this.#serverState;
    for (;;) {
      // A fresh copy each time: the shown state must never alias the server's, and a prediction
      // that threw may have half-changed the one it was given.
      let state = deepCopy(this.#serverState);
      const failed = this.#predictions.find((prediction) => {
        try {
          const result = prediction.predict(state);
          if (result !== undefined) state = result;
          return false;
        } catch (error) {
          this.#client._warn(`room ${this.name}: the prediction of ${prediction.name} threw (${error?.message ?? error}); dropped, the action is still sent`);
          return true;
        }
      });
      if (!failed) return state;
      this.#predictions.splice(this.#predictions.indexOf(failed), 1);
      if (this.#predictions.length === 0) return this.#serverState;
    }
  }

  #update(watcher) {
    if (!watcher.active) return;
    const value = valueAt(this.#shown, watcher.tokens);
    if (jsonEqual(value, watcher.last)) return;
    watcher.last = value;
    callSafely(watcher.listener, [value]);
  }

  #settleReady(error) {
    if (!error && !this.synced) return;
    const waiters = this.#readyWaiters;
    this.#readyWaiters = [];
    for (const waiter of waiters) error ? waiter.reject(error) : waiter.resolve(this);
  }
}

// MARK: - The client

/** 128 random bits, base64url: a `hello`'s `client` (or `user`). */
function randomId() {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The browser's stable anonymous id (created once, kept in localStorage); null without storage. */
function storedUser() {
  try {
    const storage = globalThis.localStorage;
    if (!storage) return null;
    let user = storage.getItem("tether.user");
    if (!user || !/^[A-Za-z0-9_-]{16,64}$/.test(user)) {
      user = randomId();
      storage.setItem("tether.user", user);
    }
    return user;
  } catch {
    return null;  // storage disabled (private mode, sandboxed frame)
  }
}

/** Actions sent and unanswered span fewer than this many numbers: the server remembers each
 * client's highest 64 numbers' outcomes per room, so every resend is still remembered (docs/PROTOCOL.md). */
const ACTION_WINDOW = 64;
/** The pause before sending again an action the server lost track of: doubling up to the cap. */
const RETRY_FIRST_DELAY = 250;
const RETRY_MAX_DELAY = 5000;

/**
 * A connection to a Tether server (or several: `urls` are tried round robin on each reconnect)
 * that mirrors rooms. It connects at once, and after a drop reconnects with backoff and resumes
 * every room with `since`, so a short outage costs patches, not snapshots.
 *
 * Options: `token` (sent with every join), `WebSocket` (a constructor; default the global one),
 * `actionTimeout` (ms, default 10000: how long an action may wait to be sent; also the timeout of
 * `describe` and `setPresence`), `maxQueuedActions` (default 1000), `reconnect` ({enabled,
 * initialDelay, maxDelay, multiplier}; default true, 200, 5000, 2), `clientId` and `user` (what
 * the client's `hello` says: see below).
 *
 * Who it is: on every connection the client says `hello` with `clientId` (default: 128 random
 * bits, kept for the client's life: a page until it closes) and `user` (default: in a browser,
 * an id kept in `localStorage` under `tether.user`, so the same browser is the same person
 * across visits; none in Node). Without tokens the server knows the client as `user`, else as
 * `clientId`: a claim, not authentication. The server runs each numbered action of a `clientId`
 * once.
 *
 * `state` is `connecting`, `live`, `reconnecting` or `closed`; `stateInfo` says more (attempt,
 * reason, delay). Events: `state` (state, info), `hello`, `message` (every decoded message),
 * `pending` (pendingActions, after each change), `resync` (a room that lost continuity got a
 * fresh snapshot), `error` (server errors that answer no request), `warning` (text: a frame that
 * did not decode, a patch that did not apply, a prediction that threw).
 */
export class TetherClient extends Emitter {
  #WebSocket;
  #socket = null;
  #urlIndex = 0;
  #attempt = 0;
  #reconnectTimer = null;
  #closed = false;
  #rooms = new Map();
  /** Request id → {action} for an action's send, or {resolve, reject, timer, onAnswer, onLost}. */
  #pending = new Map();
  #nextID = 1;
  #connectedWaiters = [];
  /** The unsettled actions, queued and sent, in the order of their numbers. */
  #actions = [];
  #nextSeq = 1;
  /** pendingActions changed since the last `pending` event. */
  #pendingChanged = false;
  /** Between our hello and the end of the rejoins: new actions wait, so resends go first. */
  #resuming = false;

  constructor(urls, options = {}) {
    super();
    this.urls = Array.isArray(urls) ? [...urls] : [urls];
    if (this.urls.length === 0) throw new TypeError("TetherClient needs at least one URL");
    for (const url of this.urls) {
      const protocol = new URL(url).protocol;  // throws on a malformed URL
      if (protocol !== "ws:" && protocol !== "wss:") throw new TypeError(`not a ws:// or wss:// URL: ${url}`);
    }
    this.#WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this.#WebSocket !== "function") {
      throw new TypeError("no WebSocket: pass { WebSocket } in the options (Node 20: or run with --experimental-websocket)");
    }
    this.token = options.token;
    this.clientId = options.clientId ?? randomId();
    this.user = options.user ?? storedUser();
    this.actionTimeout = options.actionTimeout ?? 10_000;
    this.maxQueuedActions = options.maxQueuedActions ?? 1000;
    this.reconnect = { enabled: true, initialDelay: 200, maxDelay: 5000, multiplier: 2, ...options.reconnect };
    this.state = "connecting";
    this.stateInfo = {};
    /** The session id from the server's hello. */
    this.session = null;
    /** The URL of the current (or last tried) connection. */
    this.url = null;
    /** From the first send of the last acknowledged action to its ack, in ms. */
    this.lastActionLatency = null;
    this.#open();
  }

  /**
   * The mirror of `name` (`KIND` or `KIND:INSTANCE`), joined now or at the next connection.
   * Options, for a room this client does not mirror yet: `presence` (an object: be listed in the
   * room's presence with this data) or `watchPresence: true` (see who is here without being
   * listed); without either, `members` stays null.
   */
  room(name, options) {
    let room = this.#rooms.get(name);
    if (room) return room;
    room = new RemoteRoom(this, name, options);
    this.#rooms.set(name, room);
    if (this.state === "live") room._sendJoin(true);
    return room;
  }

  /** The rooms this client mirrors. */
  get rooms() {
    return [...this.#rooms.values()];
  }

  /**
   * The actions not settled yet, in order: `{room, name, args, seq, sent}`, `sent` once it left at
   * least once (then it is followed to its answer), else it waits in the queue. A fresh array.
   */
  get pendingActions() {
    return this.#actions.map(({ room, name, args, seq, sent }) => ({ room, name, args, seq, sent }));
  }

  /** Resolves once the client is live (now if it is); rejects if it is closed first. */
  connected() {
    if (this.state === "live") return Promise.resolve(this);
    if (this.#closed) return Promise.reject(new TetherError("closed", "the client was closed"));
    return new Promise((resolve, reject) => this.#connectedWaiters.push({ resolve, reject }));
  }

  /**
   * Sends `action` to `room` (a name, or a room of this client) under the client's next number.
   * Resolves with the ack ({type, id, room, version}) once it was applied, once; rejects with the
   * server's error that settles it ({code, message, applied}), or the client's: `not_sent` (still
   * queued after `timeout` ms, default `actionTimeout`), `queue_full` (`maxQueuedActions` waiting
   * already), `closed` (`close()`: `applied: false` if it was never sent, else "unknown").
   *
   * It never fails for want of a connection: it waits in the queue, in order, and leaves when
   * the client is live. Once sent it is followed to its answer with no timeout: sent again under
   * the same number after a drop, or after a pause when the server lost track of it.
   *
   * `predict(state)` shows the action's effect at once: it runs on a copy of the room's shown
   * state, which it may change or replace by returning one, and again on each change of the
   * server's state until the action is answered (docs/CLIENTS.md, "Prediction").
   */
  send(room, action, args, { predict, timeout = this.actionTimeout } = {}) {
    const mirror = room instanceof RemoteRoom ? room : this.#rooms.get(room);
    const name = room instanceof RemoteRoom ? room.name : room;
    if (this.#closed) return Promise.reject(new TetherError("closed", "the client was closed", { room: name, applied: false }));
    if (this.#actions.length >= this.maxQueuedActions) {
      return Promise.reject(new TetherError("queue_full", `${this.#actions.length} actions are waiting already (maxQueuedActions)`, { room: name, applied: false }));
    }
    const entry = {
      seq: this.#nextSeq++, room: name, name: action, args, sent: false,
      /** An earlier send may have been applied: it went on a connection that dropped, or the
       * server answered "unknown". Then `unavailable`/`rate_limited` do not settle it. */
      maybeApplied: false,
      requestID: null, queueTimer: null, retryTimer: null, retryDelay: 0, firstSentAt: null,
      mirror: null, prediction: null,
    };
    const promise = new Promise((resolve, reject) => { entry.resolve = resolve; entry.reject = reject; });
    this.#actions.push(entry);
    this.#pendingChanged = true;
    if (typeof predict === "function" && mirror) {
      entry.mirror = mirror;
      entry.prediction = { predict, name: action };
      mirror._addPrediction(entry.prediction);
    }
    if (timeout > 0 && Number.isFinite(timeout)) {
      entry.queueTimer = setTimeout(() => {
        entry.queueTimer = null;
        if (entry.sent) return;
        const why = this.state === "live" ? "it waited behind earlier actions" : "the client was not connected";
        this.#settle(entry, new TetherError("not_sent", `not sent in ${timeout} ms (${why})`, { room: name, applied: false }));
      }, timeout);
    }
    this.#pump();
    this.#flushPending();
    return promise;
  }

  /** The server's room kinds with their scope and actions (or just `kind`'s). Rejects with
   * `not_connected` when the client is not live, or its connection drops before the answer. */
  describe(kind, { timeout = this.actionTimeout } = {}) {
    const message = { type: "describe" };
    if (kind !== undefined) message.kind = kind;
    if (!this.#closed && this.state !== "live") {
      return Promise.reject(new TetherError("not_connected", "not connected", { applied: false }));
    }
    return this.#request(message, timeout, (entry, reason) => entry.reject(new TetherError("not_connected", reason, { applied: false })))
      .then((description) => description.kinds);
  }

  /** Uses `token` from now on, and rejoins every room with it (resuming with `since`). */
  setToken(token) {
    this.token = token;
    if (this.state === "live") for (const room of this.#rooms.values()) room._sendJoin(true);
  }

  /** Closes the connection for good. Actions never sent fail with `not_sent`, those sent and
   * unanswered with `closed` (`applied: "unknown"`); other requests with `closed`. */
  close() {
    if (this.#closed) return;
    clearTimeout(this.#reconnectTimer);
    const socket = this.#socket;
    this.#socket = null;
    try { socket?.close(1000, "client closing"); } catch { /* already closing */ }
    this.#shutDown("the client was closed", { reason: "closed by the client" });
  }

  // MARK: Actions

  /**
   * Sends what may go now, in the order of the numbers: actions to send again (their answer was
   * lost), then queued ones while their number is less than 64 above the oldest unanswered one;
   * not one pausing before it goes again. A later number may run before an earlier one: the room
   * runs a number it has no outcome for unless it let go of that number, and with at most 64 in
   * flight it has not (docs/PROTOCOL.md, "Older than that").
   */
  #pump() {
    if (this.state !== "live" || this.#closed || this.#socket === null || this.#resuming) return;
    const limit = (this.#actions[0]?.seq ?? 0) + ACTION_WINDOW;
    for (const entry of this.#actions) {
      if (entry.requestID === null && entry.retryTimer === null) {
        if (!entry.sent && entry.seq >= limit) return;
        this.#transmit(entry);
      }
    }
  }

  #transmit(entry) {
    const id = this.#nextID++;
    if (!entry.sent) {
      entry.sent = true;
      entry.firstSentAt = Date.now();
      clearTimeout(entry.queueTimer);  // the timeout bounds the wait to be sent, nothing after
      entry.queueTimer = null;
      this.#pendingChanged = true;
    }
    entry.requestID = id;
    this.#pending.set(id, { action: entry });
    const message = { type: "action", room: entry.room, name: entry.name };
    if (entry.args !== undefined) message.args = entry.args;
    message.id = id;
    message.seq = entry.seq;
    this.#send(message);
  }

  #actionAnswered(entry, error, ack) {
    entry.requestID = null;
    if (error && error.code !== "stale_action"
      && (error.applied === "unknown" || (entry.maybeApplied && (error.code === "unavailable" || error.code === "rate_limited")))) {
      // Not settled: this send may or may not have run (or ran nothing while an earlier one may
      // have). The server runs the number once, so it is sent again after a pause.
      if (error.applied === "unknown") entry.maybeApplied = true;
      entry.retryDelay = entry.retryDelay === 0 ? RETRY_FIRST_DELAY : Math.min(entry.retryDelay * 2, RETRY_MAX_DELAY);
      entry.retryTimer = setTimeout(() => {
        entry.retryTimer = null;
        this.#pump();
      }, entry.retryDelay);
      return;
    }
    if (!error) this.lastActionLatency = Date.now() - entry.firstSentAt;
    this.#settle(entry, error, ack);
  }

  /** Ends an action with its outcome: out of the queue, its prediction dropped, then the promise. */
  #settle(entry, error, ack) {
    const index = this.#actions.indexOf(entry);
    if (index < 0) return;
    this.#actions.splice(index, 1);
    clearTimeout(entry.queueTimer);
    clearTimeout(entry.retryTimer);
    if (entry.requestID !== null) this.#pending.delete(entry.requestID);
    // After an ack the server's state has the action (its patch came first); after an error it
    // never will: either way the mirror shows the server's value from now on.
    if (entry.prediction) entry.mirror._dropPrediction(entry.prediction);
    this.#pendingChanged = true;
    if (error) entry.reject(error);
    else entry.resolve(ack);
    this.#pump();  // the window may have moved
    this.#flushPending();
  }

  #flushPending() {
    if (!this.#pendingChanged) return;
    this.#pendingChanged = false;
    this.emit("pending", this.pendingActions);
  }

  // MARK: Requests

  /** A request with an id and a timeout; `onLost(entry, reason)` settles it when the connection
   * drops first. */
  #request(message, timeout, onLost) {
    // Not sent, so certainly not applied.
    if (this.#closed) return Promise.reject(new TetherError("closed", "the client was closed", { applied: false }));
    const id = this.#nextID++;
    return new Promise((resolve, reject) => {
      const timer = timeout > 0 && Number.isFinite(timeout)
        ? setTimeout(() => {
          if (this.#pending.delete(id)) reject(new TetherError("timeout", `no answer from the server in ${timeout} ms`, { id, applied: "unknown" }));
        }, timeout)
        : null;
      this.#pending.set(id, { resolve, reject, timer, onLost });
      this.#send({ ...message, id });
    });
  }

  /** Sends a join for `room` and returns its id; the answer of an earlier join is no longer awaited. */
  _join(room, since, previousID) {
    if (previousID !== null) this.#forget(previousID);
    if (this.state !== "live") return null;
    const id = this.#nextID++;
    const message = { type: "join", room: room.name, id };
    if (since) message.since = since;
    if (this.token !== undefined && this.token !== null) message.token = this.token;
    if (room.presence !== undefined) message.presence = room.presence;
    else if (room.watchPresence) message.watchPresence = true;
    // No timeout: a live server always answers a join (servers that don't send join acks still
    // send the snapshot, which is what the mirror waits for). A drop forgets it: the reconnect
    // joins again.
    this.#pending.set(id, { onAnswer: (error, ack) => room._joinAnswered(error, ack) });
    this.#send(message);
    return id;
  }

  _updatePresence(room, data, timeout) {
    // Not connected: the next join carries the data, which is all the update asks.
    if (!this.#closed && this.state !== "live") return Promise.resolve(null);
    return this.#request({ type: "presence", room: room.name, data }, timeout, (entry) => entry.resolve(null));
  }

  _leave(room) {
    if (this.#rooms.get(room.name) === room) this.#rooms.delete(room.name);
    if (this.state !== "live") return Promise.resolve(null);
    return quietly(this.#request({ type: "leave", room: room.name }, this.actionTimeout, (entry) => entry.resolve(null)));
  }

  _warn(text) {
    if (!this.emit("warning", text)) console.warn("tether.js:", text);
  }

  #forget(id) {
    const entry = this.#pending.get(id);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.#pending.delete(id);
  }

  #answer(id, error, message) {
    const entry = this.#pending.get(id);
    if (!entry) return false;
    this.#forget(id);
    if (entry.action) {
      this.#actionAnswered(entry.action, error, message);
      return true;
    }
    entry.onAnswer?.(error, message);
    if (error) entry.reject?.(error);
    else entry.resolve?.(message);
    return true;
  }

  /** The connection dropped: every request on it is answered by its `onLost`, every action sent
   * on it waits to be sent again (an earlier send of it may have been applied). */
  #connectionLost(reason) {
    const entries = [...this.#pending.values()];
    this.#pending.clear();
    for (const entry of entries) {
      clearTimeout(entry.timer);
      if (entry.action) {
        entry.action.requestID = null;
        entry.action.maybeApplied = true;
      } else {
        entry.onLost?.(entry, reason);
      }
    }
    // Those pausing before a resend go right after the next hello, with the others.
    for (const action of this.#actions) {
      clearTimeout(action.retryTimer);
      action.retryTimer = null;
    }
  }

  /** The client ends for good (`close()`, or a drop without reconnect). */
  #shutDown(text, info) {
    this.#closed = true;
    this.session = null;
    const entries = [...this.#pending.values()];
    this.#pending.clear();
    const closed = new TetherError("closed", `${text} before the answer`, { applied: "unknown" });
    for (const entry of entries) {
      clearTimeout(entry.timer);
      if (!entry.action) entry.reject?.(closed);
    }
    for (const action of [...this.#actions]) {
      this.#settle(action, action.sent
        ? new TetherError("closed", `${text} before the answer: it may or may not have been applied`, { room: action.room, applied: "unknown" })
        : new TetherError("not_sent", `${text} before it was sent`, { room: action.room, applied: false }));
    }
    const error = new TetherError("closed", text);
    for (const room of this.#rooms.values()) room._closed(error);
    for (const waiter of this.#connectedWaiters.splice(0)) waiter.reject(error);
    this.#setState("closed", info);
  }

  #send(message) {
    try {
      this.#socket?.send(JSON.stringify(message));
    } catch (error) {
      this._warn(`cannot send: ${error.message}`);
    }
  }

  // MARK: Connection

  #setState(state, info = {}) {
    this.state = state;
    this.stateInfo = info;
    this.emit("state", state, info);
  }

  #open() {
    const url = this.urls[this.#urlIndex % this.urls.length];
    this.url = url;
    let socket;
    try {
      socket = new this.#WebSocket(url, SUBPROTOCOL);
    } catch (error) {
      this.#lost(`cannot connect to ${url}: ${error.message}`);
      return;
    }
    this.#socket = socket;
    let opened = false;
    // Events of a socket that was replaced or closed by us are ignored.
    socket.onopen = () => { opened = true; };
    socket.onmessage = (event) => { if (this.#socket === socket) this.#receive(event.data); };
    socket.onerror = () => {
      // After an open, a close event follows. A failed opening gets only this event in some
      // implementations (Node 20's), so it counts as the loss.
      if (opened || this.#socket !== socket) return;
      this.#lost(`cannot connect to ${url}`);
      try { socket.close(); } catch { /* never opened */ }
    };
    socket.onclose = (event) => {
      if (this.#socket !== socket) return;
      this.#lost(opened ? `connection closed (${event.code}${event.reason ? ": " + event.reason : ""})` : `cannot connect to ${url}`);
    };
  }

  #lost(reason) {
    this.#socket = null;
    this.session = null;
    this.#connectionLost(reason);
    for (const room of this.#rooms.values()) room._disconnected();
    if (!this.reconnect.enabled) {
      this.#shutDown(`the connection was lost (${reason}), and reconnecting is off`, { reason });
      return;
    }
    const attempt = ++this.#attempt;
    const delay = backoffDelay(attempt, this.reconnect);
    this.#urlIndex++;  // round robin: the next attempt goes to the next URL
    this.#setState("reconnecting", { attempt, reason, delay, url: this.urls[this.#urlIndex % this.urls.length] });
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      if (!this.#closed) this.#open();
    }, delay);
  }

  #receive(data) {
    if (typeof data !== "string") {
      this._warn("ignoring a binary frame from the server");
      return;
    }
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      this._warn(`ignoring a frame that is not JSON: ${data.slice(0, 200)}`);
      return;
    }
    if (!isContainer(message) || Array.isArray(message) || typeof message.type !== "string") {
      this._warn(`ignoring a frame that is not a message: ${data.slice(0, 200)}`);
      return;
    }
    this.emit("message", message);
    switch (message.type) {
      case "hello": return this.#receiveHello(message);
      case "snapshot": return this.#receiveSnapshot(message);
      case "patch": return this.#receivePatch(message);
      case "presence": return this.#receivePresence(message);
      case "presence_patch": return this.#receivePresencePatch(message);
      case "ack":
      case "description":
        return void this.#answer(message.id, null, message);
      case "error": return this.#receiveError(message);
      default: return;  // a newer server's message: ignored, as the protocol says
    }
  }

  #receiveHello(message) {
    this.session = typeof message.session === "string" ? message.session : null;
    this.#attempt = 0;
    // Our hello before anything else, even what a `state` listener sends.
    this.#send(this.user ? { type: "hello", client: this.clientId, user: this.user } : { type: "hello", client: this.clientId });
    // Then the joins, then the actions whose answer was lost, then new ones (PROTOCOL.md: the
    // repeats of a reconnect before any new action).
    this.#resuming = true;
    try {
      this.#setState("live", { url: this.url, session: this.session, server: message.server });
      this.emit("hello", message);
      for (const room of this.#rooms.values()) room._sendJoin(true);
    } finally {
      this.#resuming = false;
    }
    this.#pump();
    this.#flushPending();
    for (const waiter of this.#connectedWaiters.splice(0)) waiter.resolve(this);
  }

  #receiveSnapshot(message) {
    const room = this.#rooms.get(message.room);
    if (!room) return;
    if (typeof message.epoch !== "string" || !Number.isInteger(message.version) || !Object.hasOwn(message, "state")) {
      this._warn(`ignoring a malformed snapshot of ${message.room}`);
      return;
    }
    if (room._receiveSnapshot(message)) this.emit("resync", room);
  }

  #receivePatch(message) {
    const room = this.#rooms.get(message.room);
    if (!room) return;
    if (typeof message.epoch !== "string" || !Number.isInteger(message.from) || !Number.isInteger(message.version) || !Array.isArray(message.ops)) {
      this._warn(`ignoring a malformed patch of ${message.room}`);
      return;
    }
    room._receivePatch(message);
  }

  #receivePresence(message) {
    const room = this.#rooms.get(message.room);
    if (!room) return;
    if (!Number.isInteger(message.version) || !isContainer(message.members) || Array.isArray(message.members)) {
      this._warn(`ignoring a malformed presence snapshot of ${message.room}`);
      return;
    }
    room._receivePresence(message);
  }

  #receivePresencePatch(message) {
    const room = this.#rooms.get(message.room);
    if (!room) return;
    if (!Number.isInteger(message.from) || !Number.isInteger(message.version) || !Array.isArray(message.ops)) {
      this._warn(`ignoring a malformed presence patch of ${message.room}`);
      return;
    }
    room._receivePresencePatch(message);
  }

  #receiveError(message) {
    const code = typeof message.code === "string" ? message.code : "unknown";
    const text = typeof message.message === "string" ? message.message : code;
    // A server that does not say whether the request was applied is taken as not knowing.
    const applied = message.applied === false ? false : "unknown";
    // A typed contract's refusal names its case ("overflow"), stable where the message is not.
    const reason = typeof message.reason === "string" ? message.reason : undefined;
    const error = new TetherError(code, text, { id: message.id, room: message.room, applied, reason });
    if (message.id !== undefined && this.#answer(message.id, error)) return;
    const room = typeof message.room === "string" ? this.#rooms.get(message.room) : undefined;
    if (room && code === "room_deleted") {
      // Its stream ended: detached like a room left, so a reconnect does not join it again.
      this.#rooms.delete(room.name);
      room._deleted(error);
    } else {
      room?._receiveError(error);
    }
    this.emit("error", error);
  }
}
