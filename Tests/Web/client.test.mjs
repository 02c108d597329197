// tether.js against a scripted server: each test plays the server's side message by message.
// Needs a global WebSocket: `node --experimental-websocket --test Tests/Web/` on Node 20.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { TetherClient, TetherError, backoffDelay, displayName } from "../../Clients/web/tether.js";
import { ScriptedServer, waitFor, nextEvent } from "./support/scripted-server.mjs";
import { connect, joinWithSnapshot } from "./support/connect.mjs";

if (typeof globalThis.WebSocket !== "function") {
  throw new Error("these tests need a global WebSocket: run `node --experimental-websocket --test Tests/Web/` (Node 20)");
}

describe("connecting and joining", () => {
  test("offers tether.v1, goes live on hello, joins with an id and the token", async (t) => {
    const server = await ScriptedServer.start({ hello: false });
    const client = new TetherClient(server.url, { token: "tok" });
    t.after(async () => { client.close(); await server.close(); });
    const states = [];
    client.on("state", (state) => states.push(state));
    const room = client.room("counter");
    assert.equal(client.state, "connecting");
    const connection = await server.nextConnection();
    assert.deepEqual(connection.offeredProtocols, ["tether.v1"]);
    assert.ok(await connection.silentFor(100), "nothing is sent before the hello");
    assert.equal(client.state, "connecting");
    connection.send({ type: "hello", protocol: 1, server: "scripted/0", session: "abc" });
    const join = await connection.next();
    assert.deepEqual(states, ["live"]);
    assert.equal(client.session, "abc");
    assert.equal(connection.received[0].type, "hello", "the client says who it is first");
    assert.match(connection.hello.client, /^[A-Za-z0-9_-]{22}$/, "128 random bits, base64url");
    assert.equal(connection.hello.client, client.clientId);
    assert.equal(join.type, "join");
    assert.equal(join.room, "counter");
    assert.equal(join.token, "tok");
    assert.ok(Number.isInteger(join.id));
    assert.equal(join.since, undefined);
    assert.equal(room.synced, false);
    connection.send({ type: "snapshot", room: "counter", epoch: "e1", version: 7, state: { count: 3 } });
    const joined = nextEvent(room, "joined");
    connection.send({ type: "ack", id: join.id, room: "counter", version: 7 });
    assert.deepEqual((await joined)[0], { type: "ack", id: join.id, room: "counter", version: 7 });
    assert.equal(room.synced, true);
    assert.deepEqual(room.state, { count: 3 });
    assert.equal(room.version, 7);
    assert.equal(room.epoch, "e1");
  });

  test("a room asked for while live joins at once; the same name gives the same room", async (t) => {
    const { client, connection } = await connect(t);
    const room = client.room("todo:a");
    assert.equal(client.room("todo:a"), room);
    const join = await connection.next();
    assert.equal(join.room, "todo:a");
    assert.equal(join.token, undefined, "no token option, no token member");
  });

  test("a refused join rejects ready() and reports the server's error on the room", async (t) => {
    const { client, connection } = await connect(t);
    const room = client.room("secret");
    const join = await connection.next();
    const ready = room.ready();
    const errorEvent = nextEvent(room, "error");
    connection.send({ type: "error", code: "unauthorized", message: "this server needs a token", id: join.id, room: "secret" });
    await assert.rejects(ready, { name: "TetherError", code: "unauthorized", message: "this server needs a token" });
    assert.equal((await errorEvent)[0].code, "unauthorized");
    assert.equal(room.lastError.code, "unauthorized");
  });

  test("leave sends a leave with an id, resolves with its ack, and the mirror stops", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 1 });
    const left = room.leave();
    const leave = await connection.next();
    assert.equal(leave.type, "leave");
    assert.equal(leave.room, "counter");
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 0, version: 1, ops: [{ op: "replace", path: "/count", value: 2 }] });
    connection.send({ type: "ack", id: leave.id, room: "counter" });
    assert.deepEqual(await left, { type: "ack", id: leave.id, room: "counter" });
    assert.deepEqual(room.state, { count: 1 });
    assert.notEqual(client.room("counter"), room, "a new room after leaving");
  });

  test("a deleted room keeps its last state, stops, and client.room() joins the new one", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "todo:old", { items: [1] }, { version: 3 });
    const errorEvent = nextEvent(room, "error");
    connection.send({ type: "error", code: "room_deleted", message: "room todo:old was deleted", room: "todo:old" });
    assert.equal((await errorEvent)[0].code, "room_deleted");
    assert.equal(room.synced, false);
    assert.deepEqual(room.state, { items: [1] });
    connection.send({ type: "patch", room: "todo:old", epoch: "e1", from: 3, version: 4, ops: [{ op: "replace", path: "/items", value: [] }] });
    const fresh = client.room("todo:old");
    assert.notEqual(fresh, room);
    const join = await connection.nextOfType("join");
    assert.equal(join.since, undefined, "a new room: no resume");
    connection.send({ type: "snapshot", room: "todo:old", epoch: "e2", version: 0, state: { items: [] } });
    await fresh.ready();
    assert.deepEqual(room.state, { items: [1] }, "the old mirror stopped");
  });

  test("setToken rejoins every room with the new token, resuming", async (t) => {
    const { client, connection } = await connect(t, { token: "old" });
    await joinWithSnapshot(client, connection, "counter", { count: 1 }, { version: 4 });
    client.setToken("new");
    const join = await connection.next();
    assert.equal(join.token, "new");
    assert.deepEqual(join.since, { epoch: "e1", version: 4 });
  });
});

