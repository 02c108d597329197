// JSON Pointer and JSON Patch in tether.js: RFC 6901's examples, RFC 6902's appendix A, error
// cases, atomicity, and that the input document is never modified.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { applyPatch, parsePointer, formatPointer, valueAt, jsonEqual, PatchError } from "../../Clients/web/tether.js";

/** Deep-freezes a value, so any write to it throws (modules are strict). */
function deepFreeze(value) {
  if (typeof value === "object" && value !== null) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Applies a patch to a frozen copy of `document`: proves the input is not touched. */
function apply(document, patch) {
  return applyPatch(deepFreeze(structuredClone(document)), patch);
}

describe("RFC 6902 appendix A", () => {
  const cases = [
    ["A.1 adding an object member", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }], { baz: "qux", foo: "bar" }],
    ["A.2 adding an array element", { foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }], { foo: ["bar", "qux", "baz"] }],
    ["A.3 removing an object member", { baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }], { foo: "bar" }],
    ["A.4 removing an array element", { foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }], { foo: ["bar", "baz"] }],
    ["A.5 replacing a value", { baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }], { baz: "boo", foo: "bar" }],
    ["A.6 moving a value",
      { foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } },
      [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }],
      { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } }],
    ["A.7 moving an array element", { foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }], { foo: ["all", "cows", "eat", "grass"] }],
    ["A.8 testing a value: success",
      { baz: "qux", foo: ["a", 2, "c"] },
      [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }],
      { baz: "qux", foo: ["a", 2, "c"] }],
    ["A.10 adding a nested member object", { foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }], { foo: "bar", child: { grandchild: {} } }],
    ["A.11 ignoring unrecognized elements", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux", xyz: 123 }], { foo: "bar", baz: "qux" }],
    ["A.14 ~ escape ordering", { "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: 10 }], { "/": 9, "~1": 10 }],
    ["A.16 adding an array value", { foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }], { foo: ["bar", ["abc", "def"]] }],
  ];
  for (const [name, document, patch, expected] of cases) {
    test(name, () => assert.deepEqual(apply(document, patch), expected));
  }

  test("A.9 testing a value: error", () => {
    assert.throws(() => apply({ baz: "qux" }, [{ op: "test", path: "/baz", value: "bar" }]), PatchError);
  });
  test("A.12 adding to a nonexistent target", () => {
    assert.throws(() => apply({ foo: "bar" }, [{ op: "add", path: "/baz/bat", value: "qux" }]), /does not exist/);
  });
  test("A.13 invalid JSON Patch document: a later op member wins and is not treated as add", () => {
    const patch = JSON.parse('[{ "op": "add", "path": "/baz", "value": "qux", "op": "remove" }]');
    assert.throws(() => apply({ foo: "bar" }, patch), /does not exist/);
  });
  test("A.15 comparing strings and numbers", () => {
    assert.throws(() => apply({ "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: "10" }]), /test failed/);
  });
});

describe("more operations", () => {
  test("add replaces an existing member, and at the root replaces the document", () => {
    assert.deepEqual(apply({ a: 1 }, [{ op: "add", path: "/a", value: 2 }]), { a: 2 });
    assert.deepEqual(apply({ a: 1 }, [{ op: "add", path: "", value: [1] }]), [1]);
    assert.deepEqual(apply({ a: 1 }, [{ op: "replace", path: "", value: "x" }]), "x");
  });
  test("add at index == length appends; - appends to an empty array", () => {
    assert.deepEqual(apply([1, 2], [{ op: "add", path: "/2", value: 3 }]), [1, 2, 3]);
    assert.deepEqual(apply({ a: [] }, [{ op: "add", path: "/a/-", value: 0 }]), { a: [0] });
  });
  test("- is a plain member name in an object", () => {
    assert.deepEqual(apply({}, [{ op: "add", path: "/-", value: 1 }]), { "-": 1 });
  });
  test("the empty member name and escaped names", () => {
    assert.deepEqual(apply({ "": 1 }, [{ op: "replace", path: "/", value: 2 }]), { "": 2 });
    assert.deepEqual(apply({}, [{ op: "add", path: "/a~1b~0c", value: 1 }]), { "a/b~c": 1 });
    assert.deepEqual(apply({ "m~n": 1 }, [{ op: "remove", path: "/m~0n" }]), {});
  });
  test("move to the same place is a no-op but the source must exist", () => {
    assert.deepEqual(apply({ a: 1 }, [{ op: "move", from: "/a", path: "/a" }]), { a: 1 });
    assert.throws(() => apply({ a: 1 }, [{ op: "move", from: "/b", path: "/b" }]), /does not exist/);
  });
  test("move between arrays and objects, and to a sibling with a longer name", () => {
    assert.deepEqual(apply({ a: [1, 2], b: {} }, [{ op: "move", from: "/a/0", path: "/b/x" }]), { a: [2], b: { x: 1 } });
    assert.deepEqual(apply({ a: 1 }, [{ op: "move", from: "/a", path: "/ab" }]), { ab: 1 });
  });
  test("copy makes an independent copy", () => {
    const result = apply({ a: { x: 1 } }, [
      { op: "copy", from: "/a", path: "/b" },
      { op: "replace", path: "/a/x", value: 2 },
      { op: "add", path: "/b/y", value: 3 },
    ]);
    assert.deepEqual(result, { a: { x: 2 }, b: { x: 1, y: 3 } });
  });
  test("test compares JSON values: member order does not matter, types do", () => {
    assert.doesNotThrow(() => apply({ a: { x: 1, y: [1, { z: null }] } }, [{ op: "test", path: "/a", value: { y: [1, { z: null }], x: 1 } }]));
    assert.throws(() => apply({ a: [1] }, [{ op: "test", path: "/a", value: { 0: 1 } }]), /test failed/);
    assert.throws(() => apply({ a: null }, [{ op: "test", path: "/a", value: false }]), /test failed/);
    assert.throws(() => apply({}, [{ op: "test", path: "/a", value: null }]), /does not exist/);
    assert.doesNotThrow(() => apply({ a: null }, [{ op: "test", path: "/a", value: null }]));
  });
  test("many operations on one array in one patch", () => {
    const ops = [];
    for (let i = 0; i < 100; i++) ops.push({ op: "add", path: "/items/-", value: { id: i } });
    for (let i = 0; i < 50; i++) ops.push({ op: "remove", path: "/items/0" });
    const result = apply({ items: [] }, ops);
    assert.equal(result.items.length, 50);
    assert.deepEqual(result.items[0], { id: 50 });
  });
});

describe("errors", () => {
  const cases = [
    ["remove a missing member", { a: 1 }, [{ op: "remove", path: "/b" }], /does not exist/],
    ["remove past the end", [1], [{ op: "remove", path: "/1" }], /array index/],
    ["remove the root", { a: 1 }, [{ op: "remove", path: "" }], /whole document/],
    ["replace a missing member", { a: 1 }, [{ op: "replace", path: "/b", value: 1 }], /does not exist/],
    ["replace at index == length", [1], [{ op: "replace", path: "/1", value: 1 }], /array index/],
    ["replace at -", [1], [{ op: "replace", path: "/-", value: 1 }], /array index/],
    ["add past the end", [1], [{ op: "add", path: "/2", value: 1 }], /array index/],
    ["add at a leading-zero index", [1, 2], [{ op: "add", path: "/01", value: 1 }], /array index/],
    ["add at a negative index", [1, 2], [{ op: "add", path: "/-1", value: 1 }], /array index/],
    ["add under a missing parent", { a: {} }, [{ op: "add", path: "/a/b/c", value: 1 }], /does not exist/],
    ["add under a scalar", { a: 1 }, [{ op: "add", path: "/a/b", value: 1 }], /does not exist/],
    ["add to a scalar document", 5, [{ op: "add", path: "/a", value: 1 }], /not an object or array/],
    ["move from a missing path", { a: 1 }, [{ op: "move", from: "/b", path: "/c" }], /does not exist/],
    ["move into its own child", { a: { b: {} } }, [{ op: "move", from: "/a", path: "/a/b/c" }], /own child/],
    ["copy from a missing path", { a: 1 }, [{ op: "copy", from: "/b", path: "/c" }], /does not exist/],
    ["an unknown op", {}, [{ op: "frob", path: "/a" }], /unknown op/],
    ["a missing op", {}, [{ path: "/a", value: 1 }], /unknown op/],
    ["add without value", {}, [{ op: "add", path: "/a" }], /needs a "value"/],
    ["replace without value", { a: 1 }, [{ op: "replace", path: "/a" }], /needs a "value"/],
    ["test without value", { a: 1 }, [{ op: "test", path: "/a" }], /needs a "value"/],
    ["move without from", { a: 1 }, [{ op: "move", path: "/a" }], /needs a string "from"/],
    ["an operation without path", {}, [{ op: "remove" }], /needs a string "path"/],
    ["a path without a leading slash", { a: 1 }, [{ op: "remove", path: "a" }], /must be empty or start with \//],
    ["a bad escape", { a: 1 }, [{ op: "remove", path: "/a~2" }], /~ not followed by 0 or 1/],
    ["an operation that is not an object", {}, ["add"], /an operation is an object/],
    ["prototype members are not members", {}, [{ op: "remove", path: "/toString" }], /does not exist/],
    ["array methods are not indexes", { a: [1] }, [{ op: "replace", path: "/a/length", value: 0 }], /array index/],
  ];
  for (const [name, document, patch, message] of cases) {
    test(name, () => assert.throws(() => apply(document, patch), (error) => error instanceof PatchError && message.test(error.message)));
  }
  test("a patch that is not an array", () => {
    assert.throws(() => applyPatch({}, { op: "add", path: "/a", value: 1 }), PatchError);
  });
  test("the error names the failing operation's index", () => {
    assert.throws(() => apply({ a: 1 }, [{ op: "add", path: "/b", value: 2 }, { op: "remove", path: "/c" }]), (error) => error.index === 1);
  });
});

describe("atomicity and sharing", () => {
  test("a failing operation in the middle leaves the document unchanged", () => {
    const document = { a: 1, b: { c: [1, 2, 3] }, d: "x" };
    const before = structuredClone(document);
    const patch = [
      { op: "replace", path: "/a", value: 2 },
      { op: "add", path: "/b/c/0", value: 0 },
      { op: "remove", path: "/d" },
      { op: "move", from: "/b/c/1", path: "/e" },
      { op: "remove", path: "/missing" },
      { op: "add", path: "/f", value: 1 },
    ];
    assert.throws(() => applyPatch(document, patch), (error) => error.index === 4);
    assert.deepEqual(document, before);
  });
  test("a successful patch does not modify its input and shares untouched subtrees", () => {
    const untouched = { big: [1, 2, 3] };
    const document = { list: [{ done: false }, { done: false }], other: untouched };
    const before = structuredClone(document);
    const result = applyPatch(document, [{ op: "replace", path: "/list/1/done", value: true }]);
    assert.deepEqual(document, before);
    assert.equal(result.other, untouched);
    assert.equal(result.list[0], document.list[0]);
    assert.notEqual(result.list[1], document.list[1]);
    assert.deepEqual(result.list[1], { done: true });
  });
  test("values carried by the patch are not modified by later operations", () => {
    const value = { x: 1 };
    const patch = [{ op: "add", path: "/a", value }, { op: "replace", path: "/a/x", value: 2 }];
    const result = applyPatch({}, patch);
    assert.deepEqual(result, { a: { x: 2 } });
    assert.deepEqual(value, { x: 1 });
  });
  test("__proto__ is a plain member, never the prototype", () => {
    const result = apply({}, [{ op: "add", path: "/__proto__", value: { polluted: true } }]);
    assert.equal(Object.getPrototypeOf(result), Object.prototype);
    assert.equal(result.polluted, undefined);
    assert.deepEqual(Object.keys(result), ["__proto__"]);
    assert.equal(({}).polluted, undefined);
    const parsed = JSON.parse('{"__proto__": {"x": 1}}');
    const edited = applyPatch(parsed, [{ op: "replace", path: "/__proto__/x", value: 2 }]);
    assert.equal(valueAt(edited, "/__proto__/x"), 2);
    assert.equal(Object.getPrototypeOf(edited), Object.prototype);
  });
});

describe("JSON Pointer", () => {
  // RFC 6901 section 5.
  const document = { foo: ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, 'k"l': 6, " ": 7, "m~n": 8 };
  const cases = [
    ["", document], ["/foo", ["bar", "baz"]], ["/foo/0", "bar"], ["/", 0], ["/a~1b", 1], ["/c%d", 2], ["/e^f", 3],
    ["/g|h", 4], ["/i\\j", 5], ['/k"l', 6], ["/ ", 7], ["/m~0n", 8],
  ];
  for (const [pointer, expected] of cases) {
    test(`RFC 6901: "${pointer}"`, () => {
      assert.deepEqual(valueAt(document, pointer), expected);
      assert.equal(formatPointer(parsePointer(pointer)), pointer);
    });
  }
  test("escaping order: ~01 is ~1, not /", () => {
    assert.deepEqual(parsePointer("/~01"), ["~1"]);
    assert.deepEqual(parsePointer("/~10"), ["/0"]);
    assert.equal(formatPointer(["~/"]), "/~0~1");
  });
  test("absent values", () => {
    assert.equal(valueAt(document, "/nope"), undefined);
    assert.equal(valueAt(document, "/foo/2"), undefined);
    assert.equal(valueAt(document, "/foo/-"), undefined);
    assert.equal(valueAt(document, "/foo/0/x"), undefined);
    assert.equal(valueAt(document, "/constructor"), undefined);
    assert.equal(valueAt(undefined, "/a"), undefined);
  });
  test("malformed pointers throw", () => {
    assert.throws(() => parsePointer("a"), PatchError);
    assert.throws(() => parsePointer("/~"), PatchError);
    assert.throws(() => parsePointer("/a~x"), PatchError);
  });
  test("jsonEqual", () => {
    assert.ok(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }));
    assert.ok(jsonEqual(1, 1.0));
    assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: undefined }));
    assert.ok(!jsonEqual([], {}));
    assert.ok(!jsonEqual(null, {}));
    assert.ok(!jsonEqual("1", 1));
  });
});
