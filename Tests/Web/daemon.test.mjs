// tether.js against a real tetherd: convergence with the Swift client, resume after a daemon
// restart, and many concurrent actions. These tests rely on the protocol as tetherd speaks it
// today (no join acks, no describe): mirrors are awaited through their snapshots and patches.
// Needs a global WebSocket: `node --experimental-websocket --test Tests/Web/` on Node 20.

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { TetherClient, displayName } from "../../Clients/web/tether.js";
import { waitFor, nextEvent } from "./support/scripted-server.mjs";
import { startDaemon, runTether, watchWithTether, temporaryDirectory } from "./support/processes.mjs";

if (typeof globalThis.WebSocket !== "function") {
  throw new Error("these tests need a global WebSocket: run `node --experimental-websocket --test Tests/Web/` (Node 20)");
}

function client(t, url, options) {
  const c = new TetherClient(url, options);
  t.after(() => c.close());
  return c;
}

/** A room's state as a fresh Swift client sees it: the first frame of `tether watch`. */
async function swiftSnapshot(t, url, room) {
  const watch = watchWithTether(t, url, room);
  await waitFor(() => watch.frames.some((f) => f.type === "snapshot"), "tether watch's snapshot", 10_000);
  await watch.stop();
  return watch.frames.find((f) => f.type === "snapshot");
}

test("two tether.js clients and the Swift client converge on one todo", async (t) => {
  const daemon = await startDaemon(t);
  const name = "todo:converge";
  const a = client(t, daemon.url).room(name);
  const b = client(t, daemon.url).room(name);
  await a.ready();
  await b.ready();
  const watch = watchWithTether(t, daemon.url, name);
  await waitFor(() => watch.frames.some((f) => f.type === "snapshot"), "tether watch's snapshot", 10_000);

  await a.send("add", { title: "from A" });
  await b.send("add", { title: "from B" });
  const swiftAdd = await runTether(["send", "--url", daemon.url, name, "add", '{"title":"from Swift"}']);
  assert.equal(swiftAdd.code, 0, swiftAdd.stderr);
  const swiftAck = JSON.parse(swiftAdd.stdout);
  assert.equal(swiftAck.type, "ack");

  // Each side acts on the others' items, as soon as its mirror shows them.
  await waitFor(() => b.version >= swiftAck.version, "B sees the Swift client's item");
  const itemOf = (room, title) => room.state.items.find((item) => item.title === title);
  await b.send("rename", { id: itemOf(b, "from Swift").id, title: "from Swift, renamed by B" });
  const toggle = await runTether(["send", "--url", daemon.url, name, "toggle", JSON.stringify({ id: itemOf(a, "from A").id })]);
  assert.equal(toggle.code, 0, toggle.stderr);
  const last = await a.send("remove", { id: itemOf(a, "from B").id });

  await waitFor(() => a.version === last.version && b.version === last.version, "both mirrors at the last version");
  await waitFor(() => watch.frames.at(-1)?.version === last.version, "tether watch at the last version", 10_000);
  const expected = { items: [
    { id: itemOf(a, "from A").id, title: "from A", done: true },
    { id: itemOf(a, "from Swift, renamed by B").id, title: "from Swift, renamed by B", done: false },
  ] };
  assert.deepEqual(a.state, expected);
  assert.deepEqual(b.state, expected);
  const snapshot = await swiftSnapshot(t, daemon.url, name);
  assert.equal(snapshot.version, last.version);
  assert.equal(snapshot.epoch, a.epoch);
  assert.deepEqual(snapshot.state, expected);
  // The running Swift watch saw a gapless stream of patches up to that version.
  const patches = watch.frames.filter((f) => f.type === "patch");
  for (let i = 1; i < patches.length; i++) assert.equal(patches[i].from, patches[i - 1].version);
});

