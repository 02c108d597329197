// @ts-check
// A live counter shared by everyone connected to the same tetherd (see counter.html).
// Type-checked against the demo server's generated types: `tsc -p Clients/web/examples`
// (tsconfig.json says how; docs/CLIENTS.md, "TypeScript types").
import { TetherClient, TetherError } from "/tether.js";

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));  // counter.html has each
const increment = /** @type {HTMLButtonElement} */ ($("increment"));
const decrement = /** @type {HTMLButtonElement} */ ($("decrement"));
// The daemon that served this page; add `{ token }` as a second argument if it needs one.
const client = new TetherClient(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}`);
// Typed by tether-types.d.ts: its state is { count: number }, its actions increment, decrement, reset.
/** @type {import("./tether-types").CounterRoom} */
const room = client.room("counter");

// The label follows /count: the server's count, with the presses still waiting for their answer
// shown on top of it (their predictions), now and on every change from any client.
room.observe("/count", (count) => { $("count").textContent = String(count ?? "…"); });

// "live" only once the count is here: connected is not yet joined. The buttons work as soon as
// there is a count, connected or not: a press while reconnecting waits in the client's queue.
function showStatus() {
  const joined = room.synced;
  const refused = !joined && room.lastError;
  const text = client.state !== "live" ? client.state
    : joined ? "live" : refused ? `not joined: ${refused.code}: ${refused.message}` : "joining";
  $("status").textContent = text;
  $("status").dataset.state = client.state === "live" && !joined ? "joining" : client.state;
  increment.disabled = decrement.disabled = room.serverState === undefined || Boolean(refused);
}
client.on("state", showStatus);
room.on("snapshot", showStatus);
room.on("patch", showStatus);
room.on("error", showStatus);

// Sent and unanswered, or queued: each counts once, however long the server takes.
client.on("pending", (pending) => {
  const waiting = pending.filter((action) => action.room === room.name).length;
  $("pending").textContent = waiting === 0 ? "" : `${waiting} ${waiting === 1 ? "press" : "presses"} waiting for the server`;
});

/** @param {string} text */
function say(text) {
  $("error").textContent = text;
}

/**
 * @param {"increment" | "decrement"} action
 * @param {number} step
 */
async function press(action, step) {
  try {
    // Shown at once; resolves once the server applied it (once), however many reconnects later.
    await room.send(action, undefined, { predict: (state) => { state.count += step; } });
    say("");
  } catch (error) {
    if (!(error instanceof TetherError)) throw error;  // send rejects with a TetherError only
    // The server refused it, or it could not be sent in time: the count is the server's again.
    // Only a room that forgot the press (stale_action) cannot say whether it counted.
    const unknown = error.applied === "unknown" ? " (whether it was applied is unknown)" : "";
    say(`${action}: ${error.code}: ${error.message}${unknown}`);
  }
}

increment.addEventListener("click", () => press("increment", 1));
decrement.addEventListener("click", () => press("decrement", -1));
