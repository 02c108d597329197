// The room view's History panel: a slider over a stored room's kept versions (GET
// /rooms/{room}/history), the state at the one picked (GET /rooms/{room}/state?at=V) and the step
// that made it. "Live" follows the newest version; moving to another turns it off until pressed.
// The pure parts are in history-scrubber.js.

import { LiveJsonTree } from "./json-tree.js";
import { opsList } from "./room-view.js";
import {
  describeStep, historyPath, historyProblem, knownProblem, neighbour, refreshDelay, stateProblem, statePath,
  stepAt, versionRange, REFRESH_INTERVAL_MS,
} from "./history-scrubber.js";

const $ = (id) => document.getElementById(id);
const SHOWN_OPS = 20;
const STATE_DELAY_MS = 120;  // while the slider is dragged, a state is asked for once it rests
const KEPT_STATES = 100;

export class HistoryPanel {
  #getJSON;
  #context;
  #tree;
  /** One object per opened room: answers for an earlier one are dropped. */
  #session = null;
  #room = null;
  #steps = [];
  #epoch = null;
  #listed = null;  // the room's version when the history was last read
  #roomVersion = null;
  #selected = null;
  #live = true;
  #loading = false;
  #stopped = false;
  #lastLoadAt = -Infinity;
  #refreshTimer = null;
  #stateTimer = null;
  #states = new Map();  // version → {state} or {problem}

