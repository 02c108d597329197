// The overview: the server's own room `tether.server` drawn as cards, charts, facts, cluster
// nodes and the list of rooms. Rows of the room list are kept per name and touched only when
// their entry changed (entries a patch did not touch are the same objects as before).

import { TimeChart } from "./charts.js";
import { formatBytes, formatDuration, formatNumber } from "./format.js";

const $ = (id) => document.getElementById(id);

const durabilityMeaning = {
  strict: "strict: every change is on disk (fsynced) before it is acknowledged",
  batch: "batch: an acknowledged change survives a crash of the daemon",
  none: "none: acknowledgements don't wait for the disk",
};

const storageMeaning = {
  sqlite: "SQLite database: shared rooms survive restarts",
  memory: "Memory only: rooms are lost when the daemon stops",
  jetstream: "NATS JetStream: rooms are replicated across the cluster",
};

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

export function roomHref(name) {
  return `#/room/${encodeURIComponent(name)}`;
}

export class Overview {
  #charts;
  #rows = new Map();
  #lastRoomList = null;
  #lastFilter = "";
  #lastRecent = null;

  constructor() {
    this.#charts = {
      deliveries: new TimeChart($("chart-deliveries")),
      actions: new TimeChart($("chart-actions")),
      connections: new TimeChart($("chart-connections")),
    };
    $("room-filter").addEventListener("input", () => this.#renderRooms(this.#lastRoomList ?? [], true));
    // A click anywhere on a row opens the room (the name is also a real link).
    $("rooms-body").addEventListener("click", (event) => {
      const row = event.target.closest("tr[data-room]");
      if (row && !event.target.closest("a")) location.hash = roomHref(row.dataset.room);
    });
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
      ["Durability", durabilityMeaning[server.durability] ?? server.durability],
    ]);
    const storage = server.storage ?? {};
    facts($("storage-facts"), [
      ["Kind", storageMeaning[storage.kind] ?? storage.kind],
      ["Where", storage.path],
      ["Size", Number.isFinite(storage.bytes) ? formatBytes(storage.bytes) : undefined],
    ]);

    const nodes = Array.isArray(status.nodes) ? status.nodes : [];
    $("nodes-panel").hidden = nodes.length === 0;
    if (nodes.length > 0) {
      $("nodes-body").replaceChildren(...nodes.map((node) => {
        const row = document.createElement("tr");
        const state = cell(node.alive ? "● up" : "● down", node.alive ? "node-up" : "node-down");
        row.append(cell(node.name ?? "?"), state, cell(formatNumber(node.rooms), "num"), cell(formatNumber(node.connections), "num"));
        return row;
      }));
    }

    $("rooms-truncated").hidden = status.roomListTruncated !== true;
    this.#renderRooms(Array.isArray(status.roomList) ? status.roomList : [], false);
  }

  #renderRooms(list, filterChanged) {
    const filter = $("room-filter").value.trim().toLowerCase();
    if (list === this.#lastRoomList && filter === this.#lastFilter && !filterChanged) return;
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
      if (row.entry !== entry) {
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
    $("rooms-summary").textContent = filter ? `${shown.length} of ${list.length} rooms` : `${list.length} room${list.length === 1 ? "" : "s"}`;
  }

  /** Writes `entry` into its row; cells are made once and only their text changes after. */
  #fillRow(row, entry) {
    if (row.cells.length === 0) {
      const name = document.createElement("td");
      const link = document.createElement("a");
      link.href = roomHref(entry.name);
      link.textContent = entry.name;
      name.append(link);
      row.append(name, cell(""), cell(""), cell("", "num"), cell("", "num"), cell("", "num"), cell("", "mono muted"));
    }
    const perSession = entry.scope === "per-session";
    const count = entry.instances ?? entry.count;
    const subscribers = perSession && Number.isFinite(count)
      ? `${formatNumber(entry.subscribers ?? count)} (${formatNumber(count)} private)`
      : formatNumber(entry.subscribers);
    // Members: clients listed in the room's presence; "—" for rooms that keep none.
    const texts = [null, entry.kind ?? "—", entry.scope ?? "—", subscribers, Number.isInteger(entry.members) ? formatNumber(entry.members) : "—",
      Number.isInteger(entry.version) ? String(entry.version) : "—", entry.epoch ?? "—"];
    texts.forEach((text, index) => {
      if (text !== null && row.cells[index].textContent !== text) row.cells[index].textContent = text;
    });
    row.cells[2].classList.toggle("muted", perSession);
  }

  /** The rooms the server lists now (for suggestions and the room view's subscriber count). */
  get roomList() {
    return this.#lastRoomList ?? [];
  }
}
