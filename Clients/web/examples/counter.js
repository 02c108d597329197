// A live counter shared by everyone connected to the same tetherd (see counter.html).
import { TetherClient } from "/tether.js";

const $ = (id) => document.getElementById(id);
// The daemon that served this page; add `{ token }` as a second argument if it needs one.
const client = new TetherClient(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}`);
const room = client.room("counter");

// The label follows /count: the server's count, with the presses still waiting for their answer
// shown on top of it (their predictions), now and on every change from any client.
room.observe("/count", (count) => { $("count").textContent = count ?? "…"; });

// "live" only once the count is here: connected is not yet joined. The buttons work as soon as
// there is a count, connected or not: a press while reconnecting waits in the client's queue.
function showStatus() {
  const joined = room.synced;
  const refused = !joined && room.lastError;
  const text = client.state !== "live" ? client.state
    : joined ? "live" : refused ? `not joined: ${refused.code}: ${refused.message}` : "joining";
  $("status").textContent = text;
  $("status").dataset.state = client.state === "live" && !joined ? "joining" : client.state;
  $("increment").disabled = $("decrement").disabled = room.serverState === undefined || Boolean(refused);
}
client.on("state", showStatus);
for (const event of ["snapshot", "patch", "error"]) room.on(event, showStatus);

// Sent and unanswered, or queued: each counts once, however long the server takes.
client.on("pending", (pending) => {
  const waiting = pending.filter((action) => action.room === room.name).length;
  $("pending").textContent = waiting === 0 ? "" : `${waiting} ${waiting === 1 ? "press" : "presses"} waiting for the server`;
});

function say(text) {
  $("error").textContent = text;
}

async function press(action, step) {
  try {
    // Shown at once; resolves once the server applied it (once), however many reconnects later.
    await room.send(action, undefined, { predict: (state) => { state.count += step; } });
    say("");
  } catch (error) {
    // The server refused it, or it could not be sent in time: the count is the server's again.
    // Only a room that forgot the press (stale_action) cannot say whether it counted.
    const unknown = error.applied === "unknown" ? " (whether it was applied is unknown)" : "";
    say(`${action}: ${error.code}: ${error.message}${unknown}`);
  }
}

$("increment").addEventListener("click", () => press("increment", 1));
$("decrement").addEventListener("click", () => press("decrement", -1));
