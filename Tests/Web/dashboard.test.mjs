// The dashboard's pure parts under Node: typed action fields, suggestions from a room's state,
// plain-language errors, formatting, chart scales. The page itself is tested in headless Chromium
// (Tests/Browser/).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readField } from "../../Clients/web/dashboard/action-forms.js";
import { findSuggestions, memberRows } from "../../Clients/web/dashboard/room-view.js";
import { describeConnection, explainError, formatBytes, formatDuration, formatNumber, shortJSON } from "../../Clients/web/dashboard/format.js";
import { niceMax } from "../../Clients/web/dashboard/charts.js";

test("action fields are read as their JSON type; optional empty fields are left out", () => {
  assert.equal(readField("string", "milk", false), "milk");
  assert.equal(readField("string", "", false), "", "a required string may be empty");
  assert.equal(readField("string", "", true), undefined);
  assert.equal(readField("integer", "42", false), 42);
  assert.equal(readField("integer", "-3", true), -3);
  assert.throws(() => readField("integer", "2.5", false), /whole number/);
  assert.throws(() => readField("integer", "", false), /needs a whole number/);
  assert.equal(readField("integer", "", true), undefined);
  assert.equal(readField("number", "1350.5", false), 1350.5);
  assert.throws(() => readField("number", "abc", false), /needs a number/);
  assert.equal(readField("boolean", "true", false), true);
  assert.equal(readField("boolean", "false", false), false);
  assert.equal(readField("boolean", "", true), undefined);
  assert.deepEqual(readField("array", "[1, 2]", false), [1, 2]);
  assert.throws(() => readField("array", '{"a": 1}', false), /JSON array/);
  assert.deepEqual(readField("object", '{"a": 1}', false), { a: 1 });
  assert.throws(() => readField("object", "[1]", false), /JSON object/);
  assert.throws(() => readField("object", "null", false), /JSON object/);
  assert.equal(readField("any", '"text"', false), "text");
  assert.equal(readField("any", "null", false), null);
  assert.throws(() => readField("any", "{oops", false), /not valid JSON/);
});

test("presence members become rows by name (data.name, else the user) with what else they say", () => {
  const rows = memberRows({
    s2: { user: "s2", data: { name: "lee" } },
    s1: { user: "s1", data: { name: "kim", editing: "t1" } },
    s3: { user: "alice", data: {} },
    s4: { user: "s4", data: { device: "phone" } },
  });
  assert.deepEqual(rows, [
    { id: "s3", name: "alice", user: "alice", says: null },
    { id: "s1", name: "kim", user: "s1", says: { editing: "t1" } },
    { id: "s2", name: "lee", user: "s2", says: null },
    { id: "s4", name: "s4", user: "s4", says: { device: "phone" } },
  ]);
  assert.deepEqual(memberRows(null), [], "no presence: no rows");
});

test("suggestions are the values of same-named members in the state, labelled by a title", () => {
  const state = { items: [{ id: "t1", title: "milk", done: false }, { id: "t2", title: "bread", done: true }], owner: { id: "me" } };
  assert.deepEqual(findSuggestions(state, "id"), [
    { value: "t1", label: "milk" }, { value: "t2", label: "bread" }, { value: "me", label: undefined },
  ]);
  assert.deepEqual(findSuggestions(state, "key"), []);
  assert.deepEqual(findSuggestions(undefined, "id"), []);
  const many = { items: Array.from({ length: 500 }, (_, i) => ({ id: `t${i}` })) };
  assert.equal(findSuggestions(many, "id").length, 200, "capped");
  assert.deepEqual(findSuggestions({ a: [{ id: "x" }, { id: "x" }] }, "id"), [{ value: "x", label: undefined }], "no duplicates");
});

test("errors are explained in plain words, with the server's own message kept", () => {
  const { headline, detail, code } = explainError({ code: "invalid_args", message: 'no item with id "t9"' });
  assert.equal(code, "invalid_args");
  assert.match(headline, /arguments don't fit/);
  assert.equal(detail, 'no item with id "t9"');
  assert.match(explainError({ code: "unauthorized", message: "unauthorized" }).headline, /token/);
  assert.equal(explainError({ code: "unauthorized", message: "unauthorized" }).detail, "", "a message that only repeats the code is dropped");
  assert.match(explainError({ code: "something_new", message: "x" }).headline, /something_new/);
  assert.match(explainError({ code: "closed", applied: "unknown" }).outcome, /may or may not/, "sent, answer never heard");
  assert.match(explainError({ code: "stale_action", applied: "unknown" }).headline, /no longer remembers/);
  assert.equal(explainError({ code: "not_sent", applied: false }).outcome, "Nothing was changed.", "not sent: not applied");
  assert.match(explainError({ code: "not_sent", applied: false }).headline, /Not sent/);
  assert.match(explainError({ code: "not_connected", applied: false }).headline, /Not connected/);
  assert.equal(explainError({ code: "unavailable", applied: false }).outcome, "Nothing was changed.");
  assert.equal(explainError({ code: "unknown_room" }).outcome, "", "an error that answers no request");
});

test("durations, sizes, numbers and connection states read naturally", () => {
  // No-break spaces (U+00A0): a duration never wraps inside ("6 min" / "33 s").
  const nbsp = (text) => text.replaceAll(" ", "\u00a0");
  assert.equal(formatDuration(42), nbsp("42 s"));
  assert.equal(formatDuration(125), nbsp("2 min 5 s"));
  assert.equal(formatDuration(393), nbsp("6 min 33 s"));
  assert.equal(formatDuration(3725), nbsp("1 h 2 min"));
  assert.equal(formatDuration(2 * 86400 + 3600), nbsp("2 d 1 h"));
  assert.equal(formatDuration(undefined), "—");
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(12345), "12.1 KiB");
  assert.equal(formatBytes(5 * 1024 * 1024), "5.00 MiB");
  assert.equal(formatNumber(1234.5), "1,235");
  assert.equal(formatNumber(3.25), "3.3");
  assert.equal(formatNumber(7), "7");
  assert.equal(formatNumber(null), "—");
  assert.equal(shortJSON({ title: "x".repeat(100) }, 20).length, 20);
  assert.equal(describeConnection("live"), "Live");
  assert.equal(describeConnection("reconnecting", { attempt: 3, delay: 1600 }), "Reconnecting in 1.6 s (attempt 3)");
});

test("chart scales round up to 1, 2 or 5 times a power of ten", () => {
  assert.equal(niceMax(0), 1);
  assert.equal(niceMax(1), 1);
  assert.equal(niceMax(1.2), 2);
  assert.equal(niceMax(30), 50);
  assert.equal(niceMax(51), 100);
  assert.equal(niceMax(4000), 5000);
});