test("after a daemon restart on the same data, the client resumes with a patch, not a snapshot", async (t) => {
  const data = temporaryDirectory(t);
  const first = await startDaemon(t, { args: ["--data", data] });
  const c = client(t, first.url, { reconnect: { initialDelay: 50, maxDelay: 400 } });
  const room = c.room("counter:restart");
  await room.ready();
  for (let i = 0; i < 3; i++) await room.send("increment");
  await waitFor(() => room.state.count === 3, "count 3");
  const { epoch, version } = room;
  let snapshots = 0;
  room.on("snapshot", () => snapshots++);
  const resumed = nextEvent(room, "patch", 30_000);

  assert.equal(await first.stop(), 0, first.stderr);
  await waitFor(() => c.state === "reconnecting", "reconnecting");
  // Not connected: the action waits in the queue and leaves once the client is back.
  const queued = room.send("increment");
  assert.deepEqual(c.pendingActions.map((a) => a.sent), [false]);
  // The daemon locks its data directory: the second starts once the first has exited.
  const second = await startDaemon(t, { port: first.port, args: ["--data", data] });

  const [patch] = await resumed;
  assert.equal(patch.epoch, epoch);
  assert.equal(patch.from, version);
  assert.deepEqual([patch.version, patch.ops], [version, []], "nothing changed while it was down");
  assert.equal(snapshots, 0);
  assert.equal(c.state, "live");
  // The queued action leaves after the rejoin: its patch may follow in the same read.
  const queuedAck = await queued;
  assert.equal(queuedAck.version, version + 1);
  const ack = await room.send("increment", { by: 2 });
  await waitFor(() => room.version === ack.version, "the new increment");
  assert.deepEqual(room.state, { count: 6 });
  const snapshot = await swiftSnapshot(t, second.url, "counter:restart");
  assert.deepEqual({ epoch: snapshot.epoch, version: snapshot.version, state: snapshot.state }, { epoch, version: ack.version, state: { count: 6 } });
});

/**
 * A TCP proxy on 127.0.0.1 in front of `port`: a connection to it opens one to the daemon. While
 * `hold` is true whatever the daemon sends is dropped, so the client's answers are lost on the
 * way. A connection closed on one side is closed on the other. Stopped when the test ends.
 */
