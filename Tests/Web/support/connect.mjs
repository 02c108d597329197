// Shared steps of the scripted-server tests: a client connected to a scripted server, a room
// joined with a snapshot.

import assert from "node:assert/strict";
import { TetherClient } from "../../../Clients/web/tether.js";
import { ScriptedServer } from "./scripted-server.mjs";

/** A scripted server and a client connected to it; both stopped when the test ends. */
export async function connect(t, options = {}) {
  const server = await ScriptedServer.start();
  const client = new TetherClient(server.url, options);
  t.after(async () => { client.close(); await server.close(); });
  const connection = await server.nextConnection();
  await client.connected();
  return { server, client, connection };
}

/** Joins `name` and answers with a snapshot; returns the room and the join message. */
export async function joinWithSnapshot(client, connection, name, state, { epoch = "e1", version = 0 } = {}) {
  const room = client.room(name);
  const join = await connection.nextOfType("join");
  assert.equal(join.room, name);
  connection.send({ type: "snapshot", room: name, epoch, version, state });
  await room.ready();
  return { room, join };
}
