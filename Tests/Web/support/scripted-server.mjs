// A tiny WebSocket server for tether.js tests: Node's `http` upgrade plus an RFC 6455 frame codec,
// driven step by step by the test (read what the client sent, send what the script says, drop the
// connection, refuse upgrades). Test-only; it binds 127.0.0.1 on a free port.

import { createServer } from "node:http";
import { createHash } from "node:crypto";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** Waits for `predicate()` to be true, polling; fails with `what` after `timeout` ms. */
export async function waitFor(predicate, what = "a condition", timeout = 3000) {
  const deadline = Date.now() + timeout;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The next `event` of a tether.js emitter (its arguments as an array). */
export function nextEvent(emitter, event, timeout = 3000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { off(); reject(new Error(`timed out waiting for "${event}"`)); }, timeout);
    const off = emitter.on(event, (...args) => { clearTimeout(timer); off(); resolve(args); });
  });
}

/** A queue whose `next()` waits for the next pushed item. */
class Inbox {
  #items = [];
  #waiters = [];

  push(item) {
    const waiter = this.#waiters.shift();
    if (waiter) { clearTimeout(waiter.timer); waiter.resolve(item); } else this.#items.push(item);
  }

  next(what, timeout) {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift());
    return new Promise((resolve, reject) => {
      const waiter = { resolve };
      waiter.timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out waiting for ${what}`));
      }, timeout);
      this.#waiters.push(waiter);
    });
  }

  get pending() { return this.#items.length; }

  /** Takes the waiting items out. */
  drain() { return this.#items.splice(0); }
}

export class ScriptedServer {
  /** Starts listening; `hello: false` leaves the hello to the test. */
  static async start({ hello = true } = {}) {
    const server = new ScriptedServer(hello);
    await new Promise((resolve) => server.http.listen(0, "127.0.0.1", resolve));
    server.port = server.http.address().port;
    server.url = `ws://127.0.0.1:${server.port}`;
    return server;
  }

  #connections = new Inbox();
  #sockets = new Set();
  #handler = null;

  constructor(hello) {
    this.hello = hello;
    /** Upgrades still to refuse with 503 (a server that is there but not ready). */
    this.refuseUpgrades = 0;
    /** Every upgrade attempt, accepted or refused, with its time. */
    this.attempts = [];
    this.sessions = 0;
    this.http = createServer((request, response) => { response.writeHead(404).end(); });
    this.http.on("upgrade", (request, socket) => this.#upgrade(request, socket));
  }

  /** The next accepted connection. */
  nextConnection(timeout = 3000) {
    return this.#connections.next("a connection", timeout);
  }

  /** Calls `handler(connection)` for every connection from now on (and those not claimed yet),
   * instead of keeping them for nextConnection(): a server that runs by itself. */
  handleConnections(handler) {
    this.#handler = handler;
    for (const connection of this.#connections.drain()) handler(connection);
  }

  get unclaimedConnections() { return this.#connections.pending; }

  #upgrade(request, socket) {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", () => {});
    this.attempts.push({ at: Date.now(), refused: this.refuseUpgrades > 0 });
    if (this.refuseUpgrades > 0) {
      this.refuseUpgrades--;
      socket.end("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    const key = request.headers["sec-websocket-key"];
    const accept = createHash("sha1").update(key + GUID).digest("base64");
    const offered = (request.headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim()).filter(Boolean);
    const headers = [
      "HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", `Sec-WebSocket-Accept: ${accept}`,
    ];
    if (offered.includes("tether.v1")) headers.push("Sec-WebSocket-Protocol: tether.v1");
    socket.write(headers.join("\r\n") + "\r\n\r\n");
    const connection = new ScriptedConnection(socket, offered);
    if (this.hello) connection.send({ type: "hello", protocol: 1, server: "scripted/0", session: `s${++this.sessions}` });
    if (this.#handler) this.#handler(connection);
    else this.#connections.push(connection);
  }

  /** Stops listening and destroys every socket. */
  async close() {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.http.close(resolve));
  }
}

export class ScriptedConnection {
  #inbox = new Inbox();
  #buffer = Buffer.alloc(0);
  #fragments = [];
  #handler = null;

  constructor(socket, offeredProtocols) {
    this.socket = socket;
    this.offeredProtocols = offeredProtocols;
    /** Every message received, parsed. */
    this.received = [];
    /** The client's own `hello` (who it is), kept apart: `next()` returns the requests after it. */
    this.hello = null;
    this.isOpen = true;
    this.closed = new Promise((resolve) => socket.on("close", () => { this.isOpen = false; resolve(); }));
    socket.on("data", (chunk) => this.#read(chunk));
  }

  /** Calls `handler(message)` for each message from now on (and those not read yet) instead of
   * keeping them for next(). */
  handle(handler) {
    this.#handler = handler;
    for (const message of this.#inbox.drain()) handler(message);
  }

  /** The next message the client sent (parsed JSON). */
  next(timeout = 3000) {
    return this.#inbox.next("a message from the client", timeout);
  }

  /** Skips messages until one of `type` (e.g. the join after a resume). */
  async nextOfType(type, timeout = 3000) {
    for (;;) {
      const message = await this.next(timeout);
      if (message.type === type) return message;
    }
  }

  /** True when nothing arrives within `ms`. */
  async silentFor(ms) {
    try {
      const message = await this.next(ms);
      throw new Error(`expected silence, got ${JSON.stringify(message)}`);
    } catch (error) {
      if (error.message.startsWith("timed out")) return true;
      throw error;
    }
  }

  send(message) {
    const text = typeof message === "string" ? message : JSON.stringify(message);
    this.#writeFrame(0x1, Buffer.from(text));
  }

  /** Sends each message as its own frame, all in one write (as tetherd writes a patch and its ack). */
  sendTogether(...messages) {
    if (!this.isOpen) return;
    const frames = messages.map((message) => {
      const text = typeof message === "string" ? message : JSON.stringify(message);
      return encodeFrame(0x1, Buffer.from(text));
    });
    this.socket.write(Buffer.concat(frames));
  }

  sendBinary(bytes) {
    this.#writeFrame(0x2, Buffer.from(bytes));
  }

  /** A clean close with `code`. */
  close(code = 1001, reason = "") {
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    this.#writeFrame(0x8, payload);
    this.socket.end();
  }

  /** The connection vanishes without a close frame; frames already read are not handled. */
  drop() {
    this.isOpen = false;
    this.socket.destroy();
  }

  #writeFrame(opcode, payload) {
    if (!this.isOpen) return;
    this.socket.write(encodeFrame(opcode, payload));
  }

  #read(chunk) {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      const frame = decodeFrame(this.#buffer);
      if (!frame) return;
      this.#buffer = this.#buffer.subarray(frame.length);
      this.#frame(frame);
    }
  }

  #frame({ fin, opcode, payload }) {
    switch (opcode) {
      case 0x0: case 0x1: case 0x2: {
        if (!this.isOpen) return;  // dropped: the rest of the chunk is lost with it
        this.#fragments.push(payload);
        if (!fin) return;
        const message = JSON.parse(Buffer.concat(this.#fragments).toString("utf8"));
        this.#fragments = [];
        this.received.push(message);
        if (message.type === "hello") this.hello = message;
        else if (this.#handler) this.#handler(message);
        else this.#inbox.push(message);
        return;
      }
      case 0x8:
        if (this.isOpen) { this.#writeFrame(0x8, payload.subarray(0, 2)); this.socket.end(); }
        return;
      case 0x9:
        this.#writeFrame(0xA, payload);
        return;
      default:
        return;
    }
  }
}

/** One unmasked, final frame (server to client). */
function encodeFrame(opcode, payload) {
  let header;
  if (payload.length < 126) {
    header = Buffer.from([0x80 | opcode, payload.length]);
  } else if (payload.length < 65536) {
    header = Buffer.alloc(4);
    header[0] = 0x80 | opcode; header[1] = 126; header.writeUInt16BE(payload.length, 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = 0x80 | opcode; header[1] = 127; header.writeBigUInt64BE(BigInt(payload.length), 2);
  }
  return Buffer.concat([header, payload]);
}

/** One frame from the front of `buffer` ({fin, opcode, payload, length}), or null if incomplete. */
function decodeFrame(buffer) {
  if (buffer.length < 2) return null;
  const fin = (buffer[0] & 0x80) !== 0;
  const opcode = buffer[0] & 0x0f;
  const masked = (buffer[1] & 0x80) !== 0;
  let length = buffer[1] & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (buffer.length < 4) return null;
    length = buffer.readUInt16BE(2); offset = 4;
  } else if (length === 127) {
    if (buffer.length < 10) return null;
    length = Number(buffer.readBigUInt64BE(2)); offset = 10;
  }
  const maskOffset = offset;
  if (masked) offset += 4;
  if (buffer.length < offset + length) return null;
  const payload = Buffer.from(buffer.subarray(offset, offset + length));
  if (masked) for (let i = 0; i < payload.length; i++) payload[i] ^= buffer[maskOffset + (i % 4)];
  return { fin, opcode, payload, length: offset + length };
}