async function startProxy(t, port) {
  const sockets = new Set();
  const proxy = { hold: false };
  const server = net.createServer((down) => {
    const up = net.connect(port, "127.0.0.1");
    const end = () => { down.destroy(); up.destroy(); };
    for (const socket of [down, up]) {
      sockets.add(socket);
      socket.on("error", end);
      socket.on("close", () => { sockets.delete(socket); end(); });
    }
    down.on("data", (chunk) => up.write(chunk));
    up.on("data", (chunk) => { if (!proxy.hold) down.write(chunk); });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `ws://127.0.0.1:${server.address().port}`;
  t.after(() => new Promise((resolve) => {
    for (const socket of sockets) socket.destroy();
    server.close(resolve);
  }));
  return proxy;
}

/** A WebSocket that records every frame the client sends (parsed), in `frames`. */
function recordingWebSocket() {
  const frames = [];
  class RecordingWebSocket extends WebSocket {
    send(data) {
      frames.push(JSON.parse(data));
      super.send(data);
    }
  }
  return { frames, WebSocket: RecordingWebSocket };
}

test("a stopped daemon keeps the action waiting: its prediction shows at once, and it settles once the daemon goes on", async (t) => {
  const daemon = await startDaemon(t);
  const c = client(t, daemon.url, { actionTimeout: 200 });
  const room = c.room("counter:stopped");
  await room.ready();
  await room.send("increment");
  const seen = [];
  room.observe("/count", (count) => seen.push(count));
  let settlements = 0;
  daemon.process.kill("SIGSTOP");
  let sent;
  try {
    sent = room.send("increment", { by: 2 }, { predict: (state) => { state.count += 2; } });
    sent.then(() => settlements++, () => settlements++);
    assert.deepEqual(room.state, { count: 3 }, "shown at once");
    assert.deepEqual(room.serverState, { count: 1 });
    // Longer than actionTimeout: that bounds only the wait to be sent.
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(settlements, 0);
    assert.deepEqual(c.pendingActions.map((a) => [a.name, a.sent]), [["increment", true]]);
  } finally {
    daemon.process.kill("SIGCONT");
  }
  const ack = await sent;
  assert.equal(ack.version, 2);
  assert.deepEqual(room.state, { count: 3 });
  assert.equal(room.state, room.serverState, "no prediction left");
  assert.deepEqual(seen, [1, 3], "shown once: the ack, right behind its patch, drops the prediction before the patch shows");
  const fresh = client(t, daemon.url).room("counter:stopped");
  await fresh.ready();
  assert.deepEqual(fresh.state, { count: 3 }, "the server's count");
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(settlements, 1);
});

test("a daemon restarted on its data between an action and its answer: the client sends it again and it is applied once", async (t) => {
  const data = temporaryDirectory(t);
  const first = await startDaemon(t, { args: ["--data", data] });
  const proxy = await startProxy(t, first.port);
  const recording = recordingWebSocket();
  const c = client(t, proxy.url, { reconnect: { initialDelay: 50, maxDelay: 400 }, WebSocket: recording.WebSocket });
  const room = c.room("counter:once");
  await room.ready();
  const watcher = client(t, first.url, { reconnect: { enabled: false } }).room("counter:once");
  await watcher.ready();

  proxy.hold = true;  // the patch and the ack never reach the client
  let settlements = 0;
  const sent = room.send("increment", undefined, { predict: (state) => { state.count += 1; } });
  sent.then(() => settlements++, () => settlements++);
  await waitFor(() => watcher.state?.count === 1, "the daemon applied it", 10_000);
  const appliedAt = watcher.version;
  assert.deepEqual(room.state, { count: 1 }, "predicted");
  assert.deepEqual(room.serverState, { count: 0 }, "the answer was lost");

  assert.equal(await first.stop(), 0, first.stderr);
  proxy.hold = false;
  await waitFor(() => c.state === "reconnecting", "reconnecting");
  const second = await startDaemon(t, { port: first.port, args: ["--data", data] });
  const ack = await sent;
  assert.equal(ack.version, appliedAt, "the first ack, from the room's record: not run again");
  const actions = recording.frames.filter((f) => f.type === "action");
  assert.equal(actions.length, 2);
  assert.equal(actions[1].seq, actions[0].seq, "sent again under its number");
  assert.notEqual(actions[1].id, actions[0].id);
  assert.deepEqual(room.state, { count: 1 });
  assert.equal(room.state, room.serverState);

  const fresh = client(t, second.url).room("counter:once");
  await fresh.ready();
  assert.deepEqual(fresh.state, { count: 1 }, "applied exactly once");
  assert.equal(settlements, 1);
});

/** The names a presence mirror lists, sorted. */
function names(room) {
  return Object.values(room.members ?? {}).map(displayName).sort();
}

test("presence: members, a spectator nobody lists, and the Swift client's --name, live", async (t) => {
  const daemon = await startDaemon(t);
  const name = "todo:nc";
  const kimClient = client(t, daemon.url);
  const screenClient = client(t, daemon.url);
  const kim = kimClient.room(name, { presence: { name: "kim" } });
  const screen = screenClient.room(name, { watchPresence: true });
  await kim.ready();
  await screen.ready();
  await waitFor(() => names(screen).join() === "kim", "the spectator sees kim", 10_000);
  const lee = watchWithTether(t, daemon.url, name, ["--name", "lee"]);
  await waitFor(() => names(screen).join() === "kim,lee" && names(kim).join() === "kim,lee", "both see kim and lee", 10_000);
  assert.ok(!Object.hasOwn(kim.members, screenClient.session), "the spectator is not listed");
  assert.equal(Object.keys(kim.members).length, 2);
  const leeID = Object.keys(kim.members).find((id) => id !== kimClient.session);
  assert.ok(lee.frames.some((f) => f.type === "presence"), "the Swift client got its presence snapshot");

  const changed = nextEvent(screen, "members", 10_000);
  await kim.setPresence({ name: "kim", editing: "t1" });
  assert.deepEqual((await changed)[0].changed, [kimClient.session]);
  // Without tokens a member's user is what the client's hello says (in Node, its client id).
  assert.deepEqual(screen.members[kimClient.session], { user: kimClient.clientId, data: { name: "kim", editing: "t1" } });
  const gone = nextEvent(screen, "members", 10_000);
  await lee.stop();
  assert.deepEqual((await gone)[0].left, [leeID]);
  assert.deepEqual(names(screen), ["kim"]);
  await assert.rejects(screen.setPresence({ name: "screen" }), { code: "invalid_args", applied: false });

  // A room whose kind keeps no presence answers as without it: members stay null.
  const bench = screenClient.room("bench:x", { watchPresence: true });
  const joined = nextEvent(bench, "joined", 10_000);
  await bench.ready();
  await joined;
  assert.equal(bench.members, null);
});

test("presence survives a daemon restart: the client rejoins with the data it last set", async (t) => {
  const first = await startDaemon(t);
  const fast = { reconnect: { initialDelay: 50, maxDelay: 400 } };
  const kimClient = client(t, first.url, fast);
  const screen = client(t, first.url, fast).room("counter:again", { watchPresence: true });
  const kim = kimClient.room("counter:again", { presence: { name: "kim" } });
  await kim.ready();
  await kim.setPresence({ name: "kim", status: "away" });
  await waitFor(() => Object.values(screen.members ?? {}).some((m) => m.data.status === "away"), "the spectator sees kim away", 10_000);
  assert.equal(await first.stop(), 0, first.stderr);
  await waitFor(() => screen.members === null && kim.members === null, "both forget who was here", 10_000);
  await startDaemon(t, { port: first.port });
  await waitFor(() => names(screen).join() === "kim", "kim back, seen by the spectator", 20_000);
  assert.deepEqual(Object.keys(screen.members), [kimClient.session], "a new connection, a new member id");
  assert.deepEqual(screen.members[kimClient.session].data, { name: "kim", status: "away" });
});

/** A small seeded generator (mulberry32), so a failing run can be replayed with TETHER_SEED. */
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6D2B79F5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

test("200 random todo actions from two clients converge to the daemon's snapshot", async (t) => {
  const seed = Number(process.env.TETHER_SEED ?? Date.now() % 1_000_000);
  t.diagnostic(`seed ${seed} (TETHER_SEED replays it)`);
  const daemon = await startDaemon(t);
  const name = "todo:random";
  const a = client(t, daemon.url).room(name);
  const b = client(t, daemon.url).room(name);
  await a.ready();
  await b.ready();
  const outcomes = { acked: 0, refused: 0 };

  /** 100 actions in bursts of 1–5 sent without waiting, so patches and acks interleave. */
  async function act(room, next) {
    const pick = (items) => items[Math.floor(next() * items.length)];
    let sent = 0;
    while (sent < 100) {
      const burst = [];
      for (let n = 1 + Math.floor(next() * 5); n > 0 && sent < 100; n--, sent++) {
        const items = room.state.items;
        const roll = next();
        let request;
        if (items.length === 0 || roll < 0.35) request = ["add", { title: `item ${sent} ${Math.floor(next() * 1000)}` }];
        else if (roll < 0.55) request = ["toggle", { id: pick(items).id }];
        else if (roll < 0.7) request = ["rename", { id: pick(items).id, title: `renamed ${Math.floor(next() * 1000)}` }];
        else if (roll < 0.92) request = ["remove", { id: pick(items).id }];
        else request = ["clearCompleted", undefined];
        burst.push(room.send(...request).then(
          () => { outcomes.acked++; },
          (error) => {
            // Another client may have removed the item first: the server says so, and that
            // nothing changed.
            if (error.code !== "invalid_args" || error.applied !== false) throw error;
            outcomes.refused++;
          }));
      }
      await Promise.all(burst);
    }
  }
  await Promise.all([act(a, random(seed)), act(b, random(seed + 1))]);
  assert.equal(outcomes.acked + outcomes.refused, 200);
  assert.ok(outcomes.acked >= 100, `only ${outcomes.acked} actions were applied`);

  const fresh = client(t, daemon.url).room(name);
  await fresh.ready();
  await waitFor(() => a.version === fresh.version && b.version === fresh.version, `both mirrors at version ${fresh.version}`, 10_000);
  assert.deepEqual(a.state, fresh.state, `seed ${seed}`);
  assert.deepEqual(b.state, fresh.state, `seed ${seed}`);
  assert.equal(a.epoch, fresh.epoch);
  const snapshot = await swiftSnapshot(t, daemon.url, name);
  assert.deepEqual(snapshot.state, fresh.state, "the Swift client sees the same state");
  t.diagnostic(`acked ${outcomes.acked}, refused ${outcomes.refused}, final version ${fresh.version}, ${fresh.state.items.length} items`);
});

test("against a daemon with --compression on, Node's WebSocket negotiates permessage-deflate and tether.js converges", async (t) => {
  // 256 bytes: a toggle's patch stays plain, an add with a 200-character title goes compressed.
  const daemon = await startDaemon(t, { args: ["--memory-only", "--compression", "on", "--compression-min-bytes", "256"] });
  const probe = new WebSocket(daemon.url, "tether.v1");
  t.after(() => probe.close());
  await new Promise((resolve, reject) => { probe.onopen = resolve; probe.onerror = () => reject(new Error("probe did not open")); });
  assert.match(probe.extensions, /permessage-deflate/, "the runtime offered the extension and the server accepted it");

  const name = "todo:compressed";
  const writer = client(t, daemon.url).room(name);
  await writer.ready();
  const title = (i) => `item ${i}: ` + "abcdefghij klmnopqrst uvwxyz ".repeat(7).slice(0, 190);
  for (let i = 0; i < 40; i++) await writer.send("add", { title: title(i) });
  let last;
  for (let i = 0; i < 40; i += 2) last = await writer.send("toggle", { id: writer.state.items[i].id });
  await waitFor(() => writer.version === last.version, "the writer at the last version");

  // A fresh client's big snapshot arrives compressed and inflates to the same state.
  const reader = client(t, daemon.url).room(name);
  await reader.ready();
  await waitFor(() => reader.version === last.version, "the reader at the last version");
  assert.equal(reader.state.items.length, 40);
  assert.deepEqual(reader.state, writer.state);
  const snapshot = await swiftSnapshot(t, daemon.url, name);
  assert.equal(snapshot.version, last.version);
  assert.deepEqual(snapshot.state, writer.state);
});
