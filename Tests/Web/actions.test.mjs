// tether.js actions against a scripted server (docs/CLIENTS.md, "Actions"): numbered, queued while
// offline, followed to their answer (sent again after a drop or an "unknown" answer), at most 64
// in flight, visible while waiting, and predicted on a mirror that keeps the server's state apart.
// Needs a global WebSocket: `node --experimental-websocket --test Tests/Web/` on Node 20.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { TetherClient } from "../../Clients/web/tether.js";
import { ScriptedServer, waitFor } from "./support/scripted-server.mjs";
import { connect, joinWithSnapshot } from "./support/connect.mjs";
import { ActionRecord } from "./support/action-record.mjs";

if (typeof globalThis.WebSocket !== "function") {
  throw new Error("these tests need a global WebSocket: run `node --experimental-websocket --test Tests/Web/` (Node 20)");
}

const fast = { reconnect: { initialDelay: 10, maxDelay: 20 } };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Records how a promise settles: {outcome: "pending" | "resolved" | "rejected", value}. */
function track(promise) {
  const record = { outcome: "pending", value: undefined, settlements: 0 };
  promise.then(
    (value) => { record.settlements++; record.outcome = "resolved"; record.value = value; },
    (error) => { record.settlements++; record.outcome = "rejected"; record.value = error; });
  return record;
}

/** A server that does not say hello until the test says so: the client stays "connecting". */
async function startSilent(t, options = {}) {
  const server = await ScriptedServer.start({ hello: false });
  const client = new TetherClient(server.url, { ...fast, ...options });
  t.after(async () => { client.close(); await server.close(); });
  const connection = await server.nextConnection();
  const hello = () => connection.send({ type: "hello", protocol: 1, server: "scripted/0", session: "s1" });
  return { server, client, connection, hello };
}

const patch = (room, from, count) => ({ type: "patch", room, epoch: "e1", from, version: from + 1, ops: [{ op: "replace", path: "/count", value: count }] });
const increment = (state) => { state.count += 1; };