describe("mirroring", () => {
  test("patches apply in order; observe fires now and only on real changes of its path", async (t) => {
    const { client, connection } = await connect(t);
    const room = client.room("todo");
    const seen = { items: [], first: [], count: [], root: [] };
    room.observe("/items", (v) => seen.items.push(v));
    room.observe("/items/0/title", (v) => seen.first.push(v));
    room.observe("/count", (v) => seen.count.push(v));
    room.observe("", (v) => seen.root.push(v));
    assert.deepEqual(seen.first, [undefined], "called at once, with undefined before any state");
    await connection.nextOfType("join");
    connection.send({ type: "snapshot", room: "todo", epoch: "e", version: 0, state: { items: [{ title: "a" }], count: 0 } });
    await room.ready();
    const patch = (from, ops) => connection.send({ type: "patch", room: "todo", epoch: "e", from, version: from + 1, ops });
    patch(0, [{ op: "add", path: "/items/-", value: { title: "b" } }]);          // below /items; not /items/0/title
    patch(1, [{ op: "replace", path: "/count", value: 0 }]);                      // touched but unchanged
    patch(2, [{ op: "replace", path: "/items", value: [{ title: "c" }] }]);       // above /items/0/title
    patch(3, [{ op: "move", from: "/items/0", path: "/moved" }]);                 // from-path counts too
    await waitFor(() => room.version === 4, "version 4");
    assert.deepEqual(room.state, { items: [], count: 0, moved: { title: "c" } });
    assert.deepEqual(seen.first, [undefined, "a", "c", undefined]);
    assert.deepEqual(seen.count, [undefined, 0]);
    assert.deepEqual(seen.items.length, 5);
    assert.equal(seen.root.length, 5, "the root sees every change but the no-op");
    assert.deepEqual(room.lastChangedPaths, ["/items/0", "/moved"]);
  });

  test("stop() ends an observation; a throwing listener does not break the mirror", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 0 });
    const values = [];
    const stop = room.observe("/count", (v) => values.push(v));
    const originalError = console.error;
    console.error = () => {};
    t.after(() => { console.error = originalError; });
    room.observe("/count", (v) => { if (v === 1) throw new Error("listener bug"); });
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 0, version: 1, ops: [{ op: "replace", path: "/count", value: 1 }] });
    await waitFor(() => room.version === 1, "version 1");
    stop();
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 1, version: 2, ops: [{ op: "replace", path: "/count", value: 2 }] });
    await waitFor(() => room.version === 2, "version 2");
    assert.deepEqual(values, [0, 1]);
    assert.deepEqual(room.state, { count: 2 });
  });

  test("patch and snapshot events", async (t) => {
    const { client, connection } = await connect(t);
    const room = client.room("counter");
    await connection.next();
    const snapshot = nextEvent(room, "snapshot");
    connection.send({ type: "snapshot", room: "counter", epoch: "e1", version: 2, state: { count: 5 } });
    assert.deepEqual((await snapshot)[0], { epoch: "e1", version: 2, state: { count: 5 }, resynced: false });
    const patch = nextEvent(room, "patch");
    const ops = [{ op: "replace", path: "/count", value: 9 }, { op: "replace", path: "/count", value: 6 }];
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 2, version: 4, ops });
    assert.deepEqual((await patch)[0], { epoch: "e1", from: 2, version: 4, ops, paths: ["/count", "/count"] });
    assert.deepEqual(room.state, { count: 6 }, "a merged patch spanning two versions");
  });

  test("a gap rejoins with since; stale patches are dropped until the resume lands", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 3 }, { version: 3 });
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 5, version: 6, ops: [{ op: "replace", path: "/count", value: 6 }] });
    const rejoin = await connection.next();
    assert.equal(rejoin.type, "join");
    assert.deepEqual(rejoin.since, { epoch: "e1", version: 3 });
    assert.equal(room.synced, false);
    assert.deepEqual(room.state, { count: 3 }, "the gap is not applied");
    // Still the old stream: dropped without another join.
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 6, version: 7, ops: [{ op: "replace", path: "/count", value: 7 }] });
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 3, version: 7, ops: [{ op: "replace", path: "/count", value: 7 }] });
    connection.send({ type: "ack", id: rejoin.id, room: "counter", version: 7 });
    await waitFor(() => room.version === 7, "the resume patch");
    assert.deepEqual(room.state, { count: 7 });
    assert.equal(room.synced, true);
    assert.ok(await connection.silentFor(100), "one rejoin only");
  });

  test("a patch of another epoch rejoins with since", async (t) => {
    const { client, connection } = await connect(t);
    await joinWithSnapshot(client, connection, "counter", { count: 3 }, { version: 3 });
    connection.send({ type: "patch", room: "counter", epoch: "e2", from: 3, version: 4, ops: [] });
    const rejoin = await connection.next();
    assert.deepEqual(rejoin.since, { epoch: "e1", version: 3 });
  });

  test("a patch that does not apply leaves the state, rejoins without since, then resyncs", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 3 }, { version: 3 });
    const warnings = [];
    client.on("warning", (text) => warnings.push(text));
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 3, version: 4, ops: [
      { op: "replace", path: "/count", value: 4 }, { op: "remove", path: "/missing" }] });
    const rejoin = await connection.next();
    assert.equal(rejoin.type, "join");
    assert.equal(rejoin.since, undefined, "a snapshot is needed");
    assert.deepEqual(room.state, { count: 3 });
    assert.equal(room.version, 3);
    assert.match(warnings[0], /does not apply/);
    const resync = nextEvent(client, "resync");
    const snapshot = nextEvent(room, "snapshot");
    connection.send({ type: "snapshot", room: "counter", epoch: "e1", version: 4, state: { count: 4 } });
    assert.equal((await resync)[0], room);
    assert.equal((await snapshot)[0].resynced, true);
    assert.deepEqual(room.state, { count: 4 });
  });

  test("frames that are not messages, unknown types and other rooms are ignored", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 0 });
    const warnings = [];
    client.on("warning", (text) => warnings.push(text));
    connection.send("not json");
    connection.send("[1,2]");
    connection.sendBinary([1, 2, 3]);
    connection.send({ type: "future-thing", room: "counter" });
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: "0", version: 1, ops: [] });
    connection.send({ type: "patch", room: "other", epoch: "e1", from: 0, version: 1, ops: [] });
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 0, version: 1, ops: [{ op: "replace", path: "/count", value: 1 }] });
    await waitFor(() => room.version === 1, "version 1");
    assert.deepEqual(room.state, { count: 1 });
    assert.equal(warnings.length, 4, warnings.join("\n"));
    assert.equal(client.state, "live");
  });
});

