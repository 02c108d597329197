// The overview: the server's own room `tether.server` drawn as cards, charts, facts, cluster
// nodes and the list of rooms, stored ones included. Rows of the room list are kept per name and
// touched only when their entry changed (entries a patch did not touch are the same objects as
// before), or when a minute passes (their "last change" reads "3 min ago").

import { TimeChart } from "./charts.js";
import { clockTime, formatAge, formatBytes, formatDuration, formatNumber } from "./format.js";

const $ = (id) => document.getElementById(id);

const durabilityMeaning = {
  strict: "strict: every change is on disk (fsynced) before it is acknowledged",
  batch: "batch: an acknowledged change survives a crash of the daemon",
  none: "none: acknowledgements don't wait for the disk",
};

const storageMeaning = {
  sqlite: "SQLite database: shared rooms survive restarts",
  memory: "Memory only: rooms are lost when the daemon stops",
  jetstream: "NATS JetStream: each room's log and snapshot, replicated across the NATS servers",
};

/** "2 threads: 510 and 490 connections, 3.1 and 2.9 s of CPU" for the daemon's socket threads. */
function shardsText(shards) {
  if (!Array.isArray(shards) || shards.length === 0) return undefined;
  const connections = shards.map((shard) => formatNumber(shard.connections ?? 0));
  const cpu = shards.map((shard) => (shard.cpuSeconds ?? 0).toFixed(1));
  const list = (items) => items.length === 1 ? items[0] : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
  const threads = `${shards.length} thread${shards.length === 1 ? "" : "s"}`;
  return `${threads}: ${list(connections)} connection${shards.length === 1 && shards[0].connections === 1 ? "" : "s"}, ${list(cpu)} s of CPU`;
}

/** What an acknowledged change survives, in words. A cluster node's answer is JetStream's, not
 * the --durability of a single daemon. */
function durabilityText(server) {
  if (server.durability !== "jetstream") return durabilityMeaning[server.durability] ?? server.durability;
  const replicas = server.storage?.replicas;
  if (!Number.isInteger(replicas)) return "JetStream: acknowledged once stored by the cluster";
  if (replicas === 1) return "JetStream, 1 replica: an acknowledged change survives a crash of a node, not the loss of its NATS server";
  const majority = Math.floor(replicas / 2) + 1;
  return `JetStream, ${replicas} replicas: an acknowledged change is on ${majority} of them, so it survives the loss of any ${replicas - majority === 1 ? "one" : replicas - majority} node or NATS server`;
}

function facts(list, rows) {
  const content = [];
  for (const [term, value] of rows) {
    if (value === undefined || value === null || value === "") continue;
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    content.push(dt, dd);
  }
  list.replaceChildren(...content);
}

function cell(text, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  td.textContent = text;
  return td;
}

/** One endpoint of the webhooks panel: where it sends, whether it gets through, its queue. */
function webhookRow(endpoint) {
  const row = document.createElement("tr");
  row.dataset.endpoint = endpoint.name ?? "";
  const name = cell(endpoint.name ?? "?");
  name.append(document.createElement("br"), Object.assign(document.createElement("span"), { className: "muted", textContent: endpoint.url ?? "" }));
  const pending = Number.isInteger(endpoint.pending) ? endpoint.pending : 0;
  const dead = Number.isInteger(endpoint.dead) ? endpoint.dead : 0;
  // A cluster node that does not deliver has no queue: it names the node that does.
  const elsewhere = typeof endpoint.deliveredBy === "string";
  const [state, className] = elsewhere ? [`delivered by node ${endpoint.deliveredBy}: its dashboard has the queue`, "muted"]
    : endpoint.disabled ? ["● stopped: it answered 410 Gone", "node-down"]
    : pending > 0 ? ["● sending", "webhook-sending"] : ["● up to date", "node-up"];
  const when = Number.isFinite(endpoint.lastErrorAt) ? `${clockTime(endpoint.lastErrorAt * 1000)}: ` : "";
  const error = cell(endpoint.lastError ? when + endpoint.lastError : "—", "webhook-error");
  if (elsewhere) {
    row.append(name, cell(state, className), cell("—", "num"), cell("—", "num"), cell("—", "webhook-error"));
    return row;
  }
  row.append(name, cell(state, className), cell(formatNumber(pending), "num"), cell(formatNumber(dead), dead > 0 ? "num node-down" : "num"), error);
  return row;
}

export function roomHref(name) {
  return `#/room/${encodeURIComponent(name)}`;
}

export class Overview {
  #charts;
  #rows = new Map();
  #lastRoomList = null;
  #lastFilter = "";
  #lastRecent = null;
  #lastMinute = 0;
  /** Rooms can be deleted here: a single daemon (a cluster node can't delete rooms yet). */
  #canDelete = true;
  #deleteRoom;

