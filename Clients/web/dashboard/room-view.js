// One room, opened by name: who is in it, its state as a live JSON tree, its recent patches, and
// a form per action, and its history (history-panel.js). The mirror follows every patch as it arrives; the screen is redrawn at most
// once per animation frame (FrameScheduler), however fast the patches come. The page watches the
// room's presence as a spectator: it sees the members and is never listed itself.

// "../tether.js" is /tether.js where the page is served (its files sit at the root) and
// Clients/web/tether.js for the Node tests of the pure parts.
import { displayName } from "../tether.js";
import { ActionForms } from "./action-forms.js";
import { LiveJsonTree } from "./json-tree.js";
import { clockTime, explainError, shortJSON } from "./format.js";

const $ = (id) => document.getElementById(id);
const PATCH_LOG = 50;
// The list of recent patches is redrawn at most this often: nobody reads 100 lines a second, and
// shifting a scrolled list down on every frame costs more paint than the whole tree.
const PATCH_LIST_INTERVAL_MS = 250;
const SHOWN_OPS = 6;

/** Values of members named `field` anywhere in `value` (at most `limit`), with a label from a sibling "title" or "name". */
export function findSuggestions(value, field, limit = 200) {
  const found = new Map();
  const visit = (node, depth) => {
    if (found.size >= limit || depth > 6 || node === null || typeof node !== "object") return;
    if (Array.isArray(node)) {
      for (const child of node) { visit(child, depth + 1); if (found.size >= limit) return; }
      return;
    }
    if (Object.hasOwn(node, field) && (typeof node[field] === "string" || typeof node[field] === "number")) {
      const label = [node.title, node.name].find((text) => typeof text === "string" && String(node[field]) !== text);
      if (!found.has(String(node[field]))) found.set(String(node[field]), label);
    }
    for (const key of Object.keys(node)) visit(node[key], depth + 1);
  };
  visit(value, 0);
  return [...found].map(([value, label]) => ({ value, label }));
}

/** The presence members (id → {user, data}) as rows to show, by name: {id, name, user, says},
 * `says` being what the member's data holds besides its name (null when nothing). */
export function memberRows(members) {
  return Object.entries(members ?? {}).map(([id, member]) => {
    const data = member?.data ?? {};
    const { name, ...rest } = data;
    const says = typeof name === "string" ? rest : data;
    return { id, name: String(displayName(member) ?? id), user: member?.user, says: Object.keys(says).length > 0 ? says : null };
  }).sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
}

/** A patch's operations as a list (`ul.ops`): the first `shown`, then how many more. */
export function opsList(ops, shown = SHOWN_OPS) {
  const list = document.createElement("ul");
  list.className = "ops";
  for (const op of ops.slice(0, shown)) {
    const line = document.createElement("li");
    const name = document.createElement("span");
    name.className = `op op-${op.op}`;
    name.textContent = op.op;
    const path = document.createElement("code");
    path.textContent = op.op === "move" || op.op === "copy" ? `${op.from} → ${op.path}` : op.path || "(whole document)";
    line.append(name, " ", path);
    if (Object.hasOwn(op, "value")) {
      const value = document.createElement("code");
      value.className = "op-value";
      value.textContent = shortJSON(op.value, 60);
      line.append(" ", value);
    }
    list.append(line);
  }
  if (ops.length > shown) {
    const more = document.createElement("li");
    more.className = "muted";
    more.textContent = `and ${ops.length - shown} more operations`;
    list.append(more);
  }
  if (ops.length === 0) {
    const none = document.createElement("li");
    none.className = "muted";
    none.textContent = "no operation (nothing changed)";
    list.append(none);
  }
  return list;
}

export class RoomView {
  #client;
  #scheduler;
  #describe;
  #history;
  #tree;
  #forms;
  #room = null;
  #keepRoom = false;
  /** The join was answered, so `members` is null only in a room that keeps no presence. */
  #presenceKnown = false;
  /** The server deleted the room (`room_deleted`): its last state stays, nothing is sent to it. */
  #deleted = false;
  #unsubscribe = [];
  #patchLog = [];
  #renderedPatches = 0;
  #rendered = false;
  #patchListDrawnAt = -Infinity;
  #patchListTimer = null;