describe("actions and requests", () => {
  test("send resolves with the ack; the action carries its number", async (t) => {
    const { client, connection } = await connect(t);
    const sent = client.room("counter").send("increment", { by: 2 });
    const join = await connection.next();
    assert.equal(join.type, "join");
    const action = await connection.next();
    assert.deepEqual(action, { type: "action", room: "counter", name: "increment", args: { by: 2 }, id: action.id, seq: 1 });
    connection.send({ type: "ack", id: action.id, room: "counter", version: 9 });
    assert.deepEqual(await sent, { type: "ack", id: action.id, room: "counter", version: 9 });
    assert.ok(client.lastActionLatency >= 0);
  });

  test("an action without args has no args member", async (t) => {
    const { client, connection } = await connect(t);
    const sent = client.send("counter", "reset");
    const action = await connection.next();
    assert.equal(Object.hasOwn(action, "args"), false);
    connection.send({ type: "ack", id: action.id, room: "counter", version: 1 });
    await sent;
  });

  test("a server error rejects with {code, message}", async (t) => {
    const { client, connection } = await connect(t);
    const sent = client.send("counter", "fly");
    const action = await connection.next();
    connection.send({ type: "error", code: "unknown_action", message: 'unknown action "fly"', id: action.id, room: "counter", applied: false });
    await assert.rejects(sent, (error) => error instanceof TetherError && error.code === "unknown_action"
      && error.message === 'unknown action "fly"' && error.id === action.id && error.room === "counter" && error.applied === false);
  });

  test("an error that says applied: false settles the action; one without applied is unknown and sent again", async (t) => {
    const { client, connection } = await connect(t);
    const refused = client.send("counter", "increment");
    const first = await connection.next();
    connection.send({ type: "error", code: "unavailable", message: "closing", id: first.id, room: "counter", applied: false });
    await assert.rejects(refused, { code: "unavailable", applied: false });
    // A server older than `applied` did not say: taken as unknown, so the number goes again.
    const sent = client.send("counter", "increment");
    const second = await connection.next();
    connection.send({ type: "error", code: "internal", message: "owner lost", id: second.id, room: "counter" });
    const again = await connection.next(2000);
    assert.equal(again.seq, second.seq);
    connection.send({ type: "ack", id: again.id, room: "counter", version: 3 });
    assert.equal((await sent).version, 3);
  });

  test("a sent action has no timeout: its answer, however late, settles it", async (t) => {
    const { client, connection } = await connect(t, { actionTimeout: 100 });
    const sent = client.send("counter", "increment");
    const action = await connection.next();
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(client.pendingActions, [{ room: "counter", name: "increment", args: undefined, seq: action.seq, sent: true }]);
    connection.send({ type: "ack", id: action.id, room: "counter", version: 1 });
    assert.equal((await sent).version, 1);
    assert.ok(client.lastActionLatency >= 290, "from the first send to the ack");
    assert.equal(client.state, "live");
  });

  test("describe sends a describe with an id and resolves with the kinds", async (t) => {
    const { client, connection } = await connect(t);
    const all = client.describe();
    const request = await connection.next();
    assert.deepEqual(request, { type: "describe", id: request.id });
    const kinds = [{ name: "todo", scope: "shared", actions: [{ name: "add", args: { title: { type: "string" } } }] }];
    connection.send({ type: "description", id: request.id, kinds });
    assert.deepEqual(await all, kinds);
    const one = client.describe("nope");
    const second = await connection.next();
    assert.deepEqual(second, { type: "describe", kind: "nope", id: second.id });
    connection.send({ type: "error", code: "unknown_room", message: "no room kind", id: second.id });
    await assert.rejects(one, { code: "unknown_room", message: "no room kind" });
  });

  test("describe keeps its timeout", async (t) => {
    const { client, connection } = await connect(t, { actionTimeout: 100 });
    const described = client.describe();
    await connection.next();
    await assert.rejects(described, { code: "timeout" });
  });

  test("not connected: describe fails at once with not_connected, send waits in the queue", async (t) => {
    const server = await ScriptedServer.start({ hello: false });
    const client = new TetherClient(server.url);
    t.after(async () => { client.close(); await server.close(); });
    await assert.rejects(client.describe(), { code: "not_connected", applied: false });
    const sent = client.send("counter", "increment");
    const connection = await server.nextConnection();
    connection.send({ type: "hello", protocol: 1, server: "scripted/0", session: "s" });
    const action = await connection.next();
    assert.equal(action.type, "action");
    connection.send({ type: "ack", id: action.id, room: "counter", version: 1 });
    await sent;
  });

  test("a drop before the answer: describe fails with not_connected, setPresence resolves with null, the action is sent again", async (t) => {
    const { server, client, connection } = await connect(t, { reconnect: { initialDelay: 10, maxDelay: 20 } });
    const room = client.room("todo", { presence: { name: "kim" } });
    await connection.nextOfType("join");
    const described = client.describe();
    const presence = room.setPresence({ name: "kim", editing: "t1" });
    const sent = client.send("counter", "increment");
    const action = await connection.nextOfType("action");
    connection.drop();
    await assert.rejects(described, { code: "not_connected", applied: false });
    assert.equal(await presence, null, "the rejoin carries the data");
    const next = await server.nextConnection();
    const rejoin = await next.nextOfType("join");
    assert.deepEqual(rejoin.presence, { name: "kim", editing: "t1" });
    const again = await next.nextOfType("action");
    assert.equal(again.seq, action.seq);
    next.send({ type: "ack", id: again.id, room: "counter", version: 2 });
    assert.equal((await sent).version, 2);
    // Updates while not connected resolve at once: the next join carries them.
    next.drop();
    await waitFor(() => client.state === "reconnecting", "reconnecting");
    assert.equal(await room.setPresence({ name: "kim", editing: "t2" }), null);
    const third = await server.nextConnection();
    assert.deepEqual((await third.nextOfType("join")).presence, { name: "kim", editing: "t2" });
  });
});

