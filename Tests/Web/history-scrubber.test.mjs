// The dashboard's history scrubber, its pure parts: slider values to steps, a step as one line,
// when to read the history again, and refusals in words. The panel itself is tested in headless
// Chromium (Tests/Browser/test_tetherd.py, test_the_history_scrubber_*).

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  describeStep, errorMessage, historyPath, historyProblem, knownProblem, neighbour, refreshDelay, stateProblem,
  statePath, stepAt, stepWhat, stepWho, versionRange,
} from "../../Clients/web/dashboard/history-scrubber.js";
import { clockTime } from "../../Clients/web/dashboard/format.js";

// Newest first, as the server sends them; v5 is missing (a gap: the slider must still land on a step).
const steps = [7, 6, 4, 3].map((version) => ({ version, cause: "action", action: "vote" }));

test("paths encode the room's name", () => {
  assert.equal(historyPath("vote:lunch"), "/rooms/vote%3Alunch/history?limit=200&patch=true");
  assert.equal(historyPath("a b/c", 5), "/rooms/a%20b%2Fc/history?limit=5&patch=true");
  assert.equal(statePath("vote:lunch", 3), "/rooms/vote%3Alunch/state?at=3");
});

test("the slider spans the oldest to the newest step listed", () => {
  assert.deepEqual(versionRange(steps), { min: 3, max: 7 });
  assert.deepEqual(versionRange([{ version: 1 }]), { min: 1, max: 1 });
  assert.equal(versionRange([]), null);
  assert.equal(versionRange(undefined), null);
});

test("a slider value picks the newest step at or before it", () => {
  assert.equal(stepAt(steps, 7).version, 7);
  assert.equal(stepAt(steps, 6).version, 6);
  assert.equal(stepAt(steps, 3).version, 3, "the oldest");
  assert.equal(stepAt(steps, 5).version, 4, "a gap: the step before it");
  assert.equal(stepAt(steps, 99).version, 7, "past the newest: the newest");
  assert.equal(stepAt(steps, 1).version, 3, "before the oldest: the oldest");
  assert.equal(stepAt([], 3), null);
});

test("older and newer step over gaps and stop at the ends", () => {
  assert.equal(neighbour(steps, 7, -1), 6);
  assert.equal(neighbour(steps, 6, -1), 4);
  assert.equal(neighbour(steps, 4, 1), 6);
  assert.equal(neighbour(steps, 3, 1), 4);
  assert.equal(neighbour(steps, 3, -1), null);
  assert.equal(neighbour(steps, 7, 1), null);
  assert.equal(neighbour([], 7, 1), null);
});

test("a step reads as one line: version, what, who, when, where", () => {
  const at = Date.UTC(2026, 10, 29, 12, 1, 2) / 1000;
  const vote = { version: 7, cause: "action", action: "vote", viewer: "alice", client: "c1", seq: 3, at, ops: 2 };
  assert.equal(describeStep(vote), `v7 · vote by alice (c1#3) · ${clockTime(at * 1000)}`);
  assert.equal(describeStep(vote, () => "12:01:02"), "v7 · vote by alice (c1#3) · 12:01:02");
  assert.equal(describeStep({ ...vote, node: "n1" }, () => "12:01:02"), "v7 · vote by alice (c1#3) · 12:01:02 · on n1");
  assert.equal(describeStep({ version: 2, cause: "action", action: "add", viewer: "bob", args: { title: "milk" } }),
    'v2 · add {"title":"milk"} by bob');
  assert.equal(describeStep({ version: 3, cause: "timer", timer: 0 }), "v3 · timer 0");
  assert.equal(describeStep({ version: 1 }), "v1 · unknown (stored before history was recorded)");
});

