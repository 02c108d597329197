// The history scrubber's pure parts: which step a slider value picks, a step as a line a person
// reads ("v7 · vote by alice (c1#3) · 12:01:02"), when to read the history again, and the server's
// refusals in plain words. The panel itself is history-panel.js; tested under Node.

import { clockTime, shortJSON } from "./format.js";

/** Steps read per request (the server allows up to 1,000). */
export const HISTORY_LIMIT = 200;
/** The history is read again at most this often while the room moves. */
export const REFRESH_INTERVAL_MS = 1000;

export const historyPath = (room, limit = HISTORY_LIMIT) => `/rooms/${encodeURIComponent(room)}/history?limit=${limit}&patch=true`;
export const statePath = (room, version) => `/rooms/${encodeURIComponent(room)}/state?at=${version}`;

/** The slider's bounds over `steps` (newest first): {min, max}, or null when there are none. */
export function versionRange(steps) {
  if (!Array.isArray(steps) || steps.length === 0) return null;
  return { min: steps.at(-1).version, max: steps[0].version };
}

/** The step a slider value stands for: the newest at or before `value`, else the oldest. */
export function stepAt(steps, value) {
  if (!Array.isArray(steps) || steps.length === 0) return null;
  return steps.find((step) => step.version <= value) ?? steps.at(-1);
}

/** The version one step older (`direction` -1) or newer (+1) than `version`, or null at an end. */
export function neighbour(steps, version, direction) {
  if (!Array.isArray(steps)) return null;
  const found = direction < 0 ? steps.find((step) => step.version < version)
    : steps.findLast((step) => step.version > version);
  return found?.version ?? null;
}

/** What made a step, in words: "vote {"option":"pizza"}", "timer 0", "presence"… */
export function stepWhat(step) {
  const args = step.args !== undefined ? ` ${shortJSON(step.args, 60)}` : "";
  switch (step.cause) {
    case "action": return `${step.action ?? "an action"}${args}`;
    case "refused": return `${step.action ?? "an action"}${args} (refused; its viewer's own values changed)`;
    case "timer": return Number.isInteger(step.timer) ? `timer ${step.timer}` : "a timer";
    case "presence": return "presence (members came or went)";
    case "viewers": return "a viewer's own values";
    default: return "unknown (stored before history was recorded)";
  }
}

/** Who made it: "alice (c1#3)", "alice", "(c1)" or "". With tokens the server keys a client
 * id by its viewer ("alice c1"): the viewer is said once. */
export function stepWho(step) {
  const id = typeof step.viewer === "string" && step.client?.startsWith(`${step.viewer} `) ? step.client.slice(step.viewer.length + 1) : step.client;
  const client = id ? (Number.isInteger(step.seq) ? `${id}#${step.seq}` : id) : "";
  return [step.viewer, client && `(${client})`].filter(Boolean).join(" ");
}

/** The step as one line: "v7 · vote by alice (c1#3) · 12:01:02 · on n1". `time` formats epoch ms. */
export function describeStep(step, time = clockTime) {
  const who = stepWho(step);
  const parts = [`v${step.version}`, who ? `${stepWhat(step)} by ${who}` : stepWhat(step)];
  if (Number.isFinite(step.at)) parts.push(time(step.at * 1000));
  if (step.node) parts.push(`on ${step.node}`);
  return parts.join(" · ");
}

/**
 * When to read the history again: null when not now (nothing new, a read under way, or reading
 * stopped), else the milliseconds to wait, so reads are at least `interval` apart.
 */
export function refreshDelay({ roomVersion, listedVersion, loading, stopped = false, lastLoadAt, now, interval = REFRESH_INTERVAL_MS }) {
  if (stopped || loading || !Number.isInteger(roomVersion) || roomVersion <= 0) return null;
  if (Number.isInteger(listedVersion) && roomVersion <= listedVersion) return null;
  if (!Number.isFinite(lastLoadAt)) return 0;
  return Math.max(0, lastLoadAt + interval - now);
}

/** The server's sentence from an error body ({code, message} or {error: {code, message}}). */
export function errorMessage(body) {
  const error = body?.error ?? body;
  if (typeof error === "string") return error;
  return typeof error?.message === "string" ? error.message : "";
}

const NEEDS_ADMIN = "History needs a token with the admin claim (tetherd token --admin …); this page's token opens rooms only.";
const NO_STORE = "This server keeps no history: it stores no rooms (it runs with --memory-only or without --data).";

/** Why the history cannot be read, known before asking: null when it is worth asking. */
export function knownProblem({ room, access, storageKind }) {
  if (room.startsWith("tether.")) return "The server's own rooms keep no history.";
  if (access === "limited") return NEEDS_ADMIN;
  if (storageKind === "memory") return NO_STORE;
  return null;
}

/**
 * A failed read of the history, in words: {text, retry}. `retry` is true when a later read may
 * work (the server was busy); false when asking again would get the same answer.
 */
export function historyProblem(status, body) {
  const message = errorMessage(body);
  if (status === 401 || status === 403) return { text: NEEDS_ADMIN, retry: false };
  if (status === 404 && /keeps no history/.test(message)) return { text: NO_STORE, retry: false };
  if (status === 404) return { text: "This room has no stored history (per-session rooms are not stored).", retry: false };
  if (status === 0) return { text: "The server could not be reached to read the history.", retry: true };
  return { text: `The history could not be read: ${message || `HTTP ${status}`}.`, retry: true };
}

/** Why the state at `version` is not shown, in words. */
export function stateProblem(status, body, version) {
  const message = errorMessage(body);
  if (status === 410) return `The state at v${version} is no longer kept${message ? ` (${message})` : ""}; what the step changed is still shown.`;
  if (status === 501) return "The state at an earlier version is not rebuilt on a cluster yet; what the step changed is still shown.";
  if (status === 401 || status === 403) return NEEDS_ADMIN;
  if (status === 0) return "The server could not be reached to rebuild this version.";
  return `The state at v${version} could not be read: ${message || `HTTP ${status}`}.`;
}
