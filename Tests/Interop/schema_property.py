#!/usr/bin/env python3
"""Property test of the schemas `describe` carries, against a running tetherd.

For every kind with a schema, Hypothesis draws sequences of actions (arguments drawn from each
action's own schema, with strings from the room's state and a small pool, sometimes an unknown
member), sends them to a fresh room, and checks after every answer:
- the mirrored state (snapshot, then patches) validates against the kind's `state` schema, the
  viewer's own members against `views` (JSON Schema 2020-12, the `jsonschema` library);
- arguments the schema accepts are never refused for their shape (an `invalid_args` without a
  `reason`); arguments it rejects are never acknowledged.

Usage: schema_property.py URL [EXAMPLES]
Prints one JSON line: {"ok": true, "kinds": {...}}, or {"ok": false, "error": ...} and exits 1.
"""
import asyncio
import itertools
import json
import sys

import jsonpatch
import jsonschema
import websockets
from hypothesis import HealthCheck, given, settings, strategies as st

POOL = ["", "1", "2", "+", "=", "back", "clear", "x", "EUR", "USD", "pizza", "salad", "t1", "t2", "a@b.cd", "abcdef", "key"]
fresh_rooms = itertools.count(1)


def resolve(schema, defs):
    while "$ref" in schema:
        schema = defs[schema["$ref"].split("/")[-1]]
    return schema


def value_strategy(schema, defs, strings):
    """Values of `schema` (the subset the contracts' schemas use)."""
    schema = resolve(schema, defs)
    types = schema.get("type")
    if isinstance(types, list):
        return st.one_of([value_strategy({**schema, "type": t}, defs, strings) for t in types])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if types == "null":
        return st.none()
    if types == "boolean":
        return st.booleans()
    if types == "integer":
        # The bounds and one past them, drawn often: a schema without them once let 2**63 through.
        low, high = schema.get("minimum", -2**63), schema.get("maximum", 2**63 - 1)
        return st.one_of(st.integers(-3, 12), st.sampled_from([low, high, low - 1, high + 1]), st.integers())
    if types == "number":
        return st.one_of(st.floats(-10, 10, allow_nan=False), st.integers(-5, 5))
    if types == "string":
        return st.one_of(st.sampled_from(strings), st.text(max_size=8))
    if types == "array":
        return st.lists(value_strategy(schema.get("items", {}), defs, strings), max_size=3)
    if types == "object":
        return object_strategy(schema, defs, strings)
    return st.one_of(st.none(), st.integers(), st.sampled_from(strings))  # {}: any JSON


def object_strategy(schema, defs, strings, unknown_member=False):
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    members = {name: value_strategy(sub, defs, strings) for name, sub in properties.items()}
    fixed = st.fixed_dictionaries({k: v for k, v in members.items() if k in required},
                                  optional={k: v for k, v in members.items() if k not in required})
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        fixed = st.tuples(fixed, st.dictionaries(st.sampled_from(strings), value_strategy(extra, defs, strings), max_size=2)).map(lambda p: {**p[1], **p[0]})
    if unknown_member:
        fixed = fixed.map(lambda args: {**args, "bogus": 1})
    return fixed


