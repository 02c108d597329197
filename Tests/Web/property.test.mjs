// A property of tether.js actions, checked on random runs: two clients send numbered actions (some
// with predictions, some with a short timeout) to a small in-test server that runs each (client,
// seq) once, while connections drop, frames arrive twice, answers are lost or say "unknown", and
// the clients reconnect. Whatever happens: every action is applied at most once, and exactly
// once when its send resolved; one that failed with applied false was not applied; every send
// settles exactly once (none hangs); no prediction shows after its answer; and each mirror ends
// equal to the server's state.
//
// No stale_action at all: the server answers it only for a number it has no outcome for at or
// below the highest it let go of, and it keeps the outcomes of each client's highest 64 numbers,
// letting go of the lowest (not the first recorded). A client that keeps its numbers in flight
// within 64 of its oldest unanswered one never sends such a number: of 65 numbers recorded, the
// lowest is below its oldest unanswered one. A number it has no outcome for above that runs, even
// after later numbers ran (its earlier send was refused before running, or lost, and it is
// recorded after them), so the client need not hold later actions back.
//
// Seeded: a failure prints its seed; TETHER_SEED=N replays it (TETHER_ROUNDS sets how many runs).
// Needs a global WebSocket: `node --experimental-websocket --test Tests/Web/` on Node 20.

import { test } from "node:test";
import assert from "node:assert/strict";
import { TetherClient } from "../../Clients/web/tether.js";
import { ScriptedServer, waitFor } from "./support/scripted-server.mjs";
import { ActionRecord } from "./support/action-record.mjs";

if (typeof globalThis.WebSocket !== "function") {
  throw new Error("these tests need a global WebSocket: run `node --experimental-websocket --test Tests/Web/` (Node 20)");
}

/** mulberry32: a small seeded generator. */
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const ROOM = "counter";

/**
 * The server side: one room, {count}, whose action `add {by}` runs once per (client, seq). As
 * tetherd does (Sources/TetherServer/Rooms/ActionOutcomes.swift; support/action-record.mjs), it
 * keeps the outcomes of each client's highest 64 numbers, letting go of the lowest, and
 * `forgottenUpTo`, the highest number it let go of: a repeat gets the first outcome; a number with
 * no outcome above `forgottenUpTo` runs; one at or below it gets stale_action. Faults, drawn from
 * `next`: a connection dropped before or after the action runs, a patch or an answer sent twice,
 * answers "unavailable" and "rate_limited" (ran nothing) and "unknown" (may have run).
 */
class NumberingServer {
  constructor(scripted, next) {
    this.next = next;
    this.state = { count: 0 };
    this.epoch = "E";
    this.version = 0;
    /** "client:seq" → how many times it ran. */
    this.applied = new Map();
    /** Per client: its ActionRecord (the outcomes of its highest 64 numbers, `forgottenUpTo`). */
    this.records = new Map();
    this.open = new Set();
    this.subscribers = new Set();
    /** What happened to each action frame, in order: shown when a run fails. */
    this.log = [];
    let connections = 0;
    scripted.handleConnections((connection) => {
      connection.number = ++connections;
      this.open.add(connection);
      connection.closed.then(() => { this.open.delete(connection); this.subscribers.delete(connection); });
      connection.handle((message) => this.#receive(connection, message));
    });
  }

  /** Drops a random open connection (the client sees it vanish). */
  dropOne() {
    const connections = [...this.open];
    if (connections.length === 0) return;
    const connection = connections[Math.floor(this.next() * connections.length)];
    this.#drop(connection);
  }

  #drop(connection) {
    this.open.delete(connection);
    this.subscribers.delete(connection);
    connection.drop();
  }