  /** `deleteRoom(name)` deletes a room on the server: resolves with its answer, or rejects with
   * an Error whose message says why not. */
  constructor({ deleteRoom }) {
    this.#deleteRoom = deleteRoom;
    this.#charts = {
      deliveries: new TimeChart($("chart-deliveries")),
      actions: new TimeChart($("chart-actions")),
      connections: new TimeChart($("chart-connections")),
    };
    $("room-filter").addEventListener("input", () => this.#renderRooms(this.#lastRoomList ?? [], true));
    // A click anywhere on a row opens the room (the name is also a real link); its button deletes it.
    $("rooms-body").addEventListener("click", (event) => {
      const button = event.target.closest("button[data-delete]");
      if (button) {
        this.#confirmDelete(button);
        return;
      }
      const row = event.target.closest("tr[data-room]");
      if (row && !event.target.closest("a")) location.hash = roomHref(row.dataset.room);
    });
  }

  /** Asks, then deletes; the line under the list says how it went. */
  async #confirmDelete(button) {
    const entry = this.#rows.get(button.dataset.delete)?.entry;
    if (!entry) return;
    const who = entry.subscribers > 0
      ? ` The ${entry.subscribers === 1 ? "client" : `${entry.subscribers} clients`} in it now will be told it was deleted.`
      : "";
    if (!window.confirm(`Delete the room ${entry.name}? Its state and history are gone for good; opening the name again makes a new, empty room.${who}`)) return;
    button.disabled = true;
    const notice = $("rooms-notice");
    try {
      await this.#deleteRoom(entry.name);
      notice.dataset.kind = "ok";
      notice.textContent = `Deleted ${entry.name}.`;
    } catch (error) {
      notice.dataset.kind = "error";
      notice.textContent = `${entry.name} was not deleted: ${error.message}`;
      button.disabled = false;
    }
    notice.hidden = false;
  }

  /** Draws the document of `tether.server`. */
  render(status) {
    if (!status || typeof status !== "object") return;
    const server = status.server ?? {};
    const rates = status.rates ?? {};
    $("stat-uptime").textContent = formatDuration(server.uptimeSeconds);
    $("stat-started").textContent = server.startedAt ? `since ${new Date(server.startedAt).toLocaleString("en-GB")}` : "";
    $("stat-connections").textContent = formatNumber(status.connections);
    $("stat-rooms").textContent = formatNumber(status.rooms);
    $("stat-deliveries").textContent = formatNumber(rates.deliveriesPerSecond);
    $("stat-actions").textContent = formatNumber(rates.actionsPerSecond);
    $("stat-bytes").textContent = Number.isFinite(rates.bytesOutPerSecond) ? formatBytes(Math.round(rates.bytesOutPerSecond)) : "—";
    $("server-name").textContent = [server.name, server.listen].filter(Boolean).join(" at ");

    const recent = Array.isArray(status.recent) ? status.recent : [];
    if (recent !== this.#lastRecent) {
      this.#lastRecent = recent;
      this.#charts.deliveries.update(recent.map((r) => ({ t: r.t, value: r.deliveries ?? 0 })));
      this.#charts.actions.update(recent.map((r) => ({ t: r.t, value: r.actions ?? 0 })));
      this.#charts.connections.update(recent.map((r) => ({ t: r.t, value: r.connections ?? 0 })));
    }

    facts($("server-facts"), [
      ["Server", server.name],
      ["Version", server.version],
      ["Node", server.node],
      ["Listening on", server.listen],
      ["Encryption", server.tls === undefined ? undefined : server.tls ? "TLS (wss://)" : "none (ws://): fine on a loopback address"],
      ["Access", server.auth === undefined ? undefined : server.auth ? "tokens required to join rooms" : "open: no token needed"],
      ["Durability", durabilityText(server)],
      ["Socket threads", shardsText(server.shards)],
    ]);
    const storage = server.storage ?? {};
    facts($("storage-facts"), storage.kind === "jetstream" ? [
      ["Kind", storageMeaning.jetstream],
      ["Streams", Number.isInteger(storage.streams) ? `${storage.streams} (rooms are spread over them by name)` : undefined],
      ["Replicas", Number.isInteger(storage.replicas) ? `${storage.replicas} of each stream and bucket` : undefined],
      ["Where", "on the NATS servers (their JetStream store directories), not in this daemon's data directory"],
    ] : [
      ["Kind", storageMeaning[storage.kind] ?? storage.kind],
      ["Where", storage.path],
      ["Size", Number.isFinite(storage.bytes) ? formatBytes(storage.bytes) : undefined],
    ]);

    const nodes = Array.isArray(status.nodes) ? status.nodes : [];
    $("nodes-panel").hidden = nodes.length === 0;
    if (nodes.length > 0) {
      $("nodes-body").replaceChildren(...nodes.map((node) => {
        const row = document.createElement("tr");
        const since = Number.isFinite(node.downSince) ? ` since ${clockTime(node.downSince * 1000)}` : "";
        const state = cell(node.alive ? "● up" : `● down${since}`, node.alive ? "node-up" : "node-down");
        if (since) state.title = `no heartbeat since ${new Date(node.downSince * 1000).toLocaleString("en-GB")}`;
        row.append(cell(node.name ?? "?"), state, cell(node.alive ? formatNumber(node.rooms) : "—", "num"),
          cell(node.alive ? formatNumber(node.connections) : "—", "num"));
        return row;
      }));
    }

    const webhooks = Array.isArray(status.webhooks) ? status.webhooks : [];
    $("webhooks-panel").hidden = webhooks.length === 0;
    if (webhooks.length > 0) $("webhooks-body").replaceChildren(...webhooks.map(webhookRow));

    // A cluster node lists the rooms it holds; deleting waits for a way that is safe on a cluster.
    this.#canDelete = server.node === null || server.node === undefined;
    $("rooms-delete-note").hidden = this.#canDelete;
    $("rooms-truncated").hidden = status.roomListTruncated !== true;
    this.#renderRooms(Array.isArray(status.roomList) ? status.roomList : [], false);
  }

  #renderRooms(list, filterChanged) {
    const filter = $("room-filter").value.trim().toLowerCase();
    // Once a minute every row is written again: "last change" is relative.
    const minute = Math.floor(Date.now() / 60000);
    const minutePassed = minute !== this.#lastMinute;
    this.#lastMinute = minute;
    if (list === this.#lastRoomList && filter === this.#lastFilter && !filterChanged && !minutePassed) return;
    this.#lastRoomList = list;
    this.#lastFilter = filter;
    const shown = filter ? list.filter((entry) => String(entry.name).toLowerCase().includes(filter) || String(entry.kind).toLowerCase().includes(filter)) : list;
    const seen = new Set();
    const rows = shown.map((entry) => {
      seen.add(entry.name);
      let row = this.#rows.get(entry.name);
      if (!row) {
        row = { element: document.createElement("tr"), entry: null };
        row.element.dataset.room = entry.name;
        this.#rows.set(entry.name, row);
      }
      if (row.entry !== entry || minutePassed) {
        row.entry = entry;
        this.#fillRow(row.element, entry);
      }
      return row.element;
    });
    for (const name of [...this.#rows.keys()]) if (!seen.has(name)) this.#rows.delete(name);
    const body = $("rooms-body");
    const current = body.children;
    const sameOrder = current.length === rows.length && rows.every((row, index) => current[index] === row);
    if (!sameOrder) body.replaceChildren(...rows);
    $("rooms-empty").hidden = list.length > 0;
    const inMemory = list.filter((entry) => entry.inMemory !== false).length;
    const stored = list.length - inMemory;
    const counts = `${list.length} room${list.length === 1 ? "" : "s"}${stored > 0 ? `: ${inMemory} in memory, ${stored} stored` : ""}`;
    $("rooms-summary").textContent = filter ? `${shown.length} of ${counts}` : counts;
  }

  /** Writes `entry` into its row; cells are made once and only their text changes after. */
  #fillRow(row, entry) {
    if (row.cells.length === 0) {
      const name = document.createElement("td");
      const link = document.createElement("a");
      link.href = roomHref(entry.name);
      link.textContent = entry.name;
      name.append(link);
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link-button danger";
      remove.dataset.delete = entry.name;
      remove.textContent = "Delete";
      remove.title = `Delete ${entry.name}: from memory and storage`;
      const actions = cell("", "actions");
      actions.append(remove);
      row.append(name, cell(""), cell(""), cell("", "num"), cell("", "num"), cell(""), cell("", "num"), cell("", "num"), cell(""), actions);
    }
    const perSession = entry.scope === "per-session";
    const count = entry.instances ?? entry.count;
    const subscribers = perSession && Number.isFinite(count)
      ? `${formatNumber(entry.subscribers ?? count)} (${formatNumber(count)} private)`
      : formatNumber(entry.subscribers);
    const stored = entry.inMemory === false;
    const lastChange = Number.isFinite(entry.lastChange) ? entry.lastChange * 1000 : null;
    // Members: clients listed in the room's presence; "—" for rooms that keep none.
    const texts = [null, entry.kind ?? "—", entry.scope ?? "—", subscribers,
      Number.isInteger(entry.members) ? formatNumber(entry.members) : "—", stored ? "stored" : "in memory",
      Number.isInteger(entry.version) ? String(entry.version) : "—", Number.isFinite(entry.bytes) ? formatBytes(entry.bytes) : "—",
      lastChange === null ? "—" : formatAge(Date.now() - lastChange)];
    texts.forEach((text, index) => {
      if (text !== null && row.cells[index].textContent !== text) row.cells[index].textContent = text;
    });
    row.cells[2].classList.toggle("muted", perSession);
    row.cells[5].classList.toggle("muted", stored);
    row.cells[8].title = lastChange === null ? "" : new Date(lastChange).toLocaleString("en-GB");
    // The server's own room and per-session rooms can't be deleted.
    row.cells[9].firstChild.hidden = !this.#canDelete || perSession || String(entry.name).startsWith("tether.");
  }

  /** The rooms the server lists now (for suggestions and the room view's subscriber count). */
  get roomList() {
    return this.#lastRoomList ?? [];
  }
}
