#!/usr/bin/env python3
"""A Tether client in Python, written from docs/PROTOCOL.md alone.

It mirrors a `todo` room from its snapshot and patches (applied with the `jsonpatch` library),
sends actions of its own while others change the room, then checks that its mirror equals a
fresh snapshot taken by a second connection.

Usage: mirror_todo.py URL ROOM ACTIONS FOREIGN
After its own ACTIONS it waits until it has seen FOREIGN items added by another client.
Prints one JSON line: {"ok": true, "version": V, "items": N, "patches": P}, or
{"ok": false, "error": WHY, ...} and exits 1.
"""
import asyncio
import json
import sys

import jsonpatch
import websockets


class Mirror:
    def __init__(self, room):
        self.room = room
        self.state = None
        self.epoch = None
        self.version = None
        self.patches = 0

    def receive(self, message):
        """Applies a snapshot or a patch of our room; anything else is ignored."""
        if message.get("room") != self.room:
            return
        if message["type"] == "snapshot":
            self.state, self.epoch, self.version = message["state"], message["epoch"], message["version"]
        elif message["type"] == "patch":
            if message["epoch"] != self.epoch or message["from"] != self.version:
                raise RuntimeError(f"gap: at {self.version}, got patch from {message['from']}")
            self.state = jsonpatch.apply_patch(self.state, message["ops"])
            self.version = message["version"]
            self.patches += 1


def fail(why, **details):
    print(json.dumps({"ok": False, "error": why, **details}))
    sys.exit(1)


async def main(url, room, actions, foreign):
    async with websockets.connect(url, subprotocols=["tether.v1"]) as ws:
        hello = json.loads(await ws.recv())
        assert hello["type"] == "hello" and hello["protocol"] == 1, hello
        await ws.send(json.dumps({"type": "join", "room": room}))
        mirror = Mirror(room)
        next_id = 1

        async def next_message():
            """Reads one message and applies it to the mirror."""
            message = json.loads(await asyncio.wait_for(ws.recv(), 30))
            mirror.receive(message)
            return message

        async def until_message(predicate):
            """Reads until a message satisfies `predicate` (a reply, a snapshot) and returns it."""
            while True:
                message = await next_message()
                if predicate(message):
                    return message

        async def until_state(condition):
            """Reads until the mirror satisfies `condition`: it may already, so look first (a
            read with nothing left to come would only time out)."""
            while not condition():
                await next_message()

        await until_message(lambda m: m["type"] == "snapshot")
        for i in range(actions):
            items = mirror.state["items"]
            if i % 3 == 2 and items:
                action = {"name": "toggle", "args": {"id": items[i % len(items)]["id"]}}
            else:
                action = {"name": "add", "args": {"title": f"from python {i} ✓ 한글"}}
            await ws.send(json.dumps({"type": "action", "room": room, "id": next_id, **action}))
            reply = await until_message(lambda m, wanted=next_id: m.get("id") == wanted and m["type"] in ("ack", "error"))
            if reply["type"] != "ack":
                fail(f"action {action} answered with {reply}")
            next_id += 1

        # Wait for the other client's changes, then compare with a fresh snapshot from a second
        # connection.
        await until_state(lambda: sum(1 for item in mirror.state["items"] if not item["title"].startswith("from python")) >= foreign)
        async with websockets.connect(url) as fresh:
            json.loads(await fresh.recv())
            await fresh.send(json.dumps({"type": "join", "room": room}))
            while True:
                snapshot = json.loads(await asyncio.wait_for(fresh.recv(), 30))
                if snapshot["type"] == "snapshot":
                    break
        await until_state(lambda: mirror.version >= snapshot["version"])
        if mirror.state != snapshot["state"] or mirror.version != snapshot["version"]:
            fail("the mirror differs from a fresh snapshot", mirror=mirror.state, snapshot=snapshot)
        print(json.dumps({"ok": True, "version": mirror.version, "items": len(mirror.state["items"]), "patches": mirror.patches}))


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    except asyncio.TimeoutError:
        fail("no message from the server for 30 s")
