"""Processes and peers for the browser tests: a real tetherd (binary from $TETHERD, default
.build/debug/tetherd) or the mock web side, the terminal client `tether` ($TETHER, default
.build/debug/tether) in a private tmux server, raw protocol clients over `websockets`, and a
plain HTTP server for pages of a foreign origin. Everything started here binds 127.0.0.1 and is
stopped by the test that started it."""

import asyncio
import functools
import http.server
import itertools
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import websockets

REPO = Path(__file__).resolve().parents[3]
TETHERD = Path(os.environ.get("TETHERD", REPO / ".build" / "debug" / "tetherd"))
TETHER = Path(os.environ.get("TETHER", REPO / ".build" / "debug" / "tether"))
MOCK = Path(__file__).resolve().parent / "mock_server.py"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(what, condition, timeout=15, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def http_get(url, timeout=5):
    """(status, headers, body) of a GET; HTTP errors are answers too."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


# MARK: Servers

class Server:
    """tetherd (or the mock with `mock=True`) on 127.0.0.1; `stop()` it (tests do in addCleanup)."""

    def __init__(self, args=(), mock=False, port=0):
        self.mock = mock
        if mock:
            command = [sys.executable, str(MOCK), "--port", str(port), *args]
        else:
            if not TETHERD.exists():
                raise RuntimeError(f"{TETHERD} is missing: run `swift build` first (or set TETHERD)")
            command = [str(TETHERD), "--port", str(port), "--log-level", "warning", *args]
        self.command = command
        self.output = tempfile.NamedTemporaryFile(prefix="tether-browser-server-", suffix=".log", delete=False)
        self.process = subprocess.Popen(command, stdout=self.output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            line = wait_until("the server's listening line", self._listening_line, timeout=20)
        except AssertionError:
            self.stop()
            raise AssertionError(f"{' '.join(command)} did not start:\n{self.log()}")
        self.port = int(line.rsplit(":", 1)[1])
        self.url = f"ws://127.0.0.1:{self.port}"
        self.http = f"http://127.0.0.1:{self.port}"

    def _listening_line(self):
        if self.process.poll() is not None:
            raise AssertionError(f"{' '.join(self.command)} exited with {self.process.returncode}:\n{self.log()}")
        for line in Path(self.output.name).read_text(errors="replace").splitlines():
            if "listening on ws://127.0.0.1:" in line:
                return line.strip()
        return None

    def log(self):
        try:
            return Path(self.output.name).read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.output.close()
        try:
            os.unlink(self.output.name)
        except OSError:
            pass


def mint_token(secret, rooms="*", admin=False, ttl=600):
    """A token from `tetherd token`."""
    command = [str(TETHERD), "token", "--secret", secret, "--subject", "browser-test", "--rooms", rooms, "--ttl", str(ttl)]
    if admin:
        command.append("--admin")
    result = subprocess.run(command, capture_output=True, text=True, timeout=20)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed ({result.returncode}): {result.stderr}")
    return result.stdout.strip()


# MARK: Raw protocol clients (websockets on one background event loop)

class _Loop:
    loop = None
    lock = threading.Lock()

    @classmethod
    def start(cls, coroutine):
        """Schedules `coroutine` on the loop (started on first use); returns a concurrent Future."""
        with cls.lock:
            if cls.loop is None:
                cls.loop = asyncio.new_event_loop()
                threading.Thread(target=cls.loop.run_forever, name="websockets", daemon=True).start()
        return asyncio.run_coroutine_threadsafe(coroutine, cls.loop)

    @classmethod
    def run(cls, coroutine, timeout=20):
        return cls.start(coroutine).result(timeout)


class ProtocolClient:
    """A plain protocol-1 client: connect, join, act, read messages. Blocking methods; `close()` it."""

    def __init__(self, url, origin=None, token=None):
        self.url = url
        self.token = token
        self.messages = []
        self.ids = itertools.count(1)
        self.changed = threading.Condition()
        self.socket = _Loop.run(self._connect(origin))
        self.reader = _Loop.start(self._read())

    async def _connect(self, origin):
        return await websockets.connect(self.url, subprotocols=["tether.v1"], origin=origin, max_size=16 << 20)

    async def _read(self):
        try:
            async for frame in self.socket:
                with self.changed:
                    self.messages.append(json.loads(frame))
                    self.changed.notify_all()
        except websockets.ConnectionClosed:
            pass

    def send(self, message):
        _Loop.run(self.socket.send(json.dumps(message)))

    def wait_for(self, what, predicate, timeout=15):
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for message in self.messages:
                    if predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out waiting for {what}; received: {self.messages[-5:]}")
                self.changed.wait(remaining)

    def request(self, message, timeout=15):
        request_id = next(self.ids)
        self.send({**message, "id": request_id})
        answer = self.wait_for(f"the answer to {message}", lambda m: m.get("id") == request_id and m.get("type") in ("ack", "error", "description"), timeout)
        return answer

    def join(self, room):
        message = {"type": "join", "room": room}
        if self.token:
            message["token"] = self.token
        answer = self.request(message)
        if answer["type"] == "error":
            raise AssertionError(f"join {room} refused: {answer}")
        return self.wait_for(f"the snapshot of {room}", lambda m: m.get("type") == "snapshot" and m.get("room") == room)

    def act(self, room, name, args=None):
        message = {"type": "action", "room": room, "name": name}
        if args is not None:
            message["args"] = args
        answer = self.request(message)
        if answer["type"] != "ack":
            raise AssertionError(f"{name} on {room} failed: {answer}")
        return answer

    def snapshot(self, room):
        """The room's state as a fresh client sees it (joins on a new connection)."""
        other = ProtocolClient(self.url, token=self.token)
        try:
            return other.join(room)
        finally:
            other.close()

    def close(self):
        try:
            _Loop.run(self.socket.close(), timeout=5)
        except Exception:
            pass


def refused_status(url, origin):
    """The HTTP status that refused a WebSocket upgrade from `origin`, or None if it opened."""
    async def attempt():
        try:
            socket = await websockets.connect(url, subprotocols=["tether.v1"], origin=origin)
        except websockets.InvalidStatusCode as error:
            return error.status_code
        await socket.close()
        return None
    return _Loop.run(attempt())


async def _drive(url, room, token, count, rate, make_action):
    """Sends `count` actions at `rate` a second, pipelined (not waiting for each ack); returns the
    last ack's version once every ack is in."""
    socket = await websockets.connect(url, subprotocols=["tether.v1"], max_size=16 << 20)
    pending = {}
    last_version = [None]
    done = asyncio.get_running_loop().create_future()

    async def read():
        async for frame in socket:
            message = json.loads(frame)
            if message.get("id") in pending:
                pending.pop(message["id"])
                if message["type"] != "ack":
                    if not done.done():
                        done.set_exception(AssertionError(f"action failed: {message}"))
                    return
                last_version[0] = max(last_version[0] or 0, message["version"])
                if not pending and sent[0] == count and not done.done():
                    done.set_result(last_version[0])

    sent = [0]
    reader = asyncio.create_task(read())
    if token:
        await socket.send(json.dumps({"type": "join", "room": room, "token": token}))
    start = time.monotonic()
    for index in range(count):
        if rate:
            delay = start + index / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        name, args = make_action(index)
        pending[index + 1] = True
        sent[0] += 1
        await socket.send(json.dumps({"type": "action", "room": room, "name": name, "args": args, "id": index + 1}))
    try:
        return await asyncio.wait_for(done, 60)
    finally:
        reader.cancel()
        await socket.close()


def drive_actions(url, room, count, make_action, rate=None, token=None):
    """Blocking: `count` actions `make_action(index) -> (name, args)` at `rate`/s (None: at once)."""
    return _Loop.run(_drive(url, room, token, count, rate, make_action), timeout=120 + (count / rate if rate else 0))


def drive_actions_in_background(url, room, count, make_action, rate, token=None):
    """Starts `drive_actions` on the background loop; returns a concurrent Future of the last version."""
    return _Loop.start(_drive(url, room, token, count, rate, make_action))


# MARK: The terminal client under tmux

class Tmux:
    """A private tmux server (own socket, no status line) running `tether` in sessions; `kill()` it."""

    def __init__(self, width=100, height=40):
        self.name = f"tether-browser-{uuid.uuid4().hex[:10]}"
        self.directory = Path(tempfile.mkdtemp(prefix=self.name))
        self.socket = self.directory / "tmux.sock"
        self.config = self.directory / "tmux.conf"
        self.config.write_text("set -g status off\nset -g remain-on-exit on\nset -g default-terminal xterm-256color\n")
        self.width, self.height = width, height

    def run(self, *arguments):
        result = subprocess.run(["tmux", "-S", str(self.socket), "-f", str(self.config), *arguments],
                                capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            raise AssertionError(f"tmux {' '.join(arguments)} failed: {result.stderr}")
        return result.stdout

    def start_tether(self, session, arguments):
        if not TETHER.exists():
            raise RuntimeError(f"{TETHER} is missing: run `swift build` first (or set TETHER)")
        command = " ".join(shlex.quote(part) for part in [str(TETHER), *arguments])
        self.run("new-session", "-d", "-s", session, "-x", str(self.width), "-y", str(self.height),
                 "-e", "LANG=C.UTF-8", "-e", "LC_ALL=C.UTF-8", f"sh -c {shlex.quote('trap : INT HUP TERM; ' + command)}")

    def capture(self, session):
        return self.run("capture-pane", "-p", "-t", session)

    def press(self, session, *keys):
        self.run("send-keys", "-t", session, *keys)

    def type(self, session, text):
        self.run("send-keys", "-t", session, "-l", text)

    def wait_for(self, session, what, condition, timeout=15):
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture(session)
            if condition(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what} in tmux session {session}; the screen:\n{screen}")

    def kill(self):
        subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], capture_output=True, timeout=10)
        for file in self.directory.iterdir():
            file.unlink()
        self.directory.rmdir()


# MARK: A page from another origin

class StaticSite:
    """Python's http.server on 127.0.0.1 serving `files` ({name: text}); `stop()` it."""

    def __init__(self, files):
        self.directory = Path(tempfile.mkdtemp(prefix="tether-foreign-"))
        for name, text in files.items():
            (self.directory / name).write_text(text)
        handler = functools.partial(_QuietHandler, directory=str(self.directory))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        for file in self.directory.iterdir():
            file.unlink()
        self.directory.rmdir()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *arguments):
        pass