  #receive(connection, message) {
    if (!this.open.has(connection)) return;
    if (message.type === "join") {
      this.subscribers.add(connection);
      // A resume may always be answered with a snapshot.
      connection.send({ type: "snapshot", room: ROOM, epoch: this.epoch, version: this.version, state: this.state });
      if (message.id !== undefined) connection.send({ type: "ack", id: message.id, room: ROOM, version: this.version });
    } else if (message.type === "action") {
      this.#act(connection, message);
    }
  }

  #act(connection, message) {
    if (!this.open.has(connection)) return;
    const client = connection.hello?.client;
    assert.ok(client, "a hello with the client id comes first");
    assert.ok(Number.isInteger(message.seq) && message.seq >= 1, `numbered: ${JSON.stringify(message)}`);
    const note = (what) => this.log.push(`c${connection.number} ${client.slice(0, 4)} seq ${message.seq} id ${message.id}: ${what}`);
    const reply = (answer) => {
      note(answer.type === "ack" ? `ack v${answer.version}` : `${answer.code} ${answer.applied}`);
      connection.send({ ...answer, id: message.id, room: ROOM });
      if (this.next() < 0.05) connection.send({ ...answer, id: message.id, room: ROOM });  // sent twice
    };
    const roll = this.next();
    if (roll < 0.04) {
      note("dropped before running");
      return this.#drop(connection);  // lost with the connection, never ran
    }
    if (!this.records.has(client)) this.records.set(client, new ActionRecord());
    const records = this.records.get(client);
    const found = records.lookup(message.seq);
    if (found.kind === "repeated") {
      // A repeat: the first outcome, unless this send is answered "unknown" (an owner lost).
      if (roll < 0.08) return reply({ type: "error", code: "unavailable", message: "owner lost", applied: "unknown" });
      return reply(found.outcome);
    }
    if (found.kind === "forgotten") {
      return reply({ type: "error", code: "stale_action", message: "older than this room remembers", applied: "unknown" });
    }
    if (roll < 0.13) {
      if (roll < 0.10) return reply({ type: "error", code: "unavailable", message: "changing owners", applied: false });
      return reply({ type: "error", code: "rate_limited", message: "too fast", applied: false });
    }
    const remember = (outcome) => records.record(message.seq, outcome);
    if (roll < 0.18) {
      const error = { type: "error", code: "invalid_args", message: "refused by the room", applied: false };
      remember(error);
      return reply(error);
    }
    if (roll < 0.23) {
      // The owner was lost with the action in flight: it may have run, or not.
      const ran = this.next() < 0.5;
      if (ran) remember(this.#apply(client, message));
      note(ran ? "ran" : "not run");
      return reply({ type: "error", code: "unavailable", message: "owner lost in flight", applied: "unknown" });
    }
    const ack = this.#apply(client, message);
    remember(ack);
    if (this.next() < 0.05) {
      note(`ran (v${ack.version}), dropped before the ack`);
      return this.#drop(connection);  // ran; the ack is lost
    }
    reply(ack);
  }

  /** Runs the action: the patch to every subscriber (sometimes twice to one), then its ack. */
  #apply(client, message) {
    const key = `${client}:${message.seq}`;
    this.applied.set(key, (this.applied.get(key) ?? 0) + 1);
    this.state = { count: this.state.count + message.args.by };
    const from = this.version++;
    const patch = { type: "patch", room: ROOM, epoch: this.epoch, from, version: this.version, ops: [{ op: "replace", path: "/count", value: this.state.count }] };
    for (const subscriber of this.subscribers) {
      subscriber.send(patch);
      if (this.next() < 0.03) subscriber.send(patch);  // a duplicate: a gap, so a rejoin
    }
    return { type: "ack", version: this.version };
  }
}

