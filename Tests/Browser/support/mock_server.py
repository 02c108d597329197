#!/usr/bin/env python3
"""A stand-in for tetherd's web side, for developing and testing the dashboard without it.

It serves the dashboard's static files the way tetherd does (same paths, content types,
Content-Security-Policy and nosniff headers, 403 for a WebSocket from a foreign Origin) and speaks
protocol 1 on the same port with a few rooms: the system room `tether.server` (updated every
second), `counter`, `todo` (and `todo:NAME`) and `clock`. It answers `describe`, acks joins and
leaves that carry an id, keeps presence in all but the system room (members and spectators, no
window), and with --token requires that token on every join.

    Tests/Browser/support/mock_server.py --port 0 [--token T] [--nodes] [--rooms N] [--upstream ws://…]

With --upstream, WebSockets are relayed to a real tetherd instead (its rooms, the page's files).

prints `tetherd listening on ws://127.0.0.1:PORT` like tetherd, then serves until SIGTERM.
Test-only: it binds 127.0.0.1.
"""

import argparse
import asyncio
import http
import json
import mimetypes
import random
import signal
import string
import sys
import time
from pathlib import Path

import websockets
import websockets.server

REPO = Path(__file__).resolve().parents[3]
WEB = REPO / "Clients" / "web"
CSP = ("default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self'; "
       "script-src 'self'; base-uri 'none'; frame-ancestors 'none'")
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
SERVER_ROOM = "tether.server"


def random_id(length=10):
    return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(length))


def apply_ops(state, ops):
    """Applies add/remove/replace operations (the only ones this mock emits) in place."""
    for op in ops:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
        parent = state
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                parent.insert(index, op["value"])
            elif op["op"] == "remove":
                parent.pop(index)
            else:
                parent[index] = op["value"]
        elif op["op"] == "remove":
            del parent[last]
        else:
            parent[last] = op["value"]


class ActionError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# MARK: Room kinds

class Counter:
    scope = "shared"
    actions = [{"name": "increment", "args": {"by": {"type": "integer", "optional": True}}},
               {"name": "decrement", "args": {}}, {"name": "reset", "args": {}}]

    def initial(self):
        return {"count": 0}

    def perform(self, state, name, args):
        if name == "increment":
            by = args.get("by", 1)
            if not isinstance(by, int) or isinstance(by, bool):
                raise ActionError("invalid_args", "by: expected an integer")
            return [{"op": "replace", "path": "/count", "value": state["count"] + by}]
        if name == "decrement":
            return [{"op": "replace", "path": "/count", "value": state["count"] - 1}]
        if name == "reset":
            return [{"op": "replace", "path": "/count", "value": 0}] if state["count"] else []
        raise ActionError("unknown_action", f'unknown action "{name}"')


class Todo:
    scope = "shared"
    actions = [{"name": "add", "args": {"title": {"type": "string"}}},
               {"name": "clearCompleted", "args": {}},
               {"name": "remove", "args": {"id": {"type": "string"}}},
               {"name": "rename", "args": {"id": {"type": "string"}, "title": {"type": "string"}}},
               {"name": "toggle", "args": {"id": {"type": "string"}}}]

    def __init__(self):
        self.next_id = 1

    def initial(self):
        return {"items": []}

    def _index(self, state, args):
        wanted = args.get("id")
        if not isinstance(wanted, str):
            raise ActionError("invalid_args", "id: expected a string")
        for index, item in enumerate(state["items"]):
            if item["id"] == wanted:
                return index
        raise ActionError("invalid_args", f'no item with id "{wanted}"')

    def perform(self, state, name, args):
        if name == "add":
            title = args.get("title")
            if not isinstance(title, str) or not title.strip():
                raise ActionError("invalid_args", "title: expected a non-empty string")
            item = {"id": f"t{self.next_id}", "title": title, "done": False}
            self.next_id += 1
            return [{"op": "add", "path": f"/items/{len(state['items'])}", "value": item}]
        if name == "toggle":
            index = self._index(state, args)
            return [{"op": "replace", "path": f"/items/{index}/done", "value": not state["items"][index]["done"]}]
        if name == "rename":
            index = self._index(state, args)
            if not isinstance(args.get("title"), str):
                raise ActionError("invalid_args", "title: expected a string")
            return [{"op": "replace", "path": f"/items/{index}/title", "value": args["title"]}]
        if name == "remove":
            return [{"op": "remove", "path": f"/items/{self._index(state, args)}"}]
        if name == "clearCompleted":
            done = [i for i, item in enumerate(state["items"]) if item["done"]]
            return [{"op": "remove", "path": f"/items/{i}"} for i in reversed(done)]
        raise ActionError("unknown_action", f'unknown action "{name}"')