describe("numbered and queued", { timeout: 30_000 }, () => {
  test("a send before live waits, then leaves after the hello and the joins, numbered from 1", async (t) => {
    const { client, connection, hello } = await startSilent(t);
    const room = client.room("counter");
    const first = track(room.send("increment", { by: 1 }));
    const second = track(client.send("counter", "increment", { by: 2 }));
    assert.deepEqual(client.pendingActions.map((a) => [a.seq, a.sent]), [[1, false], [2, false]]);
    assert.ok(await connection.silentFor(100), "nothing leaves before the server's hello");
    hello();
    const join = await connection.next();
    assert.equal(connection.received[0].type, "hello", "our hello first");
    assert.equal(join.type, "join");
    const a = await connection.next();
    const b = await connection.next();
    assert.deepEqual([a.type, a.seq, a.args], ["action", 1, { by: 1 }]);
    assert.deepEqual([b.type, b.seq, b.args], ["action", 2, { by: 2 }]);
    assert.deepEqual(client.pendingActions.map((p) => p.sent), [true, true]);
    connection.send({ type: "ack", id: a.id, room: "counter", version: 1 });
    connection.send({ type: "ack", id: b.id, room: "counter", version: 2 });
    await waitFor(() => second.outcome === "resolved", "both acks");
    assert.equal(first.outcome, "resolved");
    assert.deepEqual(client.pendingActions, []);
  });

  test("numbers go on across rooms and connections, one counter per client", async (t) => {
    const { server, client, connection } = await connect(t, fast);
    const seqs = [];
    for (const room of ["counter", "todo", "counter"]) {
      const sent = client.send(room, "x");
      const action = await connection.next();
      seqs.push(action.seq);
      connection.send({ type: "ack", id: action.id, room, version: 1 });
      await sent;
    }
    connection.drop();
    const next = await server.nextConnection();
    const sent = client.send("counter", "x");
    const action = await next.nextOfType("action");
    seqs.push(action.seq);
    next.send({ type: "ack", id: action.id, room: "counter", version: 2 });
    await sent;
    assert.deepEqual(seqs, [1, 2, 3, 4]);
    const other = new TetherClient(server.url);
    t.after(() => other.close());
    assert.notEqual(other.clientId, client.clientId, "each client its own numbers");
  });

  test("a queued action still not sent after its timeout fails with not_sent, applied false, and never leaves", async (t) => {
    const { client, connection, hello } = await startSilent(t, { actionTimeout: 150 });
    const started = Date.now();
    const late = client.send("counter", "increment");
    const perCall = client.send("counter", "decrement", undefined, { timeout: 50 });
    const patient = track(client.send("counter", "reset", undefined, { timeout: 60_000 }));
    await assert.rejects(perCall, { name: "TetherError", code: "not_sent", applied: false, room: "counter" });
    await assert.rejects(late, { code: "not_sent", applied: false });
    assert.ok(Date.now() - started >= 140, "not before the timeout");
    assert.deepEqual(client.pendingActions.map((a) => a.name), ["reset"]);
    hello();
    const action = await connection.nextOfType("action");
    assert.equal(action.name, "reset");
    assert.equal(action.seq, 3, "the others' numbers are simply unused");
    assert.ok(await connection.silentFor(100), "the timed-out ones are gone");
    connection.send({ type: "ack", id: action.id, room: "counter", version: 1 });
    await waitFor(() => patient.outcome === "resolved", "the ack");
  });

  test("past maxQueuedActions send fails at once with queue_full, applied false", async (t) => {
    const { client } = await startSilent(t, { maxQueuedActions: 3 });
    const queued = [1, 2, 3].map(() => track(client.send("counter", "increment")));
    await assert.rejects(client.send("counter", "increment"), { code: "queue_full", applied: false });
    assert.equal(client.pendingActions.length, 3);
    assert.ok(queued.every((q) => q.outcome === "pending"));
  });

  test("close(): queued actions fail with not_sent (applied false), sent ones with closed (applied unknown)", async (t) => {
    const { client, connection } = await connect(t);
    const room = await joinWithSnapshot(client, connection, "counter", { count: 0 }).then((j) => j.room);
    const sent = room.send("increment", undefined, { predict: increment });
    await connection.nextOfType("action");
    connection.drop();  // the second one now waits in the queue
    await waitFor(() => client.state === "reconnecting", "reconnecting");
    const queued = room.send("decrement");
    assert.deepEqual(client.pendingActions.map((a) => a.sent), [true, false]);
    assert.equal(room.state.count, 1);
    client.close();
    await assert.rejects(sent, { code: "closed", applied: "unknown" });
    await assert.rejects(queued, { code: "not_sent", applied: false });
    assert.deepEqual(client.pendingActions, []);
    assert.deepEqual(room.state, { count: 0 }, "the prediction is gone with its action");
    await assert.rejects(client.send("counter", "increment"), { code: "closed", applied: false });
  });
});

