// The Tether dashboard: a Tether client of the daemon that served it. It mirrors the system room
// `tether.server` for the overview, opens any other room by name in a generic view, asks for a
// token when the server wants one, and says in plain words what the connection is doing.
//
// It connects only to the origin it was served from: no query parameter can point it (and the
// token it holds) at another server.

import { TetherClient } from "/tether.js";
import { FrameScheduler, measureFrameRate } from "./frame-scheduler.js";
import { HistoryPanel } from "./history-panel.js";
import { Overview, roomHref } from "./overview.js";
import { RoomView } from "./room-view.js";
import { clockTime, describeConnection, explainError } from "./format.js";

const SERVER_ROOM = "tether.server";
const TOKEN_KEY = "tether.dashboard.token";  // sessionStorage: gone with the tab, never on disk for long
const $ = (id) => document.getElementById(id);

const storedToken = sessionStorage.getItem(TOKEN_KEY) ?? undefined;
const serverURL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}`;
const client = new TetherClient(serverURL, { token: storedToken });
const scheduler = new FrameScheduler();
const serverRoom = client.room(SERVER_ROOM);
const overview = new Overview({ deleteRoom });
const historyPanel = new HistoryPanel({ getJSON, context: historyContext });
const roomView = new RoomView({ client, scheduler, describe: describeKind, history: historyPanel });

/** "unknown" until the server answers the join of tether.server; then "granted", "limited" (a
 * valid token without the admin claim: rooms by name only), "refused" (a token is needed) or
 * "unavailable" (a server without the system room). */
let access = "unknown";
let pendingToken = null;
let everLive = false;
let lastUpdate = null;

// MARK: Room kinds (the server's `describe`)

let kinds = null;

/** Resolves with a Map of the server's kinds by name, or null when the server does not describe
 * kinds at all (an older tetherd). Asked once; asked again after a failure. */
function kindMap() {
  if (kinds === null) {
    kinds = client.describe().then(
      (list) => new Map(list.map((description) => [description.name, description])),
      (error) => {
        if (error.code === "bad_message") return null;
        kinds = null;  // not connected or no answer: ask again next time
        throw error;
      },
    );
    kinds.then(showDemoKinds, () => {});
  }
  return kinds;
}

/** The description of `kind`: undefined for a kind the server does not have, null when the
 * server does not describe kinds. */
function describeKind(kind) {
  return kindMap().then((map) => (map === null ? null : map.get(kind)));
}

function showDemoKinds(map) {
  if (!map) return;
  const names = [...map.keys()].filter((name) => name !== SERVER_ROOM);
  const links = names.flatMap((name, index) => {
    const link = document.createElement("a");
    link.href = roomHref(name);
    link.textContent = name;
    return index === 0 ? [link] : [", ", link];
  });
  $("demo-kinds").replaceChildren(...links);
}

// MARK: Views and routing

function currentRoute() {
  const match = /^#\/room\/(.+)$/.exec(location.hash);
  if (!match) return { view: "overview" };
  try {
    return { view: "room", name: decodeURIComponent(match[1]) };
  } catch {
    return { view: "overview" };
  }
}

function route() {
  const { view, name } = currentRoute();
  const allowed = access === "granted" || access === "unavailable" || access === "limited";
  document.body.dataset.access = access;
  $("limited-access").hidden = access !== "limited";
  $("sign-in").hidden = access !== "refused";
  $("sign-out").hidden = sessionStorage.getItem(TOKEN_KEY) === null;
  $("overview-view").hidden = !allowed || view !== "overview";
  $("room-view").hidden = !allowed || view !== "room";
  if (allowed && view === "room") {
    roomView.open(name, name === SERVER_ROOM ? serverRoom : null);
    showListing();
  } else {
    roomView.close();
    document.title = "Tether dashboard";
  }
  if (access === "refused") $("token-input").focus();
}

function showListing() {
  const name = roomView.room?.name;
  if (name) roomView.showListing(overview.roomList.find((entry) => entry.name === name));
}

window.addEventListener("hashchange", route);

$("open-room-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = $("open-room-input").value.trim();
  if (name) location.hash = roomHref(name);
});

$("open-room-input").addEventListener("focus", async () => {
  const names = new Set(overview.roomList.map((entry) => entry.name));
  try {
    const map = await kindMap();
    for (const kind of map?.keys() ?? []) names.add(kind);
  } catch { /* suggestions are a convenience */ }
  $("room-suggestions").replaceChildren(...[...names].sort().map((name) => {
    const option = document.createElement("option");
    option.value = name;
    return option;
  }));
});

// MARK: Deleting a room (the daemon's HTTP side, with the page's token)

/** DELETE /rooms/NAME with the token the page signed in with (the admin token the overview
 * needs); rejects with the server's sentence. */
async function deleteRoom(name) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  let response;
  try {
    response = await fetch(`/rooms/${encodeURIComponent(name)}`, { method: "DELETE", headers: token ? { Authorization: `Bearer ${token}` } : {} });
  } catch {
    throw new Error("the server could not be reached");
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error ?? `the server answered HTTP ${response.status}`);
  return body;
}

// MARK: A room's history (the daemon's HTTP side, with the page's token)

/** GET PATH with the page's token: {status, body}; status 0 when not reached (or aborted). */
async function getJSON(path, signal) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  try {
    const response = await fetch(path, { headers: token ? { Authorization: `Bearer ${token}` } : {}, signal });
    return { status: response.status, body: await response.json().catch(() => ({})) };
  } catch {
    return { status: 0, body: {} };
  }
}

/** What the page knows before asking for a history: the token's reach and the server's storage. */
function historyContext() {
  return { access, storageKind: serverRoom.state?.server?.storage?.kind };
}

// MARK: The server room and access

serverRoom.on("snapshot", () => {
  if (pendingToken !== null) {
    sessionStorage.setItem(TOKEN_KEY, pendingToken);
    pendingToken = null;
    $("token-input").value = "";
    $("sign-in-error").textContent = "";
  }
  setAccess("granted");
  serverChanged(performance.now());
});
serverRoom.on("patch", () => serverChanged(performance.now()));
serverRoom.on("error", (error) => {
  // tetherd checks the token first: this refusal means it is valid but opens no overview.
  const lacksAdmin = error.code === "unauthorized" && /admin claim/.test(error.message);
  const token = pendingToken ?? sessionStorage.getItem(TOKEN_KEY);
  if (lacksAdmin && token !== null) {
    if (pendingToken !== null) sessionStorage.setItem(TOKEN_KEY, pendingToken);
    pendingToken = null;
    $("token-input").value = "";
    $("sign-in-error").textContent = "";
    $("limited-access-text").textContent = describeLimitedToken(token);
    setAccess("limited");
  } else if (error.code === "unauthorized") {
    let message = "";
    if (pendingToken !== null) {
      message = `That token was refused: ${error.message}. It must be valid and unexpired.`;
      pendingToken = null;
    } else if (sessionStorage.getItem(TOKEN_KEY) !== null) {
      message = "The saved token was refused (it may have expired). Paste a new one.";
      sessionStorage.removeItem(TOKEN_KEY);
    }
    $("sign-in-error").textContent = message;
    setAccess("refused");
  } else if (error.code === "unknown_room") {
    setAccess("unavailable");
  } else {
    showBanner(`The server room could not be joined. ${explainError(error).headline} ${error.message}`);
  }
});

/** What a token without the admin claim opens, from its claims (the server checked them). */
function describeLimitedToken(token) {
  let claims = {};
  try {
    const payload = token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
    claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload), (c) => c.charCodeAt(0))));
  } catch { /* shown without the details */ }
  const rooms = Array.isArray(claims.rooms) ? claims.rooms : [];
  const covers = rooms.includes("*") ? "every room" : rooms.length > 0 ? `the rooms ${rooms.join(", ")}` : "the rooms it names";
  const who = typeof claims.sub === "string" ? ` of “${claims.sub}”` : "";
  return `You are signed in with the token${who}, which opens ${covers}: open one by name below. `
    + "The server's figures and its list of rooms come from its own room, tether.server, which needs a token "
    + "with the admin claim (tetherd token --admin …).";
}

function setAccess(value) {
  if (access === value) return;
  access = value;
  route();
  renderConnection();
}

function serverChanged(arrivedAt) {
  lastUpdate = Date.now();
  scheduler.schedule("overview", () => {
    overview.render(serverRoom.state);
    showListing();
  }, arrivedAt);
}

$("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token-input").value.trim();
  if (!token) return;
  pendingToken = token;
  $("sign-in-error").textContent = client.state === "live" ? "Checking…" : "Checking as soon as the server is reachable…";
  client.setToken(token);
});

$("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  // A fresh page and connection: nothing joined with the old token stays on screen.
  location.reload();
});

// MARK: Connection state

client.on("state", (state) => {
  if (state === "live") everLive = true;
  scheduler.schedule("connection", renderConnection);
});

function showBanner(text) {
  $("banner").hidden = !text;
  $("banner").textContent = text ?? "";
}

function renderConnection() {
  const { state, stateInfo } = client;
  $("connection").dataset.state = state;
  $("connection-text").textContent = describeConnection(state, stateInfo);
  $("connection").title = stateInfo.reason ?? "";
  document.body.classList.toggle("stale", state !== "live" && everLive);
  if (state === "reconnecting" || state === "closed") {
    if (!everLive) {
      showBanner(`Cannot open a connection to ${serverURL}. Either tetherd is not running there, or it refuses pages from ${location.origin} (it checks where browser connections come from: see its --allowed-origins option). Retrying…`);
    } else {
      const since = lastUpdate ? ` What you see is from ${clockTime(lastUpdate)}.` : "";
      showBanner(`The connection to the server was lost (${stateInfo.reason ?? "no reason given"}). Reconnecting by itself…${since}`);
    }
  } else if (access === "unavailable") {
    showBanner("This server does not publish its overview room (tether.server), so there are no figures to show. You can still open rooms by name.");
  } else {
    showBanner(null);
  }
}

client.on("warning", (text) => console.warn("tether.js:", text));

// MARK: For the browser tests and the curious (window.tetherDashboardStats in the console)

window.tetherDashboard = {
  client,
  get room() { return roomView.room; },
  get access() { return access; },
};
window.tetherDashboardStats = {
  /** Patches received, frames rendered, patch-to-screen latency and render time (ms). */
  read: () => ({ ...scheduler.stats(), connection: client.state, room: roomView.room?.name ?? null, version: roomView.room?.version ?? null }),
  reset: () => scheduler.resetStats(),
  /** Counts animation frames for `ms` milliseconds: resolves with {frames, fps, frameMs}. */
  measureFrameRate,
};

route();
renderConnection();
