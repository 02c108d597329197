// A live counter shared by everyone connected to the same tetherd (see counter.html).
import { TetherClient } from "/tether.js";

const $ = (id) => document.getElementById(id);
// The daemon that served this page; add `{ token }` as a second argument if it needs one.
const client = new TetherClient(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}`);
const room = client.room("counter");

// The label follows /count: now, and on every change from any client.
room.observe("/count", (count) => { $("count").textContent = count ?? "…"; });

// "live" only once the count is here: connected is not yet joined.
function showStatus() {
  const joined = room.synced;
  const refused = !joined && room.lastError;
  const text = client.state !== "live" ? client.state
    : joined ? "live" : refused ? `not joined: ${refused.code}: ${refused.message}` : "joining";
  $("status").textContent = text;
  $("status").dataset.state = client.state === "live" && !joined ? "joining" : client.state;
  $("increment").disabled = $("decrement").disabled = !(client.state === "live" && joined);
}
client.on("state", showStatus);
for (const event of ["snapshot", "patch", "error"]) room.on(event, showStatus);

function say(text) {
  $("error").textContent = text;
}

// A press whose outcome is unknown (no answer in time, the connection dropped, or the server
// lost track of it), until something tells what became of it: its late answer; the room's state
// once the page is back; or, when the server lost track, the room's next version. The line says
// "may or may not have been applied" until then, and what is known after.
let unsettled = null;  // { action, epoch, version, id, evidence: "late" | "rejoin" | "reconnected" | "next" }

async function send(action) {
  const sent = { action, epoch: room.epoch, version: room.version };
  try {
    const ack = await room.send(action);  // resolves with the ack once the change is applied
    if (unsettled?.evidence === "next") settle(room.epoch, ack.version);
    else if (!unsettled) say("");
  } catch (error) {                       // the server's {code, message}, or timeout / disconnected
    if (error.applied !== "unknown") {    // false: nothing changed
      say(`${error.code}: ${error.message}`);
      return;
    }
    const evidence = error.code === "timeout" ? (client.state === "live" ? "late" : "rejoin")
      : error.code === "disconnected" ? "rejoin" : "next";
    unsettled = { ...sent, id: error.id, evidence };
    say(`${error.code}: ${error.message} (it may or may not have been applied)`);
  }
}

// Compares the room's point reached since with the one the press was sent at.
function settle(epoch, version) {
  const { action, epoch: sentEpoch, version: sentVersion } = unsettled;
  unsettled = null;
  if (epoch === sentEpoch && version === sentVersion) {
    say(`${action} was not applied: the room is still at v${version}; press again if you meant it`);
  } else if (epoch === sentEpoch && sentVersion !== null) {
    say(`${action}: still unknown whether it was applied; the room changed since (v${sentVersion} → v${version}), as shown`);
  } else {
    say(`${action}: still unknown whether it was applied; the room is shown as it is now`);
  }
}

// The answer to a press that timed out still comes on the same connection.
client.on("message", (message) => {
  if (unsettled?.evidence !== "late" || message.id !== unsettled.id) return;
  const { action } = unsettled;
  if (message.type === "ack") {
    unsettled = null;
    say(`${action} was applied after all (v${message.version})`);
  } else if (message.type === "error" && message.applied === false) {
    unsettled = null;
    say(`${message.code}: ${message.message}`);
  } else if (message.type === "error") {
    unsettled.evidence = "next";
  }
});
client.on("state", (state) => {
  if (!unsettled) return;
  if (state !== "live" && ["late", "reconnected"].includes(unsettled.evidence)) unsettled.evidence = "rejoin";
  else if (state === "live" && unsettled.evidence === "rejoin") unsettled.evidence = "reconnected";
});
for (const event of ["snapshot", "patch"]) {
  room.on(event, () => {
    if (["reconnected", "next"].includes(unsettled?.evidence)) settle(room.epoch, room.version);
  });
}

$("increment").addEventListener("click", () => send("increment"));
$("decrement").addEventListener("click", () => send("decrement"));