describe("followed to the answer", { timeout: 30_000 }, () => {
  test("a drop after sending: sent again under the same number after the reconnect's hello and joins, in number order with new actions; resolved once", async (t) => {
    const { server, client, connection } = await connect(t, fast);
    await joinWithSnapshot(client, connection, "counter", { count: 0 });
    const sent = track(client.send("counter", "increment", { by: 1 }));
    const sentToo = track(client.send("counter", "increment", { by: 2 }));
    const first = await connection.next();
    const second = await connection.next();
    connection.drop();
    await waitFor(() => client.state === "reconnecting", "reconnecting");
    const newer = track(client.send("counter", "reset"));
    const next = await server.nextConnection();
    await waitFor(() => next.hello, "the second hello");
    const join = await next.next();
    assert.equal(next.received[0].type, "hello");
    assert.equal(join.type, "join");
    // Both may have been applied; neither waits for the other's answer: the room runs a number
    // it has no outcome for, whichever ran first, and answers a repeat with the first outcome.
    const again = await next.next();
    const againToo = await next.next();
    const reset = await next.next();
    assert.equal(again.seq, first.seq, "the same number");
    assert.deepEqual(again.args, { by: 1 });
    assert.notEqual(again.id, first.id, "a new request id is fine");
    assert.equal(againToo.seq, second.seq);
    assert.deepEqual(againToo.args, { by: 2 });
    assert.equal(reset.name, "reset");
    assert.equal(reset.seq, second.seq + 1);
    assert.equal(sent.outcome, "pending");
    // Answered out of order: the later numbers first.
    next.send(patch("counter", 0, 2));
    next.send({ type: "ack", id: againToo.id, room: "counter", version: 1 });
    next.send(patch("counter", 1, 0));
    next.send({ type: "ack", id: reset.id, room: "counter", version: 2 });
    await waitFor(() => newer.outcome === "resolved", "the reset's ack");
    assert.equal(sentToo.outcome, "resolved");
    assert.equal(sent.outcome, "pending");
    next.send(patch("counter", 2, 1));
    next.send({ type: "ack", id: again.id, room: "counter", version: 3 });
    next.send({ type: "ack", id: again.id, room: "counter", version: 3 });  // a duplicated frame
    await waitFor(() => sent.outcome === "resolved", "the first's ack");
    assert.equal(sent.value.version, 3);
    assert.equal(sent.settlements, 1);
    assert.deepEqual(client.pendingActions, []);
    assert.ok(await next.silentFor(100), "nothing sent a third time");
  });

  test("while an action that may have been applied pauses before going again, later ones go", async (t) => {
    const { client, connection } = await connect(t);
    const first = track(client.send("counter", "increment"));
    const a = await connection.next();
    const answeredAt = Date.now();
    connection.send({ type: "error", code: "unavailable", message: "owner lost", id: a.id, room: "counter", applied: "unknown" });
    await sleep(50);  // the answer is in: the action pauses
    const later = track(client.send("counter", "reset"));
    const reset = await connection.next(100);
    assert.equal(reset.name, "reset", "the new action does not wait for the pause");
    assert.equal(reset.seq, a.seq + 1);
    connection.send({ type: "ack", id: reset.id, room: "counter", version: 1 });
    await waitFor(() => later.outcome === "resolved", "the reset's ack");
    assert.equal(first.outcome, "pending");
    const again = await connection.next(1000);
    assert.ok(Date.now() - answeredAt >= 240, `paused ${Date.now() - answeredAt} ms`);
    assert.equal(again.seq, a.seq);
    connection.send({ type: "ack", id: again.id, room: "counter", version: 2 });
    await waitFor(() => first.outcome === "resolved", "the first's ack");
  });

  test("an 'unknown' answer: sent again after 250 ms, then 500 ms, until an answer settles it", async (t) => {
    const { client, connection } = await connect(t);
    const sent = track(client.send("counter", "increment"));
    const first = await connection.next();
    let answeredAt = Date.now();
    connection.send({ type: "error", code: "unavailable", message: "owner lost", id: first.id, room: "counter", applied: "unknown" });
    const second = await connection.next(2000);
    assert.ok(Date.now() - answeredAt >= 240, `paused ${Date.now() - answeredAt} ms`);
    assert.equal(second.seq, first.seq);
    answeredAt = Date.now();
    connection.send({ type: "error", code: "internal", message: "unreadable", id: second.id, room: "counter", applied: "unknown" });
    const third = await connection.next(2000);
    assert.ok(Date.now() - answeredAt >= 490, `paused ${Date.now() - answeredAt} ms, doubling`);
    assert.equal(third.seq, first.seq);
    assert.equal(sent.outcome, "pending");
    assert.deepEqual(client.pendingActions.map((a) => a.sent), [true]);
    connection.send({ type: "ack", id: third.id, room: "counter", version: 4 });
    await waitFor(() => sent.outcome === "resolved", "the ack");
    assert.equal(sent.value.version, 4);
  });

  test("unavailable after a dropped send is sent again; without an earlier send that may have applied, it settles", async (t) => {
    const { server, client, connection } = await connect(t, fast);
    const sent = track(client.send("counter", "increment"));
    const first = await connection.next();
    connection.drop();
    const next = await server.nextConnection();
    const second = await next.nextOfType("action");
    assert.equal(second.seq, first.seq);
    // "This send ran nothing" is not "no send of it was applied": the first may have been.
    next.send({ type: "error", code: "unavailable", message: "changing owners", id: second.id, room: "counter", applied: false });
    const third = await next.next(2000);
    assert.equal(third.seq, first.seq);
    next.send({ type: "error", code: "rate_limited", message: "too fast", id: third.id, room: "counter", applied: false });
    const fourth = await next.next(2000);
    assert.equal(fourth.seq, first.seq);
    next.send({ type: "ack", id: fourth.id, room: "counter", version: 1 });
    await waitFor(() => sent.outcome === "resolved", "the ack");

    const fresh = client.send("counter", "increment");
    const only = await next.next();
    next.send({ type: "error", code: "rate_limited", message: "too fast", id: only.id, room: "counter", applied: false });
    await assert.rejects(fresh, { code: "rate_limited", applied: false });
    assert.ok(await next.silentFor(400), "settled: not sent again");
  });

  test("a settling error rejects once; stale_action settles as unknown; neither is sent again", async (t) => {
    const { client, connection } = await connect(t);
    const refused = track(client.send("counter", "increment", { by: "two" }));
    const action = await connection.next();
    const error = { type: "error", code: "invalid_args", message: "expected integer at args.by", id: action.id, room: "counter", applied: false };
    connection.send(error);
    connection.send(error);  // a duplicated frame changes nothing
    await waitFor(() => refused.outcome === "rejected", "the error");
    assert.equal(refused.value.code, "invalid_args");
    assert.equal(refused.value.applied, false);
    assert.equal(refused.value.reason, undefined, "only a contract's refusal has a reason");
    const overflow = track(client.send("counter", "increment", { by: 1 }));
    const big = await connection.next();
    connection.send({ type: "error", code: "invalid_args", message: "count would overflow", id: big.id, room: "counter", applied: false, reason: "overflow" });
    await waitFor(() => overflow.outcome === "rejected", "the refusal");
    assert.equal(overflow.value.reason, "overflow");
    const stale = track(client.send("counter", "increment"));
    const old = await connection.next();
    connection.send({ type: "error", code: "stale_action", message: "no longer remembered", id: old.id, room: "counter", applied: "unknown" });
    await waitFor(() => stale.outcome === "rejected", "stale_action");
    assert.equal(stale.value.code, "stale_action");
    assert.equal(stale.value.applied, "unknown");
    assert.ok(await connection.silentFor(400), "nothing sent again");
    assert.equal(refused.settlements + stale.settlements, 2);
  });

  test("at most 64 in flight: of 70 sends, 64 leave; each answer lets the next one go", async (t) => {
    const { client, connection } = await connect(t);
    const sends = [];
    for (let i = 0; i < 70; i++) sends.push(track(client.send("counter", "increment")));
    const out = [];
    for (let i = 0; i < 64; i++) out.push(await connection.next());
    assert.deepEqual(out.map((m) => m.seq), Array.from({ length: 64 }, (_, i) => i + 1));
    assert.ok(await connection.silentFor(150), "the 65th waits while 1 is unanswered");
    assert.equal(client.pendingActions.filter((a) => a.sent).length, 64);
    // An answer to a later one does not move the window: 1 is still the oldest unanswered.
    connection.send({ type: "ack", id: out[5].id, room: "counter", version: 6 });
    await waitFor(() => sends[5].outcome === "resolved", "the ack of 6");
    assert.ok(await connection.silentFor(100), "still 64 numbers from the oldest");
    connection.send({ type: "ack", id: out[0].id, room: "counter", version: 1 });
    const next = await connection.next();
    assert.equal(next.seq, 65);
    assert.ok(await connection.silentFor(100), "one answer, one more");
    connection.send({ type: "ack", id: out[1].id, room: "counter", version: 2 });
    assert.equal((await connection.next()).seq, 66);
  });

  test("a number refused after a drop and sent again once later ones ran still runs: the server's record lets go of its lowest number, not its first recorded", async (t) => {
    const { server, client, connection } = await connect(t, fast);
    const sends = [];
    for (let i = 1; i <= 66; i++) sends.push(track(client.send("counter", "increment")));
    const first = [];
    for (let i = 0; i < 64; i++) first.push(await connection.next());
    assert.deepEqual(first.map((m) => m.seq), Array.from({ length: 64 }, (_, i) => i + 1));
    assert.ok(await connection.silentFor(100), "65 and 66 wait outside the window");

    // From the second connection on, a server with tetherd's record (support/action-record.mjs):
    // on the resend, 1, 2 and 3 are refused before running; 3 is refused until 65 and 66 ran, so
    // it is recorded after 64 others and its retry comes when the record is full.
    const record = new ActionRecord();
    const ran = [];
    const log = [];
    const refused = new Set();
    server.handleConnections((next) => next.handle((message) => {
      if (message.type !== "action") return;
      const answer = (reply) => {
        log.push(`seq ${message.seq}: ${reply.type === "ack" ? `ack v${reply.version}` : `${reply.code} (${reply.message})`}`);
        next.send({ ...reply, id: message.id, room: message.room });
      };
      const found = record.lookup(message.seq);
      if (found.kind === "repeated") return answer(found.outcome);
      if (found.kind === "forgotten") {
        return answer({ type: "error", code: "stale_action", message: `older than this room remembers (forgottenUpTo ${record.forgottenUpTo})`, applied: "unknown" });
      }
      if ((message.seq <= 2 && !refused.has(message.seq)) || (message.seq === 3 && !(ran.includes(65) && ran.includes(66)))) {
        refused.add(message.seq);
        return answer({ type: "error", code: "rate_limited", message: "too fast", applied: false });
      }
      ran.push(message.seq);
      const ack = { type: "ack", version: ran.length };
      record.record(message.seq, ack);
      answer(ack);
    }));
    // Dropped with 1-64 unanswered: each may have been applied, so a refusal does not settle it.
    connection.drop();

    await waitFor(() => sends.every((s) => s.outcome !== "pending"), "every send settled", 10_000);
    for (const [index, send] of sends.entries()) {
      const told = log.filter((line) => !/^seq ([4-9]|[1-5]\d|6[0-4]): ack/.test(line));  // all but 4-64 running
      assert.equal(send.outcome, "resolved", `seq ${index + 1}: ${send.value?.code}; the server: ${told.join("; ")}`);
      assert.equal(send.settlements, 1);
    }
    assert.deepEqual([...ran].sort((a, b) => a - b), Array.from({ length: 66 }, (_, i) => i + 1), "each number ran once");
    assert.deepEqual(ran.slice(0, 61), Array.from({ length: 61 }, (_, i) => i + 4), "4-64 ran on the resend, 1-3 refused");
    assert.deepEqual(log.slice(0, 3), [1, 2, 3].map((seq) => `seq ${seq}: rate_limited (too fast)`));
    assert.equal(ran.at(-1), 3, `3 ran last, after 1, 2, 65 and 66: ${ran.slice(61).join(", ")}`);
    assert.equal(sends[2].value.version, 66);
    assert.equal(record.forgottenUpTo, 2, "1 and 2, the lowest, were let go of");
    assert.deepEqual(client.pendingActions, []);
  });

  test("pendingActions and the pending event follow every change", async (t) => {
    const { client, connection, hello } = await startSilent(t);
    const events = [];
    client.on("pending", (pending) => events.push(pending.map(({ name, seq, sent }) => `${name}#${seq}${sent ? "*" : ""}`).join(" ")));
    const a = client.send("counter", "increment", { by: 1 });
    client.send("todo", "add", { title: "milk" }, { timeout: 30 }).catch(() => {});
    assert.deepEqual(client.pendingActions[1], { room: "todo", name: "add", args: { title: "milk" }, seq: 2, sent: false });
    await waitFor(() => client.pendingActions.length === 1, "the timeout");
    hello();
    const action = await connection.nextOfType("action");
    connection.send({ type: "ack", id: action.id, room: "counter", version: 1 });
    await a;
    assert.deepEqual(events, ["increment#1", "increment#1 add#2", "increment#1", "increment#1*", ""]);
    // A fresh array each time: changing it changes nothing.
    client.pendingActions.push({});
    assert.deepEqual(client.pendingActions, []);
  });
});