describe("reconnecting", () => {
  test("backoffDelay: doubles from 200 ms, caps at 5 s, jitter 0.5–1", () => {
    assert.equal(backoffDelay(1, {}, () => 1), 200);
    assert.equal(backoffDelay(1, {}, () => 0), 100);
    assert.equal(backoffDelay(2, {}, () => 1), 400);
    assert.equal(backoffDelay(5, {}, () => 1), 3200);
    assert.equal(backoffDelay(6, {}, () => 1), 5000);
    assert.equal(backoffDelay(30, {}, () => 0), 2500);
    assert.equal(backoffDelay(3, { initialDelay: 10, multiplier: 3, maxDelay: 50 }, () => 1), 50);
    for (let i = 0; i < 100; i++) {
      const delay = backoffDelay(3);
      assert.ok(delay >= 400 && delay <= 800, `${delay}`);
    }
  });

  test("reconnects with growing delays and resumes every room with since", async (t) => {
    const { server, client, connection } = await connect(t);
    const { room: counter } = await joinWithSnapshot(client, connection, "counter", { count: 5 }, { epoch: "E", version: 5 });
    const { room: todo } = await joinWithSnapshot(client, connection, "todo", { items: [] }, { epoch: "T", version: 2 });
    const states = [];
    client.on("state", (state, info) => states.push({ state, ...info }));
    let snapshots = 0;
    counter.on("snapshot", () => snapshots++);
    server.refuseUpgrades = 2;
    const droppedAt = Date.now();
    connection.close(1001, "going away");
    const next = await server.nextConnection(5000);
    const reconnectedAt = Date.now();

    const reconnecting = states.filter((s) => s.state === "reconnecting");
    assert.deepEqual(reconnecting.map((s) => s.attempt), [1, 2, 3]);
    assert.match(reconnecting[0].reason, /1001/);
    for (const { attempt, delay } of reconnecting) {
      const base = Math.min(200 * 2 ** (attempt - 1), 5000);
      assert.ok(delay >= base / 2 && delay <= base, `attempt ${attempt}: ${delay} ms`);
    }
    const waited = reconnecting.reduce((sum, s) => sum + s.delay, 0);
    assert.ok(reconnectedAt - droppedAt >= waited - 20, `reconnected after ${reconnectedAt - droppedAt} ms, delays sum to ${waited}`);
    const attempts = server.attempts.slice(-3);
    assert.deepEqual(attempts.map((a) => a.refused), [true, true, false]);
    assert.ok(attempts[1].at - attempts[0].at >= reconnecting[1].delay - 20, "the second wait is respected");

    const joins = [await next.next(), await next.next()];
    const byRoom = Object.fromEntries(joins.map((j) => [j.room, j]));
    assert.deepEqual(byRoom.counter.since, { epoch: "E", version: 5 });
    assert.deepEqual(byRoom.todo.since, { epoch: "T", version: 2 });
    assert.equal(states.at(-1).state, "live");
    next.send({ type: "patch", room: "counter", epoch: "E", from: 5, version: 6, ops: [{ op: "replace", path: "/count", value: 6 }] });
    await waitFor(() => counter.version === 6, "the resumed patch");
    assert.equal(snapshots, 0, "resumed with a patch, not a snapshot");
    assert.deepEqual(counter.state, { count: 6 });
    assert.equal(todo.synced, false, "todo waits for its resume");
    next.send({ type: "patch", room: "todo", epoch: "T", from: 2, version: 2, ops: [] });
    await todo.ready();
  });

  test("every connection says the same hello: the client id lasts the client's life", async (t) => {
    globalThis.localStorage = new Map();
    globalThis.localStorage.getItem = globalThis.localStorage.get;
    globalThis.localStorage.setItem = globalThis.localStorage.set;
    t.after(() => { delete globalThis.localStorage; });
    const { server, client, connection } = await connect(t);
    await waitFor(() => connection.hello, "the first hello");
    connection.drop();
    const second = await server.nextConnection();
    await waitFor(() => second.hello, "the second hello");
    assert.deepEqual(second.hello, connection.hello);
    assert.equal(connection.hello.user, globalThis.localStorage.get("tether.user"), "the browser's stable id, stored");
    assert.notEqual(connection.hello.user, client.clientId);
    const other = new TetherClient(server.url);
    t.after(() => other.close());
    assert.notEqual(other.clientId, client.clientId, "each client its own id");
    assert.equal(other.user, client.user, "one browser, one user");
  });

  test("the attempt count restarts after a hello", async (t) => {
    const { server, client, connection } = await connect(t);
    const attempts = [];
    client.on("state", (state, info) => { if (state === "reconnecting") attempts.push(info.attempt); });
    connection.drop();
    const second = await server.nextConnection();
    await client.connected();
    await waitFor(() => client.state === "live", "live");
    second.drop();
    await server.nextConnection();
    assert.deepEqual(attempts, [1, 1]);
  });

  test("several URLs are tried round robin", async (t) => {
    const a = await ScriptedServer.start();
    const b = await ScriptedServer.start();
    const client = new TetherClient([a.url, b.url], { reconnect: { initialDelay: 10 } });
    t.after(async () => { client.close(); await a.close(); await b.close(); });
    const order = [];
    const track = (name, server) => server.nextConnection().then((c) => { order.push(name); return c; });
    const first = await track("a", a);
    await client.connected();
    assert.equal(client.url, a.url);
    first.drop();
    const second = await track("b", b);
    await waitFor(() => client.state === "live", "live on b");
    assert.equal(client.url, b.url);
    second.drop();
    const third = await track("a", a);
    await waitFor(() => client.state === "live", "live on a");
    assert.deepEqual(order, ["a", "b", "a"]);
    // A dead URL is skipped over on the next attempt.
    await b.close();
    third.drop();
    const fourth = await track("a", a);
    await waitFor(() => client.state === "live", "live on a again");
    assert.deepEqual(order, ["a", "b", "a", "a"]);
    assert.equal(a.attempts.length, 3);
    fourth.drop();
  });

  test("without reconnect a drop closes the client", async (t) => {
    const { client, connection } = await connect(t, { reconnect: { enabled: false } });
    const sent = client.send("counter", "increment");
    await connection.next();
    const closed = nextEvent(client, "state");
    connection.drop();
    const [state, info] = await closed;
    assert.equal(state, "closed");
    assert.match(info.reason, /connection closed/);
    await assert.rejects(client.connected(), { code: "closed" });
    // Sent, never answered, and never to be sent again: the only "maybe".
    await assert.rejects(sent, { code: "closed", applied: "unknown" });
  });

  test("close() stops for good: closed state, pending fail, no reconnect", async (t) => {
    const { server, client, connection } = await connect(t);
    const room = client.room("counter");
    await connection.next();
    const ready = room.ready();
    const sent = client.send("counter", "increment");
    await connection.next();
    client.close();
    assert.equal(client.state, "closed");
    await assert.rejects(sent, { code: "closed", applied: "unknown" });
    await assert.rejects(ready, { code: "closed" });
    await connection.closed;
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(server.unclaimedConnections, 0, "no reconnect after close");
    assert.equal(server.attempts.length, 1);
    await assert.rejects(client.send("counter", "increment"), { code: "closed", applied: false });
  });

  test("an unreachable server keeps the client reconnecting", async (t) => {
    const server = await ScriptedServer.start();
    const url = server.url;
    await server.close();
    const client = new TetherClient(url, { reconnect: { initialDelay: 10, maxDelay: 20 } });
    t.after(() => client.close());
    const [state, info] = await nextEvent(client, "state");
    assert.equal(state, "reconnecting");
    assert.match(info.reason, /cannot connect/);
    await waitFor(() => client.stateInfo.attempt >= 3, "three attempts");
  });

  test("bad arguments throw at once", () => {
    assert.throws(() => new TetherClient("http://x"), TypeError);
    assert.throws(() => new TetherClient("not a url"), TypeError);
    assert.throws(() => new TetherClient([]), TypeError);
    assert.throws(() => new TetherClient("ws://x", { WebSocket: "not a constructor" }), TypeError);
  });
});