/** One random run; throws (with the seed in the message) when the property does not hold. */
async function run(seed, t) {
  const next = random(seed);
  const scripted = await ScriptedServer.start();
  const server = new NumberingServer(scripted, next);
  const clients = [0, 1].map(() => new TetherClient(scripted.url, { reconnect: { initialDelay: 5, maxDelay: 30 }, actionTimeout: 60_000 }));
  const warnings = [];
  for (const client of clients) client.on("warning", (text) => warnings.push(text));
  try {
    const rooms = clients.map((client) => client.room(ROOM));
    const sends = [];
    for (let i = 0; i < 60; i++) {
      const roll = next();
      if (roll < 0.08) server.dropOne();
      else if (roll < 0.10) scripted.refuseUpgrades = 2;
      else {
        const which = next() < 0.5 ? 0 : 1;
        const client = clients[which];
        const room = rooms[which];
        const by = 1 + Math.floor(next() * 5);
        const tag = `t${i}`;
        const options = {};
        if (next() < 0.6) options.predict = (state) => { state.count += by; (state.tags ??= []).push(tag); };
        if (next() < 0.15) options.timeout = 20;
        const record = { client: which, clientId: client.clientId, by, tag, settlements: 0, outcome: null };
        const promise = room.send("add", { by }, options);
        record.seq = client.pendingActions.at(-1).seq;
        const settled = (outcome) => {
          record.settlements++;
          record.outcome = outcome;
          // Its prediction went with the answer, before anyone could see the outcome.
          assert.ok(!(room.state?.tags ?? []).includes(tag), `seed ${seed}: the prediction of ${tag} shows after its answer`);
        };
        record.done = promise.then((ack) => settled({ ack }), (error) => settled({ error }));
        sends.push(record);
      }
      if (next() < 0.3) await sleep(Math.floor(next() * 30));
    }
    const all = Promise.all(sends.map((s) => s.done));
    const deadline = sleep(30_000).then(() => { throw new Error("not every send settled in 30 s"); });
    await Promise.race([all, deadline]);
    await sleep(50);

    for (const send of sends) {
      const key = `${send.clientId}:${send.seq}`;
      const times = server.applied.get(key) ?? 0;
      assert.equal(send.settlements, 1, `seed ${seed}: ${send.tag} settled ${send.settlements} times`);
      if (send.outcome.ack) {
        assert.equal(times, 1, `seed ${seed}: ${send.tag} (seq ${send.seq}) acked, applied ${times} times`);
      } else if (send.outcome.error.code === "stale_action") {
        assert.fail(`seed ${seed}: ${send.tag} (seq ${send.seq}) got stale_action, applied ${times} times: a number in the window of 64 was taken for one the room let go of`);
      } else {
        const { code, applied } = send.outcome.error;
        assert.equal(applied, false, `seed ${seed}: ${send.tag} failed with ${code}, applied ${applied}: only "closed" may say unknown, and it is never used here`);
        assert.equal(times, 0, `seed ${seed}: ${send.tag} failed with ${code} but was applied ${times} times`);
      }
    }
    for (const [key, times] of server.applied) assert.equal(times, 1, `seed ${seed}: ${key} applied ${times} times`);
    const total = sends.filter((s) => s.outcome.ack).reduce((sum, s) => sum + s.by, 0);
    assert.equal(server.state.count, total, `seed ${seed}: the count is the sum of the acked actions`);
    for (const [index, client] of clients.entries()) {
      const room = rooms[index];
      assert.deepEqual(client.pendingActions, [], `seed ${seed}: client ${index} still has pending actions`);
      await waitFor(() => room.version === server.version && room.synced, `seed ${seed}: client ${index}'s mirror at version ${server.version}`, 5000);
      assert.deepEqual(room.state, server.state, `seed ${seed}: client ${index}'s mirror`);
      assert.equal(room.state, room.serverState, `seed ${seed}: client ${index} still shows a prediction`);
    }
    const outcomes = {};
    for (const send of sends) {
      const name = send.outcome.ack ? "ack" : send.outcome.error.code;
      outcomes[name] = (outcomes[name] ?? 0) + 1;
    }
    t.diagnostic(`seed ${seed}: ${JSON.stringify(outcomes)}, count ${server.state.count}, version ${server.version}, ${scripted.sessions} connections`);
  } catch (error) {
    t.diagnostic(`the server's log of seed ${seed}:\n${server.log.join("\n")}`);
    error.message = `seed ${seed} (TETHER_SEED=${seed} replays it): ${error.message}`;
    throw error;
  } finally {
    for (const client of clients) client.close();
    await scripted.close();
  }
}

test("random sends, drops, duplicated frames and reconnects: each action applied once, each send settled once, mirrors equal to the server", { timeout: 300_000 }, async (t) => {
  const base = Number(process.env.TETHER_SEED ?? Date.now() % 1_000_000);
  const rounds = Number(process.env.TETHER_ROUNDS ?? (process.env.TETHER_SEED ? 1 : 8));
  for (let round = 0; round < rounds; round++) await run(base + round, t);
});