describe("prediction", { timeout: 30_000 }, () => {
  test("shown at once; the server's state kept apart; dropped on the ack, whose patch came first", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 0 });
    const seen = [];
    room.observe("/count", (count) => seen.push(count));
    const before = room.state;
    const sent = room.send("increment", { by: 1 }, { predict: increment });
    assert.deepEqual(room.state, { count: 1 }, "at once");
    assert.deepEqual(room.serverState, { count: 0 });
    assert.deepEqual(before, { count: 0 }, "replaced, never edited");
    assert.deepEqual(seen, [0, 1]);
    const action = await connection.nextOfType("action");
    connection.send(patch("counter", 0, 1));
    // Until the ack the mirror cannot tell this patch is the action's: it waits 20 ms for it
    // (the server's state has it at once), then both show.
    await waitFor(() => room.version === 1, "the patch");
    assert.deepEqual(room.serverState, { count: 1 });
    assert.deepEqual(room.state, { count: 1 }, "the patch waits for an answer");
    await waitFor(() => room.state.count === 2, "the patch shown, 20 ms on");
    connection.send({ type: "ack", id: action.id, room: "counter", version: 1 });
    await sent;
    assert.deepEqual(room.state, { count: 1 }, "+1, not +2, after the ack");
    assert.equal(room.state, room.serverState, "nothing predicted any more");
    assert.deepEqual(seen, [0, 1, 2, 1]);
  });

  test("a patch and its ack in one write: the action shows once, never twice", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 0 });
    const seen = [];
    room.observe("/count", (count) => seen.push(count));
    const patches = [];
    room.on("patch", (event) => patches.push([event.version, room.state.count]));
    const sent = room.send("increment", { by: 1 }, { predict: increment });
    const action = await connection.nextOfType("action");
    // As tetherd writes them: two frames, one write.
    connection.sendTogether(patch("counter", 0, 1), { type: "ack", id: action.id, room: "counter", version: 1 });
    await sent;
    await sleep(50);  // past the 20 ms wait
    assert.deepEqual(room.state, { count: 1 });
    assert.equal(room.state, room.serverState);
    assert.deepEqual(seen, [0, 1], "never 2: the ack dropped the prediction before the patch showed");
    assert.deepEqual(patches, [[1, 1]], "the patch event comes once, with the state it shows");
  });

  test("a patch waiting for an answer: a snapshot right behind it tells it all; leave() stops the wait", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 0 });
    const events = [];
    room.on("patch", (event) => events.push(["patch", event.version]));
    room.on("snapshot", (event) => events.push(["snapshot", event.version, event.state.count]));
    const sent = track(room.send("increment", { by: 1 }, { predict: increment }));
    await connection.nextOfType("action");
    connection.sendTogether(patch("counter", 0, 5), { type: "snapshot", room: "counter", epoch: "e1", version: 2, state: { count: 9 } });
    await waitFor(() => room.version === 2, "the snapshot");
    await sleep(50);
    assert.deepEqual(events, [["snapshot", 2, 10]], "the snapshot cancels the waiting patch");
    connection.send(patch("counter", 2, 11));
    await waitFor(() => room.version === 3, "another patch");
    assert.deepEqual(room.state, { count: 10 }, "waiting");
    room.leave();
    await sleep(50);
    assert.deepEqual(events, [["snapshot", 2, 10]], "left: the wait ends with nothing told");
    assert.equal(sent.outcome, "pending");
  });

  test("an error rolls the prediction back: observers see the server's value", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 5 });
    const seen = [];
    room.observe("/count", (count) => seen.push(count));
    const sent = room.send("increment", { by: 100 }, { predict: (state) => { state.count += 100; } });
    const action = await connection.nextOfType("action");
    connection.send({ type: "error", code: "invalid_args", message: "too much", id: action.id, room: "counter", applied: false });
    await assert.rejects(sent, { code: "invalid_args" });
    assert.deepEqual(room.state, { count: 5 });
    assert.deepEqual(seen, [5, 105, 5]);
  });

  test("pending predictions are applied again, in order, on top of another client's patch", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "todo", { count: 0, items: [] });
    const add = (title) => (state) => { state.items.push(title); };
    const a = room.send("add", { title: "a" }, { predict: add("a") });
    const b = room.send("add", { title: "b" }, { predict: (state) => ({ ...state, items: [...state.items, "b"] }) });
    assert.deepEqual(room.state.items, ["a", "b"], "a replacement returned counts too");
    const [sendA, sendB] = [await connection.nextOfType("action"), await connection.next()];
    const seen = [];
    room.observe("/count", (count) => seen.push(count));
    // Someone else's change arrives first.
    connection.send({ type: "patch", room: "todo", epoch: "e1", from: 0, version: 1, ops: [{ op: "add", path: "/items/0", value: "x" }, { op: "replace", path: "/count", value: 7 }] });
    await waitFor(() => room.version === 1, "the other client's patch");
    assert.deepEqual(room.serverState, { count: 7, items: ["x"] });
    await waitFor(() => room.state.count === 7, "the patch shown, 20 ms on");
    assert.deepEqual(room.state, { count: 7, items: ["x", "a", "b"] });
    assert.deepEqual(seen, [0, 7], "observers see the server's change under the predictions");
    connection.send({ type: "patch", room: "todo", epoch: "e1", from: 1, version: 2, ops: [{ op: "add", path: "/items/-", value: "a" }] });
    connection.send({ type: "ack", id: sendA.id, room: "todo", version: 2 });
    await a;
    assert.deepEqual(room.state.items, ["x", "a", "b"]);
    connection.send({ type: "patch", room: "todo", epoch: "e1", from: 2, version: 3, ops: [{ op: "add", path: "/items/-", value: "b" }] });
    connection.send({ type: "ack", id: sendB.id, room: "todo", version: 3 });
    await b;
    assert.deepEqual(room.state, { count: 7, items: ["x", "a", "b"] });
    assert.equal(room.state, room.serverState);
  });

  test("predictions still pending are applied again over a resync snapshot", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 3 }, { version: 3 });
    const sent = room.send("increment", undefined, { predict: increment });
    const action = await connection.nextOfType("action");
    const snapshots = [];
    room.on("snapshot", (event) => snapshots.push(event));
    // A patch that does not apply: the client rejoins for a snapshot.
    connection.send({ type: "patch", room: "counter", epoch: "e1", from: 3, version: 4, ops: [{ op: "remove", path: "/missing" }] });
    client.on("warning", () => {});
    await connection.nextOfType("join");
    connection.send({ type: "snapshot", room: "counter", epoch: "e1", version: 10, state: { count: 40 } });
    await waitFor(() => room.version === 10, "the snapshot");
    assert.deepEqual(room.serverState, { count: 40 });
    assert.deepEqual(room.state, { count: 41 });
    assert.deepEqual(snapshots.map((s) => [s.state.count, s.resynced]), [[41, true]], "the event has the shown state");
    connection.send({ type: "ack", id: action.id, room: "counter", version: 10 });
    await sent;
    assert.deepEqual(room.state, { count: 40 }, "an ack without a patch: the action changed nothing");
  });

  test("a prediction made before the first snapshot shows once the state is there", async (t) => {
    const { client, connection, hello } = await startSilent(t);
    const room = client.room("counter");
    const sent = room.send("increment", undefined, { predict: increment });
    assert.equal(room.state, undefined);
    hello();
    await connection.nextOfType("join");
    const action = await connection.nextOfType("action");
    connection.send({ type: "snapshot", room: "counter", epoch: "e1", version: 0, state: { count: 0 } });
    await room.ready();
    assert.deepEqual(room.state, { count: 1 });
    connection.send(patch("counter", 0, 1));
    connection.send({ type: "ack", id: action.id, room: "counter", version: 1 });
    await sent;
    assert.deepEqual(room.state, { count: 1 });
  });

  test("a prediction that throws is dropped with a warning; the action is still sent", async (t) => {
    const { client, connection } = await connect(t);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 0 });
    const warnings = [];
    client.on("warning", (text) => warnings.push(text));
    const good = room.send("increment", undefined, { predict: increment });
    // Throws halfway: what it changed must not show.
    const bad = room.send("decrement", undefined, { predict: (state) => { state.count = 99; throw new Error("bug"); } });
    assert.deepEqual(room.state, { count: 1 });
    assert.match(warnings[0], /prediction of decrement threw \(bug\)/);
    const [a, b] = [await connection.nextOfType("action"), await connection.next()];
    assert.deepEqual([a.name, b.name], ["increment", "decrement"]);
    connection.send({ type: "ack", id: a.id, room: "counter", version: 0 });
    connection.send({ type: "ack", id: b.id, room: "counter", version: 0 });
    await Promise.all([good, bad]);
    assert.deepEqual(room.state, { count: 0 });
  });

  test("a prediction is dropped with not_sent; room.state stays read-only", async (t) => {
    const { server, client, connection } = await connect(t, fast);
    const { room } = await joinWithSnapshot(client, connection, "counter", { count: 0 });
    server.refuseUpgrades = 1000;  // stays offline
    connection.drop();
    await waitFor(() => client.state === "reconnecting", "reconnecting");
    const sent = room.send("increment", undefined, { predict: increment, timeout: 50 });
    assert.deepEqual(room.state, { count: 1 });
    await assert.rejects(sent, { code: "not_sent" });
    assert.deepEqual(room.state, { count: 0 });
    assert.throws(() => { room.state = { count: 5 }; }, TypeError);
    assert.throws(() => { room.serverState = { count: 5 }; }, TypeError);
  });
});