test("what and who cover every cause and partial provenance", () => {
  assert.match(stepWhat({ cause: "refused", action: "vote" }), /^vote \(refused/);
  assert.equal(stepWhat({ cause: "timer" }), "a timer");
  assert.match(stepWhat({ cause: "presence" }), /^presence/);
  assert.match(stepWhat({ cause: "viewers" }), /own values/);
  assert.equal(stepWhat({ cause: "action" }), "an action");
  assert.equal(stepWho({ viewer: "alice", client: "c1" }), "alice (c1)", "an unnumbered action: no #");
  assert.equal(stepWho({ client: "c1", seq: 2 }), "(c1#2)");
  assert.equal(stepWho({ viewer: "alice" }), "alice");
  assert.equal(stepWho({}), "");
  assert.equal(stepWho({ viewer: "alice", client: "alice c1", seq: 4 }), "alice (c1#4)", "a client keyed by its viewer: the viewer once");
  assert.equal(stepWho({ viewer: "al", client: "alice c1", seq: 4 }), "al (alice c1#4)");
});

test("the history is read again when the room passes it, at most once an interval", () => {
  const base = { roomVersion: 8, listedVersion: 7, loading: false, lastLoadAt: 10_000, now: 10_400, interval: 1000 };
  assert.equal(refreshDelay(base), 600, "waits out the interval");
  assert.equal(refreshDelay({ ...base, now: 12_000 }), 0, "long since the last read: now");
  assert.equal(refreshDelay({ ...base, roomVersion: 7 }), null, "nothing new");
  assert.equal(refreshDelay({ ...base, roomVersion: 6 }), null, "behind what is listed");
  assert.equal(refreshDelay({ ...base, loading: true }), null, "a read under way: after it");
  assert.equal(refreshDelay({ ...base, stopped: true }), null, "refused for good");
  assert.equal(refreshDelay({ ...base, listedVersion: null, lastLoadAt: -Infinity }), 0, "never read: now");
  assert.equal(refreshDelay({ ...base, roomVersion: 0, listedVersion: null }), null, "a room without a change has no history");
  assert.equal(refreshDelay({ ...base, roomVersion: null }), null, "not joined yet");
});

test("under a flood of patches the reads stay an interval apart", () => {
  // A patch every 10 ms for 5 s; a read takes 50 ms. Count the reads refreshDelay allows.
  let listed = 0, lastLoadAt = -Infinity, loadingUntil = -1, due = null, reads = 0;
  for (let now = 0, version = 1; now <= 5000; now += 10, version++) {
    const loading = now < loadingUntil;
    if (!loading && loadingUntil >= 0 && loadingUntil <= now) { listed = version - 5; loadingUntil = -1; }
    if (due !== null && now >= due) { due = null; reads++; lastLoadAt = now; loadingUntil = now + 50; continue; }
    if (due === null) {
      const delay = refreshDelay({ roomVersion: version, listedVersion: listed, loading: now < loadingUntil, lastLoadAt, now });
      if (delay !== null) due = now + delay;
    }
  }
  assert.ok(reads >= 4 && reads <= 6, `about one read a second, not one a patch: ${reads}`);
});

test("what is known before asking: the server's own rooms, a token without admin, no store", () => {
  assert.match(knownProblem({ room: "tether.server", access: "granted", storageKind: "sqlite" }), /own rooms keep no history/);
  assert.match(knownProblem({ room: "vote:lunch", access: "limited", storageKind: undefined }), /admin claim/);
  assert.match(knownProblem({ room: "vote:lunch", access: "granted", storageKind: "memory" }), /keeps no history/);
  assert.equal(knownProblem({ room: "vote:lunch", access: "granted", storageKind: "sqlite" }), null);
  assert.equal(knownProblem({ room: "vote:lunch", access: "unavailable", storageKind: undefined }), null, "unknown: ask");
  assert.equal(knownProblem({ room: "vote:lunch", access: "granted", storageKind: "jetstream" }), null);
});

test("refusals in words, and whether asking again may help", () => {
  assert.equal(errorMessage({ code: "unknown_room", message: "no such room" }), "no such room");
  assert.equal(errorMessage({ error: { code: "x", message: "nested" } }), "nested");
  assert.equal(errorMessage({ error: "plain" }), "plain");
  assert.equal(errorMessage(undefined), "");
  for (const status of [401, 403]) {
    const { text, retry } = historyProblem(status, { code: "unauthorized", message: "needs the admin claim" });
    assert.match(text, /admin claim/);
    assert.equal(retry, false);
  }
  const noStore = historyProblem(404, { code: "unknown_room", message: "this server keeps no history: it stores no rooms" });
  assert.match(noStore.text, /keeps no history/);
  assert.equal(noStore.retry, false);
  assert.match(historyProblem(404, { message: "no room x with a history here" }).text, /no stored history/);
  assert.equal(historyProblem(503, { message: "cannot read" }).retry, true);
  assert.match(historyProblem(503, { message: "cannot read" }).text, /cannot read/);
  assert.equal(historyProblem(0, {}).retry, true);
});

test("the state at a version: why it is not shown", () => {
  const gone = stateProblem(410, { message: "version 2 is not kept: the store rebuilds vote from version 900 to 1200" }, 2);
  assert.match(gone, /^The state at v2 is no longer kept \(version 2 is not kept: .*900 to 1200\); what the step changed is still shown\.$/);
  assert.match(stateProblem(501, { message: "not rebuilt on a cluster yet" }, 2), /not rebuilt on a cluster yet; what the step changed is still shown/);
  assert.match(stateProblem(403, {}, 2), /admin claim/);
  assert.match(stateProblem(503, {}, 2), /HTTP 503/);
});
