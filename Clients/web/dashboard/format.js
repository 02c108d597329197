// Plain-language formatting for the dashboard: durations, sizes, rates, and errors a person who
// has never read the protocol can act on.

/** 3725 → "1 h 2 min"; 42 → "42 s". The spaces are no-break spaces: a duration never wraps
 * inside ("6 min" on one line, "33 s" on the next). */
export function formatDuration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "—";
  seconds = Math.floor(seconds);
  const days = Math.floor(seconds / 86400);
  const hours = Math.floor((seconds % 86400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const text = days > 0 ? `${days} d ${hours} h`
    : hours > 0 ? `${hours} h ${minutes} min`
    : minutes > 0 ? `${minutes} min ${seconds % 60} s`
    : `${seconds} s`;
  return text.replaceAll(" ", "\u00a0");
}

/** 12345 → "12.1 KiB". */
export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** A rate or count: 1234.5 → "1,235"; 3.25 → "3.3"; 0 → "0". */
export function formatNumber(value) {
  if (!Number.isFinite(value)) return "—";
  if (Math.abs(value) >= 100 || Number.isInteger(value)) return Math.round(value).toLocaleString("en");
  return value.toFixed(1);
}

/** A short, human form of a JSON value for one-line displays, cut at `max` characters. */
export function shortJSON(value, max = 80) {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

/** How long ago, for a person: "just now", "12 min ago", "3 h ago", "5 days ago". */
export function formatAge(milliseconds) {
  const seconds = Math.max(0, Math.floor(milliseconds / 1000));
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  const days = Math.floor(seconds / 86400);
  return `${days} day${days === 1 ? "" : "s"} ago`;
}

/** "14:03:07" for a Date or epoch milliseconds. */
export function clockTime(time) {
  return new Date(time).toLocaleTimeString("en-GB", { hour12: false });
}

const errorExplanations = {
  unauthorized: "Not allowed: the access token is missing, expired, or does not cover this room.",
  unknown_room: "No such room: the server has no room kind by that name, or the kind has no such instance.",
  room_deleted: "This room was deleted on the server: its state is gone (this page keeps the last it had).",
  unknown_action: "The room has no action by that name.",
  invalid_args: "The arguments don't fit the action.",
  rate_limited: "Refused by a limit: too many requests for now, or too many rooms (of this kind, or in all).",
  too_large: "Too large: the server will not hold a value that big.",
  unavailable: "The room cannot take actions right now: it is moving between servers, or closing.",
  internal: "The server failed while handling this; the room keeps running.",
  bad_message: "The server did not understand the request.",
  stale_action: "The room no longer remembers this action, so it cannot say whether it was applied.",
  timeout: "No answer from the server in time.",
  not_connected: "Not connected to the server right now.",
  not_sent: "Not sent: the page could not reach the server in time.",
  queue_full: "Too many actions are already waiting to be sent.",
  closed: "The connection is closed.",
  left: "This page left the room.",
};

/** An error as a sentence, what became of the request, then the server's own words:
 * {headline, outcome, detail}; `outcome` is "" for an error without `applied`. */
export function explainError(error) {
  const code = error?.code ?? "error";
  const headline = errorExplanations[code] ?? `The server answered with an error (${code}).`;
  // What became of the request: tether.js sets `applied` on every failed one.
  const outcome = error?.applied === false ? "Nothing was changed."
    : error?.applied === "unknown" ? "The change may or may not have been made." : "";
  const detail = error?.message && error.message !== code ? error.message : "";
  return { code, headline, outcome, detail };
}

/** What the connection badge says for a client state and its info. */
export function describeConnection(state, info = {}) {
  switch (state) {
    case "live": return "Live";
    case "connecting": return "Connecting…";
    case "closed": return "Disconnected";
    case "reconnecting": {
      const seconds = info.delay !== undefined ? ` in ${(info.delay / 1000).toFixed(1)} s` : "";
      return `Reconnecting${seconds} (attempt ${info.attempt ?? 1})`;
    }
    default: return state;
  }
}