  /**
   * `describe(kind)` resolves with the kind's description ({name, scope, actions}) or null when
   * the server does not describe kinds. `history` (optional) is told when a room opens, moves
   * (`roomAt(version)`) and closes.
   */
  constructor({ client, scheduler, describe, history = null }) {
    this.#client = client;
    this.#scheduler = scheduler;
    this.#describe = describe;
    this.#history = history;
    this.#tree = new LiveJsonTree($("room-state"));
    this.#forms = new ActionForms($("room-actions"), {
      send: (action, args) => this.#room.send(action, args),
      suggest: (field) => findSuggestions(this.#room?.state, field),
    });
    $("room-rejoin").addEventListener("click", () => this.#joinAgain());
    $("expand-all").addEventListener("click", () => this.#tree.expandAll());
    $("collapse-all").addEventListener("click", () => this.#tree.collapseAll());
  }

  /** The mirror on screen (for tests and the console), or null. */
  get room() {
    return this.#room;
  }

  /** Opens `name`. `existing` is a room this page already mirrors (tether.server), kept on close. */
  open(name, existing = null) {
    if (this.#room?.name === name) return;
    this.close();
    const kind = name.split(":")[0];
    this.#room = existing ?? this.#client.room(name, { watchPresence: true });
    this.#keepRoom = existing !== null;
    this.#patchLog = [];
    this.#renderedPatches = 0;
    this.#rendered = false;
    this.#tree.clear();
    $("room-patches").replaceChildren();
    $("room-patches-empty").hidden = false;
    $("room-title").textContent = name;
    $("room-kind").textContent = `kind ${kind}`;
    $("room-scope").textContent = "";
    $("room-version").textContent = "—";
    $("room-epoch").textContent = "—";
    $("room-subscribers").textContent = "—";
    $("room-note").hidden = true;
    $("room-rejoin").hidden = true;
    this.#deleted = false;
    this.#presenceKnown = this.#room.synced;  // a mirror this page held already (tether.server)
    this.#renderMembers();
    this.#showError(null);
    $("room-state").textContent = "Joining the room…";
    this.#forms.clear();
    document.title = `${name} · Tether dashboard`;

    const room = this.#room;
    this.#unsubscribe.push(
      room.on("snapshot", () => {
        this.#showError(null);  // a snapshot means the join went through
        this.#changed(performance.now());
      }),
      room.on("patch", ({ from, version, ops }) => {
        this.#patchLog.push({ at: Date.now(), from, version, ops });
        if (this.#patchLog.length > PATCH_LOG * 4) this.#patchLog.splice(0, this.#patchLog.length - PATCH_LOG);
        this.#changed(performance.now());
      }),
      room.on("error", (error) => {
        if (error.code === "room_deleted") this.#roomDeleted();
        this.#showError(error);
      }),
      room.on("members", ({ members }) => {
        if (members === null) this.#presenceKnown = false;  // forgotten on a disconnect, until the rejoin's answer
        this.#scheduler.schedule("members", () => this.#renderMembers());
      }),
      // The presence snapshot comes before the join's ack: none by then, and the room keeps none.
      room.on("joined", () => {
        this.#presenceKnown = true;
        this.#scheduler.schedule("members", () => this.#renderMembers());
      }),
    );
    if (room.synced) this.#changed(null);
    this.#loadActions(kind);
    this.#history?.open(name);
  }

  close() {
    for (const off of this.#unsubscribe.splice(0)) off();
    clearTimeout(this.#patchListTimer);
    this.#patchListTimer = null;
    this.#history?.close();
    if (this.#room && !this.#keepRoom) this.#room.leave();
    this.#room = null;
    this.#tree.clear();
    this.#forms.clear();
  }

  /** The mirror stopped at its last state (tether.js keeps it). An action now would make a new
   * room this view does not show, so the forms stop until "Join again" opens that room. */
  #roomDeleted() {
    this.#deleted = true;
    this.#forms.disable("The room was deleted: an action now would create a new, empty room. Use “Join again” to open it.");
    $("room-rejoin").hidden = false;
    this.#scheduler.schedule("members", () => this.#renderMembers());
  }

  #joinAgain() {
    const name = this.#room?.name;
    if (!name) return;
    this.close();
    this.open(name);
  }

  /** The room's entry in the server's room list (subscribers), or undefined. */
  showListing(entry) {
    if (!this.#room) return;
    $("room-subscribers").textContent = entry && Number.isFinite(entry.subscribers) ? String(entry.subscribers) : "—";
  }

  async #loadActions(kind) {
    const room = this.#room;
    let description;
    try {
      description = await this.#describe(kind);
    } catch (error) {
      if (room !== this.#room) return;
      // An unknown kind is reported by the join already; other failures leave the free form.
      if (error.code !== "unknown_room") this.#forms.show(null, { note: `The server did not describe this kind's actions (${explainError(error).headline})` });
      return;
    }
    if (room !== this.#room) return;
    if (description === null) {
      this.#forms.show(null, { note: "This server does not describe room kinds: type an action's name below." });
      return;
    }
    if (description === undefined) {
      this.#forms.show(null, { note: "The server did not describe this kind of room." });
      return;
    }
    $("room-scope").textContent = description.scope ?? "";
    if (description.scope === "per-session") {
      $("room-note").hidden = false;
      $("room-note").textContent = "This kind is per-session: this page sees its own private instance, not another client's.";
    }
    this.#forms.show(description.actions ?? []);
  }

  #renderMembers() {
    const members = this.#deleted ? {} : this.#room?.members ?? null;
    const rows = memberRows(members);
    $("room-members").replaceChildren(...rows.map(({ id, name, user, says }) => {
      const item = document.createElement("li");
      item.dataset.member = id;
      item.title = user === id ? `member ${id}` : `member ${id}, user ${user}`;
      const label = document.createElement("span");
      label.className = "member-name";
      label.textContent = name;
      item.append(label);
      if (says) {
        const data = document.createElement("code");
        data.className = "member-data";
        data.textContent = shortJSON(says, 60);
        item.append(data);
      }
      return item;
    }));
    const users = new Set(rows.map((row) => row.user)).size;
    $("room-members-count").textContent = members === null || this.#deleted ? ""
      : `${rows.length} member${rows.length === 1 ? "" : "s"}${users < rows.length ? `, ${users} ${users === 1 ? "person" : "people"}` : ""}`;
    let note;
    if (this.#deleted) {
      note = "The room was deleted, and its presence with it: nobody is here any more.";
    } else if (members !== null) {
      note = rows.length > 0
        ? "Clients that joined with presence, by the name they gave. This page watches without being listed."
        : "Nobody is listed. A client is listed when it joins with presence: tether --name kim ROOM in a terminal, or client.room(name, { presence: { name } }) with tether.js.";
    } else if (this.#presenceKnown) {
      note = "This room keeps no presence: per-session rooms, the server's own room and kinds that opt out list nobody.";
    } else {
      note = "Asking the room who is here…";
    }
    $("room-members-note").textContent = note;
  }

  #changed(arrivedAt) {
    this.#scheduler.schedule("room", () => this.#render(), arrivedAt);
  }

  #render() {
    const room = this.#room;
    if (!room || room.version === null) return;
    if (!this.#rendered) $("room-state").textContent = "";
    this.#tree.update(room.state, { flash: this.#rendered });
    this.#rendered = true;
    $("room-version").textContent = String(room.version);
    $("room-epoch").textContent = room.epoch ?? "—";
    this.#history?.roomAt(room.version);
    this.#renderPatchesSoon();
  }

  #renderPatchesSoon() {
    if (this.#patchListTimer !== null) return;
    const wait = this.#patchListDrawnAt + PATCH_LIST_INTERVAL_MS - performance.now();
    if (wait <= 0) return this.#renderPatches();
    this.#patchListTimer = setTimeout(() => {
      this.#patchListTimer = null;
      this.#scheduler.schedule("patches", () => this.#renderPatches());
    }, wait);
  }

  #renderPatches() {
    this.#patchListDrawnAt = performance.now();
    const fresh = this.#patchLog.length - this.#renderedPatches;
    if (fresh <= 0) return;
    const list = $("room-patches");
    const newest = this.#patchLog.slice(-Math.min(fresh, PATCH_LOG));
    const fragment = document.createDocumentFragment();
    for (let i = newest.length - 1; i >= 0; i--) fragment.append(this.#patchItem(newest[i]));
    list.prepend(fragment);
    while (list.children.length > PATCH_LOG) list.lastElementChild.remove();
    this.#patchLog = this.#patchLog.slice(-PATCH_LOG);
    this.#renderedPatches = this.#patchLog.length;
    $("room-patches-empty").hidden = true;
  }

  #patchItem({ at, from, version, ops }) {
    const item = document.createElement("li");
    const head = document.createElement("div");
    head.className = "patch-head";
    const versions = document.createElement("span");
    versions.className = "patch-version";
    versions.textContent = version - from > 1 ? `v${from} → v${version} (${version - from} merged)` : `v${from} → v${version}`;
    const time = document.createElement("time");
    time.textContent = `${clockTime(at)}.${String(at % 1000).padStart(3, "0")}`;
    head.append(versions, time);
    item.append(head, opsList(ops));
    return item;
  }

  #showError(error) {
    const banner = $("room-error");
    if (!error) {
      banner.hidden = true;
      banner.textContent = "";
      return;
    }
    const { code, headline, detail } = explainError(error);
    banner.hidden = false;
    banner.textContent = `${headline}${detail ? ` The server says: ${detail}` : ""} [${code}]`;
    if (this.#room && this.#room.version === null && !this.#rendered) $("room-state").textContent = "No state: the room could not be joined.";
  }
}