def strings_in(value, found):
    if isinstance(value, str):
        found.add(value)
    elif isinstance(value, list):
        for item in value:
            strings_in(item, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            found.add(key)
            strings_in(item, found)
    return found


class Failure(Exception):
    pass


class Room:
    """One connection joined to one room, its mirror checked against the kind's schema."""

    def __init__(self, ws, name, schema):
        self.ws, self.name, self.schema = ws, name, schema
        defs = {"$defs": schema.get("$defs", {})}
        self.views = set(schema["views"].get("properties", {}))
        self.state_validator = jsonschema.Draft202012Validator({**schema["state"], **defs})
        self.views_validator = jsonschema.Draft202012Validator({**schema["views"], **defs})
        self.args_validators = {name: jsonschema.Draft202012Validator({**args, **defs}) for name, args in schema["actions"].items()}
        self.state, self.version, self.next_id = None, None, 100

    async def request(self, message):
        self.next_id += 1
        request_id = self.next_id
        await self.ws.send(json.dumps({**message, "id": request_id}))
        while True:
            reply = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
            if reply.get("room") == self.name and reply["type"] == "snapshot":
                self.state, self.version = reply["state"], reply["version"]
                self.check(f"snapshot {self.version}")
            elif reply.get("room") == self.name and reply["type"] == "patch":
                self.state = jsonpatch.apply_patch(self.state, reply["ops"])
                self.version = reply["version"]
                self.check(f"patch to {self.version}")
            if reply.get("id") == request_id and reply["type"] in ("ack", "error"):
                return reply

    def check(self, what):
        shared = {k: v for k, v in self.state.items() if k not in self.views}
        own = {k: v for k, v in self.state.items() if k in self.views}
        for validator, document, part in ((self.state_validator, shared, "state"), (self.views_validator, own, "views")):
            error = jsonschema.exceptions.best_match(validator.iter_errors(document))
            if error is not None:
                raise Failure(f"{self.name} {what}: the {part} does not validate: {error.message} at {list(error.absolute_path)}: {json.dumps(self.state)[:400]}")

    async def act(self, name, args):
        valid = self.args_validators[name].is_valid(args)
        reply = await self.request({"type": "action", "room": self.name, "name": name, "args": args})
        if reply["type"] == "ack" and not valid:
            raise Failure(f"{self.name}: {name} {json.dumps(args)} was acknowledged, but its schema rejects it")
        if reply["type"] == "error" and valid and reply.get("code") == "invalid_args" and "reason" not in reply:
            raise Failure(f"{self.name}: {name} {json.dumps(args)} fits its schema, but was refused for its shape: {reply.get('message')}")
        return reply["type"] if reply["type"] == "ack" else reply.get("reason") or reply.get("code")


async def run(url, room_name, schema, actions, counts):
    async with websockets.connect(url, subprotocols=["tether.v1"]) as ws:
        await ws.recv()  # hello
        room = Room(ws, room_name, schema)
        joined = await room.request({"type": "join", "room": room_name, "presence": {"name": "prop"}})
        if joined["type"] != "ack" or room.state is None:
            raise Failure(f"join {room_name}: {joined}")
        for draw in actions:
            name, args = draw(room)
            outcome = await room.act(name, args)
            counts[outcome] = counts.get(outcome, 0) + 1


def test_kind(url, kind, examples):
    schema = kind["schema"]
    defs = schema.get("$defs", {})
    counts = {"ack": 0}
    names = sorted(schema["actions"])

    def action(name, bogus):
        def draw(data):
            return lambda room: (name, data.draw(object_strategy(resolve(schema["actions"][name], defs),
                                                                 defs, sorted(strings_in(room.state, set(POOL))), unknown_member=bogus)))
        return draw

    instanced = kind["name"] not in ("clock", "login")

    @settings(max_examples=examples if names else 1, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data(), st.lists(st.tuples(st.sampled_from(names or [""]), st.integers(0, 19)), max_size=20 if names else 0))
    def property(data, plan):
        room_name = f"{kind['name']}:prop-{next(fresh_rooms)}" if instanced else kind["name"]
        # Drawing inside the run: each action's strings come from the state at that moment.
        actions = [(lambda room, n=n, b=b: action(n, b == 13)(data)(room)) for n, b in plan]
        asyncio.run(run(url, room_name, schema, actions, counts))

    property()
    return counts


def main(url, examples):
    async def describe():
        async with websockets.connect(url, subprotocols=["tether.v1"]) as ws:
            await ws.recv()
            await ws.send(json.dumps({"type": "describe", "id": 1}))
            return json.loads(await ws.recv())["kinds"]

    kinds = [kind for kind in asyncio.run(describe()) if "schema" in kind]
    if not kinds:
        raise Failure("no kind has a schema")
    result = {kind["name"]: test_kind(url, kind, examples) for kind in kinds}
    print(json.dumps({"ok": True, "kinds": result}))


if __name__ == "__main__":
    try:
        main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25)
    except Failure as failure:
        print(json.dumps({"ok": False, "error": str(failure)}))
        sys.exit(1)