  /**
   * `getJSON(path, signal)` resolves with {status, body} (status 0: not reached); `context()`
   * says what the page knows: {access, storageKind}.
   */
  constructor({ getJSON, context }) {
    this.#getJSON = getJSON;
    this.#context = context;
    this.#tree = new LiveJsonTree($("history-state"), { autoExpandDepth: 2 });
    $("history-slider").addEventListener("input", (event) => this.#pick(Number(event.target.value)));
    $("history-prev").addEventListener("click", () => this.#step(-1));
    $("history-next").addEventListener("click", () => this.#step(1));
    $("history-live").addEventListener("click", () => this.#setLive(!this.#live));
  }

  open(room) {
    this.close();
    this.#session = { abort: new AbortController() };
    this.#room = room;
    const problem = knownProblem({ room, ...this.#context() });
    this.#stopped = problem !== null;
    this.#note(problem ?? "The history is read once the room is joined.");
  }

  /** The room on screen is at `version` (called at most once a frame). */
  roomAt(version) {
    if (!this.#room) return;
    this.#roomVersion = version;
    if (this.#listed === null && !this.#stopped && !this.#loading && this.#refreshTimer === null) {
      this.#note(version === 0 ? "No change yet: the history starts with the room's first change." : "Reading the room's history…");
    }
    if (!this.#live && this.#steps.length > 0) this.#renderFollow();
    this.#refreshSoon();
  }

  close() {
    this.#session?.abort.abort();
    this.#session = null;
    clearTimeout(this.#refreshTimer);
    clearTimeout(this.#stateTimer);
    this.#refreshTimer = this.#stateTimer = null;
    this.#room = this.#epoch = this.#listed = this.#roomVersion = this.#selected = null;
    this.#steps = [];
    this.#states.clear();
    this.#live = true;
    this.#loading = this.#stopped = false;
    this.#lastLoadAt = -Infinity;
    this.#tree.clear();
  }

  // MARK: Reading the history

  #refreshSoon() {
    if (this.#refreshTimer !== null) return;
    const delay = refreshDelay({ roomVersion: this.#roomVersion, listedVersion: this.#listed, loading: this.#loading,
      stopped: this.#stopped, lastLoadAt: this.#lastLoadAt, now: performance.now() });
    if (delay === null) return;
    this.#refreshTimer = setTimeout(() => {
      this.#refreshTimer = null;
      this.#load();
    }, delay);
  }

  async #load() {
    const session = this.#session;
    if (!session) return;
    this.#loading = true;
    this.#lastLoadAt = performance.now();
    const { status, body } = await this.#getJSON(historyPath(this.#room), session.abort.signal);
    if (session !== this.#session) return;
    this.#loading = false;
    if (status !== 200) {
      const { text, retry } = historyProblem(status, body);
      this.#stopped = !retry;
      if (!retry || this.#steps.length === 0) this.#note(text);
      // A busy or unreachable server: asked again a little later, even if the room stays still.
      if (retry) setTimeout(() => { if (session === this.#session) this.#refreshSoon(); }, 3 * REFRESH_INTERVAL_MS);
      return;
    }
    this.#show(body);
    this.#refreshSoon();  // the room may have moved while this was read
  }

  #show(history) {
    if (history.epoch !== this.#epoch) this.#states.clear();
    this.#epoch = history.epoch;
    this.#listed = Number.isInteger(history.version) ? history.version : null;
    this.#steps = (Array.isArray(history.steps) ? history.steps : []).filter((step) => Number.isInteger(step?.version));
    const range = versionRange(this.#steps);
    if (!range) return this.#note("No change kept yet: the history starts with the room's first change.");
    $("history-note").hidden = true;
    $("history-body").hidden = false;
    const slider = $("history-slider");
    slider.min = String(range.min);
    slider.max = String(range.max);
    $("history-range").textContent = `v${range.min} to v${range.max} kept`;
    const selected = this.#live || this.#selected === null ? range.max : this.#selected;
    this.#select(stepAt(this.#steps, selected).version);
  }

  /** Says `text` in place of the scrubber. */
  #note(text) {
    $("history-note").hidden = false;
    $("history-note").textContent = text;
    $("history-body").hidden = true;
    $("history-range").textContent = "";
  }

  // MARK: Picking a version

  #pick(value) {
    this.#live = false;
    this.#select(stepAt(this.#steps, value).version);
  }

  #step(direction) {
    const version = neighbour(this.#steps, this.#selected, direction);
    if (version === null) return;
    this.#live = false;
    this.#select(version);
  }

  #setLive(live) {
    this.#live = live;
    if (live && this.#steps.length > 0) this.#select(this.#steps[0].version);
    else this.#renderFollow();
    this.#refreshSoon();
  }

  #select(version) {
    const step = stepAt(this.#steps, version);
    this.#selected = step.version;
    const slider = $("history-slider");
    slider.value = String(step.version);
    slider.setAttribute("aria-valuetext", `version ${step.version}`);
    $("history-value").textContent = `v${step.version}`;
    $("history-prev").disabled = neighbour(this.#steps, step.version, -1) === null;
    $("history-next").disabled = neighbour(this.#steps, step.version, 1) === null;
    this.#renderFollow();
    $("history-step").textContent = describeStep(step);
    const patch = Array.isArray(step.patch) ? step.patch : null;
    const count = patch?.length ?? step.ops ?? 0;
    $("history-ops-title").textContent = `What v${step.version} changed: ${count} operation${count === 1 ? "" : "s"}`;
    $("history-ops").replaceChildren(patch ? opsList(patch, SHOWN_OPS) : opsList((step.paths ?? []).map((path) => ({ op: "change", path }))));
    $("history-provenance").textContent = provenanceText(step);
    this.#showState(step.version);
  }

  #renderFollow() {
    const button = $("history-live");
    button.setAttribute("aria-pressed", String(this.#live));
    button.textContent = this.#live ? "● Live" : "Go live";
    const behind = Number.isInteger(this.#roomVersion) && this.#roomVersion > this.#selected ? `; the room is at v${this.#roomVersion} now` : "";
    $("history-follow").textContent = this.#live ? "Following the newest version as the room changes."
      : `Showing v${this.#selected}${behind}. Press “Go live” to follow the newest again.`;
  }

  // MARK: The state at the version picked

  #showState(version) {
    $("history-state-title").textContent = `State at v${version}`;
    clearTimeout(this.#stateTimer);
    this.#stateTimer = null;
    const known = this.#states.get(version);
    if (known) return this.#renderState(known);
    $("history-state").classList.add("stale");
    this.#stateTimer = setTimeout(() => this.#loadState(version), STATE_DELAY_MS);
  }

  async #loadState(version) {
    this.#stateTimer = null;
    const session = this.#session;
    const { status, body } = await this.#getJSON(statePath(this.#room, version), session.abort.signal);
    if (session !== this.#session) return;
    const answer = status === 200 ? { state: body.state } : { problem: stateProblem(status, body, version) };
    // A refusal that may pass later (busy, unreachable) is not kept.
    if (status === 200 || status === 410 || status === 501) {
      this.#states.set(version, answer);
      if (this.#states.size > KEPT_STATES) this.#states.delete(this.#states.keys().next().value);
    }
    if (version === this.#selected) this.#renderState(answer);
  }

  #renderState({ state, problem }) {
    $("history-state").classList.remove("stale");
    $("history-state-note").hidden = problem === undefined;
    $("history-state-note").textContent = problem ?? "";
    if (problem !== undefined) return this.#tree.clear();
    this.#tree.update(state);  // stepping between versions flashes what differs
  }
}

/** The step's details besides its one line: the cause, the arguments' digest, the full date. */
function provenanceText(step) {
  const parts = [`cause: ${step.cause ?? "unknown"}`];
  if (step.argsDigest && step.args === undefined) parts.push(`arguments #${step.argsDigest} (a digest: this kind keeps no arguments)`);
  if (Number.isFinite(step.at)) parts.push(new Date(step.at * 1000).toLocaleString("en-GB"));
  return parts.join(" · ");
}
