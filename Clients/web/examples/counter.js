// A live counter shared by everyone connected to the same tetherd (see counter.html).
import { TetherClient } from "/tether.js";

const $ = (id) => document.getElementById(id);
// The daemon that served this page; add `{ token }` as a second argument if it needs one.
const client = new TetherClient(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}`);
const room = client.room("counter");

// The label follows /count: now, and on every change from any client.
room.observe("/count", (count) => { $("count").textContent = count ?? "…"; });

client.on("state", (state) => {
  $("status").textContent = state;
  $("status").dataset.state = state;
  $("increment").disabled = $("decrement").disabled = state !== "live";
});

async function send(action) {
  try {
    await room.send(action);        // resolves with the ack once the change is applied
    $("error").textContent = "";
  } catch (error) {                 // the server's {code, message}, or timeout / disconnected
    // `applied` is false (nothing changed) or "unknown" (it may have been applied).
    const maybe = error.applied === "unknown" ? " (it may or may not have been applied)" : "";
    $("error").textContent = `${error.code}: ${error.message}${maybe}`;
  }
}
$("increment").addEventListener("click", () => send("increment"));
$("decrement").addEventListener("click", () => send("decrement"));