class Clock:
    scope = "shared"
    actions = []

    def initial(self):
        return {"time": time.strftime("%H:%M:%S")}

    def tick(self, state):
        now = time.strftime("%H:%M:%S")
        return [{"op": "replace", "path": "/time", "value": now}] if now != state["time"] else []


class ServerStatus:
    scope = "shared"
    actions = []
    has_presence = False


KINDS = {"counter": Counter, "todo": Todo, "clock": Clock, SERVER_ROOM: ServerStatus}


class Room:
    def __init__(self, name, kind):
        self.name = name
        self.kind_name = name.split(":")[0]
        self.kind = kind
        self.epoch = random_id()
        self.version = 0
        self.state = kind.initial() if hasattr(kind, "initial") else {}
        self.subscribers = set()
        # Presence, as tetherd keeps it without a window: member id → {user, data}; every socket
        # that gets the stream → its member id, or None for a spectator.
        self.has_presence = getattr(kind, "has_presence", True)
        self.members = {}
        self.listeners = {}
        self.presence_version = 0


# MARK: The server

class MockServer:
    def __init__(self, token=None, nodes=False, extra_rooms=0, upstream=None):
        self.upstream = upstream
        self.token = token
        self.nodes = nodes
        self.rooms = {}
        self.connections = set()
        self.started = time.time()
        self.port = None
        self.deliveries = 0
        self.actions = 0
        self.bytes_out = 0
        self.recent = []
        for i in range(extra_rooms):
            self.room(f"todo:bulk-{i:04d}")
        self.status = self.room(SERVER_ROOM)
        self.status.state = self.server_document()

    def room(self, name):
        if name not in self.rooms:
            kind = name.split(":")[0]
            if kind not in KINDS or not name or (kind == SERVER_ROOM and name != SERVER_ROOM):
                return None
            self.rooms[name] = Room(name, KINDS[kind]())
        return self.rooms[name]

    # HTTP

    def process_request(self, path, headers):
        path = path.split("?")[0]
        if headers.get("Upgrade", "").lower() == "websocket":
            origin = headers.get("Origin")
            own = {f"http://127.0.0.1:{self.port}", f"http://localhost:{self.port}"}
            if origin is not None and origin not in own:
                return (http.HTTPStatus.FORBIDDEN, [("Content-Type", "text/plain")], b"origin not allowed\n")
            return None
        if path == "/healthz":
            return (http.HTTPStatus.OK, [("Content-Type", "text/plain")], b"ok")
        file = None
        if path == "/":
            file = WEB / "dashboard" / "index.html"
        elif path == "/tether.js":
            file = WEB / "tether.js"
        elif path.startswith("/examples/") and "/" not in path[len("/examples/"):]:
            file = WEB / "examples" / path[len("/examples/"):]
        elif path.count("/") == 1 and path != "/index.html":
            file = WEB / "dashboard" / path[1:]
        if file is None or not file.is_file() or file.name.startswith("."):
            return (http.HTTPStatus.NOT_FOUND, [("Content-Type", "text/plain")], b"not found\n")
        content_type = CONTENT_TYPES.get(file.suffix, mimetypes.guess_type(file.name)[0] or "application/octet-stream")
        return (http.HTTPStatus.OK, [("Content-Type", content_type), ("Content-Security-Policy", CSP),
                                     ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache")],
                file.read_bytes())

    # WebSocket

    async def handle(self, socket, path=None):
        if self.upstream:
            return await self.relay(socket)
        self.connections.add(socket)
        joined = set()
        session = random_id(12)
        try:
            await self.send(socket, {"type": "hello", "protocol": 1, "server": "mock-tetherd/0", "session": session})
            async for frame in socket:
                try:
                    message = json.loads(frame)
                except ValueError:
                    await self.send(socket, {"type": "error", "code": "bad_message", "message": "not JSON"})
                    continue
                await self.receive(socket, session, message, joined)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.connections.discard(socket)
            for name in joined:
                if name in self.rooms:
                    self.rooms[name].subscribers.discard(socket)
                    await self.unlisten(self.rooms[name], socket)

    async def relay(self, socket):
        """--upstream: the page's WebSocket goes on to a real tetherd, frame for frame."""
        async with websockets.connect(self.upstream, subprotocols=["tether.v1"], max_size=1 << 24) as upstream:
            async def pump(source, sink):
                async for frame in source:
                    await sink.send(frame)
            tasks = [asyncio.create_task(pump(socket, upstream)), asyncio.create_task(pump(upstream, socket))]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()

    async def receive(self, socket, session, message, joined):
        kind = message.get("type")
        request_id = message.get("id")

        async def error(code, text, room=None):
            answer = {"type": "error", "code": code, "message": text}
            if request_id is not None:
                answer["id"] = request_id
            if room is not None:
                answer["room"] = room
            answer["applied"] = False  # as tetherd says of every error it answers at once
            await self.send(socket, answer)

        if kind == "describe":
            wanted = message.get("kind")
            kinds = [{"name": name, "scope": k.scope, "actions": k.actions} for name, k in sorted(KINDS.items())
                     if wanted is None or name == wanted]
            if not kinds:
                return await error("unknown_room", f'no room kind "{wanted}"')
            return await self.send(socket, {"type": "description", "id": request_id, "kinds": kinds})
        name = message.get("room")
        if kind == "join":
            room = self.room(name) if isinstance(name, str) else None
            if room is None:
                return await error("unknown_room", f'no room kind "{str(name).split(":")[0]}"', name)
            if self.token is not None and message.get("token") != self.token:
                return await error("unauthorized", "a valid token is required" if message.get("token") is None else "invalid token", name)
            room.subscribers.add(socket)
            joined.add(name)
            await self.send(socket, {"type": "snapshot", "room": name, "epoch": room.epoch, "version": room.version, "state": room.state})
            if room.has_presence:
                data = message.get("presence")
                if isinstance(data, dict):
                    await self.presence_changed(room, [self.listen(room, socket, session, data)], skip=socket)
                elif message.get("watchPresence") is True:
                    await self.unlisten(room, socket)
                    room.listeners[socket] = None
                else:
                    await self.unlisten(room, socket)
                if socket in room.listeners:
                    await self.send(socket, {"type": "presence", "room": name, "version": room.presence_version, "members": room.members})
            if request_id is not None:
                await self.send(socket, {"type": "ack", "id": request_id, "room": name, "version": room.version})
        elif kind == "leave":
            if name in self.rooms:
                self.rooms[name].subscribers.discard(socket)
                await self.unlisten(self.rooms[name], socket)
            joined.discard(name)
            if request_id is not None:
                await self.send(socket, {"type": "ack", "id": request_id, "room": name})
        elif kind == "presence":
            room = self.rooms.get(name)
            data = message.get("data")
            if room is None or room.listeners.get(socket) is None or not isinstance(data, dict):
                return await error("invalid_args", f"join {name} with presence before updating it", name)
            member = room.listeners[socket]
            if request_id is not None:
                await self.send(socket, {"type": "ack", "id": request_id, "room": name})
            if room.members[member]["data"] != data:
                room.members[member] = {"user": member, "data": data}
                await self.presence_changed(room, [{"op": "replace", "path": f"/{member}/data", "value": data}])
        elif kind == "action":
            self.actions += 1
            room = self.room(name) if isinstance(name, str) else None
            if room is None:
                return await error("unknown_room", f'no room "{name}"', name)
            if self.token is not None and name not in joined:
                return await error("unauthorized", "join the room first", name)
            if not hasattr(room.kind, "perform"):
                return await error("unknown_action", f'room "{name}" takes no actions', name)
            args = message.get("args", {})
            if not isinstance(args, dict):
                return await error("invalid_args", "args must be an object", name)
            try:
                ops = room.kind.perform(room.state, message.get("name"), args)
            except ActionError as failure:
                return await error(failure.code, str(failure), name)
            await self.publish(room, ops)
            await self.send(socket, {"type": "ack", "id": request_id, "room": name, "version": room.version})
        else:
            await error("bad_message", f'unknown message type "{kind}"')

    async def send(self, socket, message):
        text = json.dumps(message, separators=(",", ":"))
        self.bytes_out += len(text)
        try:
            await socket.send(text)
        except websockets.ConnectionClosed:
            pass

    # Presence

    def listen(self, room, socket, session, data):
        """Lists `socket` (member id: its session); the operation that says so."""
        op = "replace" if session in room.members else "add"
        room.members[session] = {"user": session, "data": data}
        room.listeners[socket] = session
        return {"op": op, "path": f"/{session}", "value": room.members[session]}

    async def unlisten(self, room, socket):
        """Stops `socket`'s stream and removes its member, if any."""
        member = room.listeners.pop(socket, None)
        if member is not None:
            del room.members[member]
            await self.presence_changed(room, [{"op": "remove", "path": f"/{member}"}])

    async def presence_changed(self, room, ops, skip=None):
        room.presence_version += 1
        patch = {"type": "presence_patch", "room": room.name, "from": room.presence_version - 1,
                 "version": room.presence_version, "ops": ops}
        for socket in list(room.listeners):
            if socket is not skip:
                await self.send(socket, patch)

    async def publish(self, room, ops):
        if not ops:
            return
        apply_ops(room.state, ops)
        patch = {"type": "patch", "room": room.name, "epoch": room.epoch, "from": room.version,
                 "version": room.version + 1, "ops": ops}
        room.version += 1
        for socket in list(room.subscribers):
            self.deliveries += 1
            await self.send(socket, patch)

    # The system room, once a second

    def server_document(self):
        uptime = int(time.time() - self.started)
        listing = []
        for name in sorted(self.rooms):
            room = self.rooms[name]
            entry = {"name": name, "kind": room.kind_name, "scope": room.kind.scope,
                     "subscribers": len(room.subscribers), "version": room.version, "epoch": room.epoch}
            if room.has_presence:
                entry["members"] = len(room.members)
            listing.append(entry)
        nodes = [{"name": "n1", "alive": True, "rooms": 12, "connections": len(self.connections)},
                 {"name": "n2", "alive": True, "rooms": 9, "connections": 4},
                 {"name": "n3", "alive": False, "rooms": 0, "connections": 0}] if self.nodes else []
        return {
            "server": {"name": "tetherd/0.1.0 (mock)", "version": "0.1.0",
                       "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
                       "uptimeSeconds": uptime, "node": "n1" if self.nodes else None,
                       "listen": f"ws://127.0.0.1:{self.port}", "tls": False, "auth": self.token is not None,
                       "durability": "batch",
                       "storage": {"kind": "memory", "path": None, "bytes": 0}},
            "connections": len(self.connections),
            "rooms": len(self.rooms),
            "rates": {"deliveriesPerSecond": 0.0, "actionsPerSecond": 0.0, "bytesOutPerSecond": 0.0},
            "recent": list(self.recent),
            "roomList": listing[:500],
            "roomListTruncated": len(listing) > 500,
            "nodes": nodes,
            # On a cluster node that does not deliver webhooks, each endpoint names the one that does.
            "webhooks": [{"name": "orders", "url": "https://backend.example/hooks", "events": ["action.applied"], "rooms": ["*"],
                          "pending": 0, "dead": 0, "disabled": False, "deliveredBy": "n2"}] if self.nodes else [],
        }

    async def tick_forever(self):
        last = (self.deliveries, self.actions, self.bytes_out)
        while True:
            await asyncio.sleep(1)
            clock_rooms = [room for room in self.rooms.values() if isinstance(room.kind, Clock)]
            for room in clock_rooms:
                await self.publish(room, room.kind.tick(room.state))
            now = (self.deliveries, self.actions, self.bytes_out)
            deliveries, actions, sent = (now[i] - last[i] for i in range(3))
            last = now
            old = self.status.state
            self.recent.append({"t": int(time.time()), "connections": len(self.connections),
                                "deliveries": deliveries, "actions": actions})
            new = self.server_document()
            new["rates"] = {"deliveriesPerSecond": float(deliveries), "actionsPerSecond": float(actions),
                            "bytesOutPerSecond": float(sent)}
            ops = [{"op": "replace", "path": "/server/uptimeSeconds", "value": new["server"]["uptimeSeconds"]}]
            for key in ("connections", "rooms", "rates", "roomList", "roomListTruncated", "nodes"):
                if new[key] != old[key]:
                    ops.append({"op": "replace", "path": f"/{key}", "value": new[key]})
            ops.append({"op": "add", "path": "/recent/-", "value": self.recent[-1]})
            if len(self.recent) > 300:
                self.recent.pop(0)
                ops.append({"op": "remove", "path": "/recent/0"})
            await self.publish(self.status, ops)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", help="require this token on every join")
    parser.add_argument("--nodes", action="store_true", help="pretend to be a three-node cluster")
    parser.add_argument("--rooms", type=int, default=0, help="create this many idle todo rooms")
    parser.add_argument("--upstream", help="relay WebSockets to this tetherd (ws://...) instead of the mock rooms")
    options = parser.parse_args()
    mock = MockServer(token=options.token, nodes=options.nodes, extra_rooms=options.rooms, upstream=options.upstream)
    server = await websockets.serve(mock.handle, "127.0.0.1", options.port, subprotocols=["tether.v1"],
                                    process_request=mock.process_request, max_size=1 << 20)
    mock.port = server.sockets[0].getsockname()[1]
    mock.status.state = mock.server_document()
    print(f"tetherd listening on ws://127.0.0.1:{mock.port}", flush=True)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    ticker = asyncio.create_task(mock.tick_forever())
    await stop
    ticker.cancel()
    server.close()
    await server.wait_closed()


if __name__ == "__main__":
    asyncio.run(main())