describe("presence", () => {
  const kim = { user: "s1", data: { name: "kim" } };
  const lee = { user: "s2", data: { name: "lee" } };

  /** Opens `name` with `options`, answers its join with a snapshot, a presence snapshot and an ack. */
  async function joinWithPresence(client, connection, name, options, members, { presenceVersion = 1 } = {}) {
    const room = client.room(name, options);
    const join = await connection.nextOfType("join");
    const joined = nextEvent(room, "joined");
    connection.send({ type: "snapshot", room: name, epoch: "e1", version: 0, state: { items: [] } });
    connection.send({ type: "presence", room: name, version: presenceVersion, members });
    connection.send({ type: "ack", id: join.id, room: name, version: 0 });
    await joined;
    return { room, join };
  }

  test("a join carries the presence data, or watchPresence for a spectator, or neither", async (t) => {
    const { client, connection } = await connect(t);
    client.room("todo:a", { presence: { name: "kim" } });
    const member = await connection.next();
    assert.deepEqual(member.presence, { name: "kim" });
    assert.equal(member.watchPresence, undefined);
    client.room("todo:b", { watchPresence: true });
    const spectator = await connection.next();
    assert.equal(spectator.presence, undefined);
    assert.equal(spectator.watchPresence, true);
    client.room("todo:c");
    const plain = await connection.next();
    assert.equal(Object.hasOwn(plain, "presence") || Object.hasOwn(plain, "watchPresence"), false, JSON.stringify(plain));
    client.room("todo:d", { presence: {}, watchPresence: true });
    assert.deepEqual((await connection.next()).presence, {}, "listed: watching adds nothing");
  });

  test("members mirror the presence snapshot, then each presence_patch, with events naming who changed", async (t) => {
    const { client, connection } = await connect(t);
    const events = [];
    const room = client.room("todo", { watchPresence: true });
    room.on("members", (event) => events.push(event));
    assert.equal(room.members, null);
    const join = await connection.next();
    connection.send({ type: "snapshot", room: "todo", epoch: "e1", version: 0, state: { items: [] } });
    connection.send({ type: "presence", room: "todo", version: 2, members: { s1: kim } });
    connection.send({ type: "ack", id: join.id, room: "todo", version: 0 });
    await waitFor(() => room.presenceVersion === 2, "the presence snapshot");
    assert.deepEqual(room.members, { s1: kim });
    assert.deepEqual(events.at(-1), { members: { s1: kim }, version: 2, joined: ["s1"], left: [], changed: [] });

    const before = room.members;
    connection.send({ type: "presence_patch", room: "todo", from: 2, version: 3, ops: [{ op: "add", path: "/s2", value: lee }] });
    await waitFor(() => room.presenceVersion === 3, "the add");
    assert.deepEqual(room.members, { s1: kim, s2: lee });
    assert.deepEqual(before, { s1: kim }, "replaced, never edited");
    assert.deepEqual(events.at(-1), { members: { s1: kim, s2: lee }, version: 3, joined: ["s2"], left: [], changed: [] });
    // A merged patch: kim says more, lee leaves.
    connection.send({ type: "presence_patch", room: "todo", from: 3, version: 5, ops: [
      { op: "replace", path: "/s1/data", value: { name: "kim", editing: "t3" } }, { op: "remove", path: "/s2" }] });
    await waitFor(() => room.presenceVersion === 5, "the merged patch");
    assert.deepEqual(room.members, { s1: { user: "s1", data: { name: "kim", editing: "t3" } } });
    assert.deepEqual(events.at(-1), { members: room.members, version: 5, joined: [], left: ["s2"], changed: ["s1"] });
    assert.deepEqual(Object.values(room.members).map(displayName), ["kim"]);
    assert.equal(displayName({ user: "alice", data: {} }), "alice");
    // The state's stream is untouched by presence.
    assert.equal(room.version, 0);
  });

  test("a presence gap rejoins with since and the same data; older presence patches wait for the new snapshot", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithPresence(client, connection, "todo", { presence: { name: "kim" } }, { s1: kim }, { presenceVersion: 4 });
    connection.send({ type: "presence_patch", room: "todo", from: 6, version: 7, ops: [{ op: "add", path: "/s2", value: lee }] });
    const rejoin = await connection.next();
    assert.equal(rejoin.type, "join");
    assert.deepEqual(rejoin.since, { epoch: "e1", version: 0 });
    assert.deepEqual(rejoin.presence, { name: "kim" });
    assert.equal(room.presenceVersion, null);
    assert.deepEqual(room.members, { s1: kim }, "the gap is not applied");
    // Still the old stream: ignored, and no second rejoin.
    connection.send({ type: "presence_patch", room: "todo", from: 7, version: 8, ops: [{ op: "remove", path: "/s1" }] });
    connection.send({ type: "patch", room: "todo", epoch: "e1", from: 0, version: 0, ops: [] });
    connection.send({ type: "presence", room: "todo", version: 8, members: { s1: kim, s2: lee } });
    connection.send({ type: "ack", id: rejoin.id, room: "todo", version: 0 });
    await waitFor(() => room.presenceVersion === 8, "the rejoin's presence snapshot");
    assert.deepEqual(room.members, { s1: kim, s2: lee });
    assert.ok(await connection.silentFor(100), "one rejoin only");
  });

  test("a presence patch that does not apply rejoins and warns", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithPresence(client, connection, "todo", { watchPresence: true }, { s1: kim });
    const warning = nextEvent(client, "warning");
    connection.send({ type: "presence_patch", room: "todo", from: 1, version: 2, ops: [{ op: "remove", path: "/nobody" }] });
    const rejoin = await connection.next();
    assert.equal(rejoin.watchPresence, true);
    assert.match((await warning)[0], /presence patch 1->2 does not apply/);
    assert.deepEqual(room.members, { s1: kim });
  });

  test("a reconnect forgets the members, rejoins with the data last set, and lists them again", async (t) => {
    const { server, client, connection } = await connect(t, { reconnect: { initialDelay: 10, maxDelay: 20 } });
    const { room } = await joinWithPresence(client, connection, "todo", { presence: { name: "kim" } }, { s1: kim });
    const update = room.setPresence({ name: "kim", editing: "t1" });
    const request = await connection.next();
    assert.deepEqual(request, { type: "presence", room: "todo", data: { name: "kim", editing: "t1" }, id: request.id });
    connection.send({ type: "ack", id: request.id, room: "todo" });
    assert.deepEqual(await update, { type: "ack", id: request.id, room: "todo" });
    assert.deepEqual(room.presence, { name: "kim", editing: "t1" });

    const forgotten = nextEvent(room, "members");
    connection.drop();
    assert.deepEqual((await forgotten)[0], { members: null, version: null, joined: [], left: ["s1"], changed: [] });
    assert.equal(room.members, null);
    const next = await server.nextConnection(5000);
    const rejoin = await next.next();
    assert.deepEqual(rejoin.presence, { name: "kim", editing: "t1" });
    next.send({ type: "patch", room: "todo", epoch: "e1", from: 0, version: 0, ops: [] });
    next.send({ type: "presence", room: "todo", version: 1, members: { s3: { user: "s3", data: { name: "kim", editing: "t1" } } } });
    await waitFor(() => room.members !== null, "the members again");
    assert.deepEqual(Object.keys(room.members), ["s3"]);
  });

  test("setPresence needs a room opened with presence; leave forgets the members", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithPresence(client, connection, "todo", { watchPresence: true }, { s1: kim });
    await assert.rejects(room.setPresence({ name: "x" }), { name: "TetherError", code: "invalid_args" });
    assert.equal(room.presence, undefined);
    const left = room.leave();
    assert.equal(room.members, null);
    const leave = await connection.next();
    assert.equal(leave.type, "leave", "nothing was sent for the refused update");
    connection.send({ type: "ack", id: leave.id, room: "todo" });
    await left;
  });

  test("malformed presence frames are ignored with a warning", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithPresence(client, connection, "todo", { watchPresence: true }, { s1: kim });
    const warnings = [];
    client.on("warning", (text) => warnings.push(text));
    connection.send({ type: "presence", room: "todo", version: 9, members: [] });
    connection.send({ type: "presence_patch", room: "todo", from: "1", version: 2, ops: [] });
    connection.send({ type: "presence_patch", room: "todo", from: 1, version: 2, ops: [{ op: "add", path: "/s2", value: lee }] });
    await waitFor(() => room.presenceVersion === 2, "the good patch");
    assert.equal(warnings.length, 2, warnings.join("\n"));
    assert.deepEqual(room.members, { s1: kim, s2: lee });
  });
});
