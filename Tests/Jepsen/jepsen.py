#!/usr/bin/python3
# (/usr/bin/python3: Debian's python3-websockets and python3-jsonpatch live there, not in a pyenv.)
"""Jepsen-style fault injection for a Tether cluster.

Starts 3 nats-server (one JetStream cluster) and 3 tetherd nodes on 127.0.0.1, puts clients on
every node that mirror the room `ledger:jepsen` and send `add` actions with unique ids, and
meanwhile injects faults: the room's owner killed (-9) or paused (SIGSTOP past its lease), a
NATS server killed, a non-owner node restarted gracefully. Then it heals everything, lets the
cluster converge and checks the history: every acknowledged action applied exactly once at the
version its ack named, the final count between acked and acked + unknown, refused actions not
applied, all nodes and all mirrors in one state, no fork, recovery after every fault, and the
ledger's stored state (never published) equal to its published count. Actions are
numbered (`seq`) and a client sends an action whose outcome it does not know again, under the
same number, until it does: every action ends acked or refused, none unknown (--no-resend sends
each once, as clients without numbers do).

Written from docs/PROTOCOL.md and docs/CLUSTER.md alone; it shares no code with the server.
Exit status: 0 every check passed, 1 a check failed, 2 the cluster could not be set up.
See Tests/Jepsen/README.md.
"""
import argparse
import asyncio
import base64
import ctypes
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonpatch
import jsonpointer
import websockets

ROOM = "ledger:jepsen"
FAULT_KINDS = ("kill", "pause", "nats", "restart", "nats-pause", "node-pause", "double")
FAULT_HELP = {
    "kill": "kill -9 the room's owner tetherd, start it again 1 s later (same port and data)",
    "pause": "SIGSTOP the owner for lease + 5 s, then SIGCONT",
    "nats": "kill -9 a nats-server (the room's stream leader), start it again after 5 s",
    "restart": "SIGTERM a tetherd that does not own the room, wait for its exit, start it",
    "nats-pause": "SIGSTOP a nats-server for 4-10 s (the room's stream leader and another, in turn), then SIGCONT",
    "node-pause": "SIGSTOP a tetherd that does not own the room for lease + 3 s, then SIGCONT",
    "double": "SIGSTOP the owner, 3 s later a nats-server too; both SIGCONT after lease + 5 s",
}
# After a fault is healed its effects go on a while (a resumed NATS server forces elections):
# an action sent this long after the heal still counts under the fault's kind in check 12.
AFTERMATH = 10.0
# Generous: the machine is shared with other builds (2 cores).
READY_TIMEOUT = 90.0       # a process (or the NATS cluster) getting ready
REQUEST_TIMEOUT = 10.0     # a join's reply; an HTTP request
CONVERGE_TIMEOUT = 90.0    # mirrors and nodes agreeing at the end
WEBHOOK_TIMEOUT = 90.0     # every acked action's webhook arriving after the heal
RECOVERY_LIMIT = 30.0      # a fault without an ack this long after it started fails check 7
# Errors that say the request ran nothing without the room's record of numbers being asked:
# they settle nothing about a number an earlier send of which may have been applied.
NOT_RUN = ("unavailable", "rate_limited")


def monotonic():
    return time.monotonic()


class HarnessError(Exception):
    """The test could not drive the cluster (a process did not start, NATS not ready)."""


class ConnectionLost(Exception):
    """A client's WebSocket ended, or its node stopped answering the protocol."""


# ---------------------------------------------------------------------------------------------
# Small helpers


def free_ports(count):
    """Ports nothing listens on now; all held open together so that they differ."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


async def http_get(port, path, timeout=REQUEST_TIMEOUT):
    """(status, body) of GET http://127.0.0.1:port/path. HTTP/1.0: no chunking, the server closes."""
    async def fetch():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            await writer.drain()
            response = await reader.read()
        finally:
            writer.close()
        head, _, body = response.partition(b"\r\n\r\n")
        return int(head.split()[1]), body
    return await asyncio.wait_for(fetch(), timeout)


async def http_json(port, path):
    status, body = await http_get(port, path)
    if status != 200:
        raise HarnessError(f"GET :{port}{path} answered {status}")
    return json.loads(body)


def state_hash(state):
    encoded = json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha1(encoded).hexdigest()[:16]


LIBC = ctypes.CDLL(None)


def die_with_parent():
    """Runs in each child before exec: the kernel kills it if this test dies, even by SIGKILL.
    And a crash leaves a core file (in the process's own directory) for its stack."""
    try:
        LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except AttributeError:
        pass
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


class Signal:
    """Wakes waiters on the clients' progress (an ack, a mirror moving) instead of polling."""

    def __init__(self):
        self._event = asyncio.Event()

    def fire(self):
        self._event.set()
        self._event = asyncio.Event()

    async def wait_until(self, predicate, timeout):
        deadline = monotonic() + timeout
        while not predicate():
            remaining = deadline - monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._event.wait(), remaining)
            except asyncio.TimeoutError:
                return predicate()
        return True


class Clock:
    """Seconds since the run started, for progress lines and the report."""

    def __init__(self):
        self.start = monotonic()

    def at(self, moment):
        return moment - self.start

    def say(self, text):
        print(f"[{self.at(monotonic()):7.1f}s] {text}", flush=True)


# ---------------------------------------------------------------------------------------------
# Processes: 3 nats-server and 3 tetherd, each restartable in place


class Process:
    """A server process the test owns. Its stdout and stderr go to one log file, kept across
    restarts; an exit nobody asked for is recorded (a crash is a finding)."""

    env = None  # the environment, when not this test's

    def __init__(self, name, argv, log_path):
        self.name, self.argv, self.log_path = name, argv, log_path
        # Its working directory, where a crash leaves its core file.
        self.cwd = os.path.join(os.path.dirname(log_path), f"cwd-{name}")
        self.proc = None
        self.paused = False
        self.unexpected_exits = []
        # [start, end] while the process was not serving: paused, killed, stopping or starting
        # (end None: still). An action sent to a node then is not held to check 12's target.
        self.down = []
        self._expect_exit = False
        self._output = None
        self._log = open(log_path, "ab")

    @property
    def running(self):
        return self.proc is not None and self.proc.returncode is None

    @property
    def up(self):
        return self.running and not self.paused

    def mark_down(self):
        if not self.down or self.down[-1][1] is not None:
            self.down.append([monotonic(), None])

    def mark_up(self):
        if self.down and self.down[-1][1] is None:
            self.down[-1][1] = monotonic()

    def was_down(self, start, end):
        """Whether the process was not serving at any moment of [start, end]."""
        return any(a <= end and (b is None or b >= start) for a, b in self.down)

    async def start(self):
        self.mark_down()  # until it serves (a tetherd: its "listening" line)
        self._expect_exit = False
        self.paused = False
        self._note(f"starting: {' '.join(self.argv)}")
        os.makedirs(self.cwd, exist_ok=True)
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, limit=1 << 20,
            start_new_session=True,  # Ctrl-C reaches the test, which stops them in order
            preexec_fn=die_with_parent, cwd=self.cwd, env=self.env)
        self._output = asyncio.create_task(self._copy_output(self.proc))

    async def _copy_output(self, proc):
        async for line in proc.stdout:
            self._log.write(line)
            self._log.flush()
            self.on_output(line)
        code = await proc.wait()
        self._note(f"exited with status {code}")
        if not self._expect_exit:
            self.unexpected_exits.append(code)
            if code < 0:
                await self._note_crash_stack(proc.pid)
        self.on_exit()

    async def _note_crash_stack(self, pid):
        """The crashed thread's stack, from the core file with gdb (when both are there), into
        the log; the core is kept as core.PID beside it."""
        core = os.path.join(self.cwd, "core")
        if not os.path.exists(core):
            return
        kept = f"{core}.{pid}"
        os.rename(core, kept)
        if not shutil.which("gdb"):
            return self._note(f"left {kept} (no gdb here to read its stack)")
        gdb = await asyncio.create_subprocess_exec(
            "gdb", "-batch", "-ex", "bt 40", self.argv[0], kept,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        output, _ = await gdb.communicate()
        # gdb shows the current frame once on loading the core, then again in the backtrace.
        frames = list(dict.fromkeys(line for line in output.decode(errors="replace").splitlines() if line.startswith("#")))
        self._note(f"crashed; its stack (gdb {kept}):\n" + "\n".join(frames))

    def on_output(self, line):
        pass

    def on_exit(self):
        pass

    def _note(self, text):
        self._log.write(f"=== jepsen {time.strftime('%H:%M:%S')}: {self.name} {text}\n".encode())
        self._log.flush()

    async def kill(self):
        """SIGKILL (works on a paused process too) and wait until it is gone."""
        self.mark_down()
        if self.running:
            self._expect_exit = True
            self._note("kill -9")
            self.proc.send_signal(signal.SIGKILL)
        await self._reaped()

    async def terminate(self, timeout):
        """SIGTERM and wait; True when it exited by itself within `timeout`, else it is killed."""
        if not self.running:
            return True
        self.mark_down()
        self._expect_exit = True
        self._note("SIGTERM")
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), timeout)
            await self._reaped()
            return True
        except asyncio.TimeoutError:
            await self.kill()
            return False

    async def _reaped(self):
        if self.proc is not None:
            await self.proc.wait()
            await self._output
        self.paused = False

    def pause(self):
        self.mark_down()
        self._note("SIGSTOP")
        self.proc.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        if self.running and self.paused:
            self._note("SIGCONT")
            self.proc.send_signal(signal.SIGCONT)
            self.mark_up()
        self.paused = False

    def tail(self, lines):
        with open(self.log_path, "rb") as file:
            text = file.read().decode(errors="replace")
        return text.splitlines()[-lines:]

    def close_log(self):
        self._log.close()


class NatsServer(Process):
    def __init__(self, name, port, cluster_port, monitor_port, route_ports, directory, binary, sync_always):
        self.port, self.monitor_port = port, monitor_port
        config_path = os.path.join(directory, f"{name}.conf")
        routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in route_ports)
        # fsync every write before its ack (CLUSTER.md, "What an ack promises"), where the
        # version has the setting (2.10 on).
        sync = ", sync_interval: always" if sync_always else ""
        with open(config_path, "w") as file:
            file.write(f'server_name: {name}\nlisten: 127.0.0.1:{port}\nhttp: 127.0.0.1:{monitor_port}\n'
                       f'jetstream {{ store_dir: "{os.path.join(directory, name)}"{sync} }}\n'
                       f'cluster {{ name: tether, listen: 127.0.0.1:{cluster_port}, routes: [{routes}] }}\n')
        super().__init__(name, [binary, "-c", config_path], os.path.join(directory, f"{name}.log"))

    @property
    def url(self):
        return f"nats://127.0.0.1:{self.port}"

    async def readiness_problem(self, healthy=True):
        """None when /healthz is 200 (with `healthy`; without, the server only has to answer) and
        /jsz names a JetStream meta leader, else what is missing."""
        try:
            status, body = await http_get(self.monitor_port, "/healthz", timeout=3)
            if healthy and status != 200:
                return f"healthz {status} {body[:100]!r}"
            jsz = await http_json(self.monitor_port, "/jsz")
        except (OSError, asyncio.TimeoutError, HarnessError, ValueError) as error:
            return f"monitoring: {error!r}"
        return None if jsz.get("meta_cluster", {}).get("leader") else "no JetStream meta leader"


class TetherNode(Process):
    # A crash dumps core (for gdb, which reads a stack through C libraries such as libnats)
    # instead of Swift's backtracer, whose frame-pointer unwinding stops at their first frame.
    env = {**os.environ, "SWIFT_BACKTRACE": "enable=no"}

    def __init__(self, name, port, nats_urls, directory, binary, lease_seconds, config):
        self.port = port
        data = os.path.join(directory, f"data-{name}")
        argv = [os.path.abspath(shutil.which(binary) or binary), "--host", "127.0.0.1", "--port", str(port), "--nats", ",".join(nats_urls),
                "--node", name, "--test-kinds", "--data", data, "--lease-seconds", str(lease_seconds), "--config", config]
        super().__init__(name, argv, os.path.join(directory, f"{name}.log"))
        self._listening = asyncio.Event()

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/"

    def on_output(self, line):
        if line.startswith(b"tetherd listening on "):
            self._listening.set()

    def on_exit(self):
        self._listening.set()  # wakes start_and_wait, which then sees the exit

    async def start_and_wait(self):
        """Starts the node and returns once it prints that it listens."""
        self._listening = asyncio.Event()
        await self.start()
        try:
            await asyncio.wait_for(self._listening.wait(), READY_TIMEOUT)
        except asyncio.TimeoutError:
            raise HarnessError(f"{self.name} printed no 'tetherd listening on' within {READY_TIMEOUT:.0f} s")
        if not self.running:
            raise HarnessError(f"{self.name} exited at start with status {self.proc.returncode}")
        self.mark_up()

    async def cluster_info(self):
        return await http_json(self.port, "/cluster")


class WebhookReceiver:
    """The endpoint every node sends the room's `action.applied` webhooks to (docs/WEBHOOKS.md):
    it answers 204 and keeps the (epoch, version) of each event, and how many came twice."""

    def __init__(self, port):
        self.port = port
        self.told, self.repeats, self.lock = set(), 0, threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                data = body.get("data", {})
                with receiver.lock:
                    place = (data.get("epoch"), data.get("version"))
                    receiver.repeats += place in receiver.told
                    receiver.told.add(place)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)

    def config_file(self, directory):
        secret = os.path.join(directory, "webhooks.whsec")
        with open(secret, "w") as file:
            file.write("whsec_" + base64.b64encode(os.urandom(32)).decode() + "\n")
        config = os.path.join(directory, "tetherd.yaml")
        with open(config, "w") as file:
            file.write(f"webhooks:\n  - name: jepsen\n    url: http://127.0.0.1:{self.port}/hooks\n"
                       f"    secret-file: {secret}\n    events: [action.applied]\n    rooms: [\"{ROOM}\"]\n")
        return config

    def start(self):
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        if getattr(self, "thread", None):
            self.server.shutdown()
        self.server.server_close()

    def places(self):
        with self.lock:
            return set(self.told), self.repeats


class Cluster:
    """The system under test: nats-server n1..n3 and tetherd t1..t3, all on loopback."""

    def __init__(self, options, directory):
        ports = free_ports(13)
        nats_ports, route_ports, monitor_ports, node_ports = (ports[i:i + 3] for i in range(0, 12, 3))
        self.nats = [NatsServer(f"n{i + 1}", nats_ports[i], route_ports[i], monitor_ports[i], route_ports,
                                directory, options.nats_server, options.sync_always) for i in range(3)]
        urls = [server.url for server in self.nats]
        self.webhooks = WebhookReceiver(ports[12])
        config = self.webhooks.config_file(directory)
        self.nodes = [TetherNode(f"t{i + 1}", node_ports[i], urls, directory, options.tetherd,
                                 options.lease_seconds, config) for i in range(3)]

    @property
    def processes(self):
        return self.nats + self.nodes

    async def start(self):
        self.webhooks.start()
        for server in self.nats:
            await server.start()
        await self.nats_ready()
        await asyncio.gather(*(node.start_and_wait() for node in self.nodes))

    async def nats_ready(self, healthy=True):
        """Waits until every running NATS server is healthy and knows a meta leader (polled:
        the servers offer nothing to await). After a fault, `healthy=False` waits only for the
        servers to answer and know a meta leader: a restarted server's healthz stays 503 while
        any stream catches up, which on a loaded machine can take longer than the test waits,
        and whether the room takes actions again is what check 7 measures."""
        deadline = monotonic() + READY_TIMEOUT
        while True:
            for server in self.nats:
                if server.proc is not None and not server.running:
                    raise HarnessError(f"nats-server {server.name} exited (status {server.proc.returncode})")
            problems = [f"{s.name}: {p}" for s in self.nats if s.up
                        for p in [await s.readiness_problem(healthy)] if p]
            if not problems:
                for server in self.nats:
                    if server.up:
                        server.mark_up()
                return
            if monotonic() > deadline:
                raise HarnessError("NATS cluster not ready: " + "; ".join(problems))
            await asyncio.sleep(0.2)

    async def owners(self):
        """The nodes whose GET /cluster lists the room among those they own now."""
        owners = []
        for node in self.nodes:
            if node.up:
                try:
                    if ROOM in (await node.cluster_info()).get("ownedRooms", []):
                        owners.append(node)
                except (OSError, asyncio.TimeoutError, HarnessError, ValueError):
                    pass
        return owners

    async def log_stream_leader(self):
        """The NATS server leading the Raft group of the stream that holds the room's log: of the
        streams TETHER_LOG_0..3 the one with messages (this test writes one room only)."""
        for server in self.nats:
            if not server.up:
                continue
            try:
                jsz = await http_json(server.monitor_port, "/jsz?streams=true")
            except (OSError, asyncio.TimeoutError, HarnessError, ValueError):
                continue
            streams = [stream for account in jsz.get("account_details", [])
                       for stream in account.get("stream_detail", [])
                       if stream.get("name", "").startswith("TETHER_LOG_")]
            streams.sort(key=lambda stream: stream.get("state", {}).get("messages", 0), reverse=True)
            if streams and streams[0].get("cluster", {}).get("leader"):
                leader = streams[0]["cluster"]["leader"]
                return next((s for s in self.nats if s.name == leader), None), streams[0]["name"]
        return None, None

    async def heal(self):
        """Resumes what is paused, starts what is down, and waits until all of it is ready."""
        for process in self.processes:
            process.resume()
        for server in self.nats:
            if not server.running:
                await server.start()
        await self.nats_ready(healthy=False)
        await asyncio.gather(*(node.start_and_wait() for node in self.nodes if not node.running))

    async def stop(self):
        self.webhooks.stop()
        await asyncio.gather(*(process.kill() for process in self.processes), return_exceptions=True)
        for process in self.processes:
            process.close_log()

    def other_up_node(self, current, rng):
        """A random running, unpaused node other than `current` (or `current` if it is the only one)."""
        others = [node for node in self.nodes if node.up and node is not current]
        if others:
            return rng.choice(others)
        return current if current is not None and current.up else None

    def unexpected_exits(self):
        return {p.name: p.unexpected_exits for p in self.processes if p.unexpected_exits}

    def print_log_tails(self):
        """tetherd's logs first and longer: NATS logs are mostly leader elections."""
        for process, lines in [(node, 40) for node in self.nodes] + [(server, 15) for server in self.nats]:
            print(f"---- last {lines} lines of {process.log_path}")
            for line in process.tail(lines):
                print("  " + line)


# ---------------------------------------------------------------------------------------------
# What the clients saw


class Action:
    """One `add`: when it was sent, and its outcome (the server's last word on it)."""

    def __init__(self, client, number, node, sent):
        self.id = f"c{client}-{number}"
        self.number = number  # its seq: the same on every try
        self.tries = 0
        self.maybe_applied = False  # a try ended without a certain answer
        self.node, self.sent = node, sent
        self.outcome = None  # ack, not_applied, unknown (error applied:"unknown"), timeout, lost
        self.version = self.epoch = self.code = self.message = self.applied = None
        self.replied = None
        self.late = False  # the reply came after the client had given up waiting
        self.done = asyncio.Event()
        # Every try: [node, sent, answered (None: no reply), how it ended] (check 12).
        self.try_log = []

    @property
    def uncertain(self):
        return self.outcome in ("unknown", "timeout", "lost")

    def settle(self, reply, epoch, attempt=None):
        """The reply (ack or error), or None when the connection ended without one. A reply to an
        earlier try counts only when it is an ack (a numbered action is applied once, whichever
        try's answer says so); its errors and losses are about that try."""
        entry = self.try_log[(attempt or self.tries) - 1] if self.try_log else None
        if entry is not None and entry[2] is None and entry[3] is None:
            if reply is None:
                entry[3] = "lost"
            else:
                entry[2], entry[3] = monotonic(), reply.get("type") if reply.get("type") == "ack" else reply.get("code")
        if attempt is not None and attempt != self.tries:
            if reply is not None and reply.get("type") == "ack" and self.outcome != "ack":
                self.outcome, self.version, self.epoch, self.replied = "ack", reply.get("version"), epoch, monotonic()
                self.done.set()
            return
        if reply is None:
            if self.outcome is None:
                self.outcome, self.replied = "lost", monotonic()
            self.done.set()
            return
        self.late = self.outcome == "timeout"
        self.replied = monotonic()
        if reply.get("type") == "ack":
            self.outcome, self.version, self.epoch = "ack", reply.get("version"), epoch
        else:
            # An error without `applied` (an older server) is as uncertain as "unknown".
            self.applied = reply.get("applied")
            self.outcome = "not_applied" if self.applied is False else "unknown"
            self.code, self.message = reply.get("code"), reply.get("message")
            if self.outcome == "not_applied" and self.code in NOT_RUN and self.maybe_applied:
                # This send ran nothing; an earlier one of the same number may have been applied
                # (PROTOCOL.md, "Sending an action again"): still unknown, sent again.
                self.outcome = "unknown"
        if self.uncertain:
            self.maybe_applied = True
        self.done.set()


class History:
    """Everything observed, for the checks: the actions, which id each (epoch, version) holds
    (from the patches' `add /recent/N` and the snapshots' `recent`), and the hash of the state
    every observer held at every (epoch, version)."""

    def __init__(self):
        self.actions = []
        self.resends = 0                     # tries after the first (numbered resends)
        self.ids_at = defaultdict(set)       # (epoch, version) -> ids
        self.places = defaultdict(set)       # id -> {(epoch, version)}
        self.states = defaultdict(lambda: defaultdict(set))  # (epoch, version) -> hash -> observers
        self.malformed = []                  # patch frames that do not name one id per version
        self.epochs = {}                     # epoch -> first seen (insertion order)
        self.progress = Signal()

    def _place(self, epoch, version, action_id):
        self.ids_at[(epoch, version)].add(action_id)
        self.places[action_id].add((epoch, version))

    def observe_snapshot(self, message):
        epoch, version, recent = message["epoch"], message["version"], message["state"].get("recent", [])
        self.epochs.setdefault(epoch, monotonic())
        for offset, action_id in enumerate(recent):
            self._place(epoch, version - len(recent) + 1 + offset, action_id)

    def observe_patch(self, message):
        """A patch from F to V names the ids of versions F+1..V in order, one `add /recent/N` each."""
        epoch, start, end = message["epoch"], message["from"], message["version"]
        self.epochs.setdefault(epoch, monotonic())
        ids = [op.get("value") for op in message["ops"]
               if op.get("op") == "add" and str(op.get("path", "")).startswith("/recent/")]
        if len(ids) != end - start:
            self.malformed.append({"epoch": epoch, "from": start, "version": end, "ids": len(ids)})
            return
        for offset, action_id in enumerate(ids):
            self._place(epoch, start + 1 + offset, action_id)

    def record_state(self, observer, epoch, version, state):
        self.states[(epoch, version)][state_hash(state)].add(observer)
        self.progress.fire()


class Client:
    """One WebSocket client: mirrors the room, sends one `add` at a time, and on a lost
    connection resumes on another node with `since`."""

    def __init__(self, index, home, cluster, history, options, rng):
        self.index, self.name, self.home = index, f"c{index}", home
        self.cluster, self.history, self.options, self.rng = cluster, history, options, rng
        # Said in our own hello on every connection: one client for its whole life (PROTOCOL.md).
        self.client_id = base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")
        self.node = None
        self.connected = False
        self.epoch = self.version = self.state = None
        self.acting = True
        self.closing = False            # the run is over: no more reconnects
        self.going_home = False
        self.quiet = asyncio.Event()    # set while no action is in flight
        self.quiet.set()
        self.gaps = self.repairs = self.stray_errors = 0
        self.disconnects = Counter()    # why connections ended
        self._numbers = 0               # action ids c{index}-{n}, and their seq
        self._resend = []               # actions whose outcome is unknown: sent again first
        self._request_ids = 0           # request ids: unique over all this client's connections
        self._waiting = {}              # request id -> handler of its reply (None: connection ended)
        self._resyncing = False

    @property
    def synced(self):
        return self.connected and self.version is not None and not self._resyncing

    # -- connection lifecycle

    def start(self):
        self.task = asyncio.create_task(self.run())

    def close(self):
        # The flag, not only the cancellation: websockets' close handshake (and Python 3.11's
        # wait_for, when a reply lands at the same moment) can swallow a CancelledError.
        self.closing, self.acting = True, False
        self.task.cancel()

    async def run(self):
        """Until closed: connect, join (resuming), act; after a loss, another node."""
        node = self.home
        while not self.closing:
            try:
                await self._session(node)
            except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException,
                    ConnectionLost, ValueError, KeyError) as error:
                self.disconnects[type(error).__name__] += 1
                await asyncio.sleep(0.2)  # back off: the next node may be refusing too
            finally:
                self.connected = False
                self._connection_ended()
            if self.going_home and self.home.up:
                node = self.home
            else:
                node = self.cluster.other_up_node(self.node, self.rng)
            self.going_home = False
            while node is None and not self.closing:  # nothing up: every node is being restarted
                await asyncio.sleep(0.5)
                node = self.cluster.other_up_node(None, self.rng)

    async def _session(self, node):
        self.node = node
        async with websockets.connect(node.url, subprotocols=["tether.v1"], open_timeout=REQUEST_TIMEOUT,
                                      ping_interval=5, ping_timeout=15, close_timeout=2,
                                      max_size=2 ** 21) as ws:
            # Before anything else; a server older than the client hello answers bad_message (ignored).
            await ws.send(json.dumps({"type": "hello", "client": self.client_id}))
            hello = json.loads(await asyncio.wait_for(ws.recv(), REQUEST_TIMEOUT))
            if hello.get("type") != "hello" or hello.get("protocol") != 1:
                raise ConnectionLost(f"no hello: {hello}")
            self.connected = True
            reader = asyncio.create_task(self._read(ws))
            try:
                await self._join(ws, since=self.version is not None)
                await self._act(ws, reader)
                if self.going_home or self.closing:
                    return  # the context manager closes the connection
                await reader  # actions stopped: keep mirroring until the end
            finally:
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)

    def _connection_ended(self):
        waiting, self._waiting = self._waiting, {}
        for handler in waiting.values():
            handler(None)
        self._resyncing = False

    def _request(self, message, handler):
        self._request_ids += 1
        message["id"] = self._request_ids
        self._waiting[self._request_ids] = handler
        return json.dumps(message)

    # -- joining and mirroring

    def _join_message(self, since):
        message = {"type": "join", "room": ROOM}
        if since and self.epoch is not None:
            message["since"] = {"epoch": self.epoch, "version": self.version}
        return message

    async def _join(self, ws, since):
        """Joins (resuming with `since`); the snapshot or resume patch must precede the ack and
        end at its version, else that is a gap, repaired by a join for a snapshot."""
        reply = asyncio.get_running_loop().create_future()

        def answered(message):
            # Judged on delivery: by the time _join resumes, later patches may have moved the mirror.
            if message is not None and message.get("type") == "ack" and message.get("version") != self.version:
                self.gaps += 1
                self._resyncing = True
            if not reply.done():
                reply.set_result(message)

        await ws.send(self._request(self._join_message(since), answered))
        answer = await asyncio.wait_for(reply, REQUEST_TIMEOUT)
        if answer is None or answer.get("type") != "ack":
            raise ConnectionLost(f"join refused: {answer}")
        if self._resyncing:
            await ws.send(self._request(self._join_message(since=False), self._resynced))

    async def _read(self, ws):
        try:
            async for text in ws:
                resync = self._receive(json.loads(text))
                if resync is not None:
                    await ws.send(self._request(self._join_message(since=resync), self._resynced))
            raise ConnectionLost("closed by the server")
        finally:
            self._connection_ended()  # wakes the action in flight: lost

    def _receive(self, message):
        """Applies one message; returns True/False (since or not) when the client must rejoin."""
        kind = message.get("type")
        handler = self._waiting.pop(message.get("id"), None) if kind in ("ack", "error") else None
        if handler is not None:
            handler(message)
        elif message.get("room") != ROOM:
            pass
        elif kind == "snapshot":
            self.history.observe_snapshot(message)
            self._mirror(message["epoch"], message["version"], message["state"])
        elif kind == "patch":
            return self._patch(message)
        elif kind == "error":
            self.stray_errors += 1
        return None

    def _patch(self, message):
        self.history.observe_patch(message)
        if message["epoch"] != self.epoch or message["from"] != self.version:
            if self._resyncing:
                return None  # the stream before our rejoin; the rejoin's answer follows
            self.gaps += 1
            self._resyncing = True
            return message["epoch"] == self.epoch  # a new epoch: a snapshot, not since
        try:
            state = jsonpatch.apply_patch(self.state, message["ops"])
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
            self.gaps += 1
            self._resyncing = True
            return False
        self._mirror(self.epoch, message["version"], state)
        return None

    def _mirror(self, epoch, version, state):
        self.epoch, self.version, self.state = epoch, version, state
        self.history.record_state(self.name, epoch, version, state)

    def _resynced(self, reply):
        """The ack of a rejoin after a gap: repaired when the mirror is at the ack's version."""
        self._resyncing = False
        if reply is not None and reply.get("type") == "ack" and reply.get("version") == self.version:
            self.repairs += 1
            self.history.progress.fire()

    # -- acting

    async def _act(self, ws, reader):
        while (self.acting or self._resend) and not self.going_home and not self.closing:
            if reader.done():
                reader.result()  # raises why the connection ended
            self.quiet.clear()
            try:
                await self._one_action(ws)
            finally:
                self.quiet.set()
            if self.options.think_ms:
                await asyncio.sleep(self.rng.uniform(0, self.options.think_ms) / 1000)

    async def _one_action(self, ws):
        if self._resend:
            action = self._resend[0]
            action.outcome, action.done = None, asyncio.Event()
            self.history.resends += 1
        else:
            self._numbers += 1
            action = Action(self.index, self._numbers, self.node.name, monotonic())
        action.tries += 1
        attempt = action.tries
        action.try_log.append([self.node, monotonic(), None, None])
        message = {"type": "action", "room": ROOM, "name": "add", "args": {"id": action.id, "by": 1}}
        if self.options.resend:
            message["seq"] = action.number
        text = self._request(message, lambda reply: self._settle(action, reply, attempt))
        try:
            await ws.send(text)
        except websockets.exceptions.ConnectionClosed:
            self._waiting.pop(self._request_ids, None)
            if attempt == 1:
                return  # never left: not part of the history
            action.outcome = "lost"  # this try never left; an earlier one did
            raise
        if attempt == 1:
            self.history.actions.append(action)
        try:
            await asyncio.wait_for(action.done.wait(), self.options.action_timeout)
        except asyncio.TimeoutError:
            # Given up, not forgotten: a late reply still settles it.
            action.outcome = "timeout"
        if action.uncertain:
            action.maybe_applied = True  # a timeout, or a connection lost before the answer
        resend = self.options.resend and action.uncertain and action.code != "stale_action"
        if resend and action not in self._resend:
            self._resend.insert(0, action)
        elif not resend and action in self._resend:
            self._resend.remove(action)

    def _settle(self, action, reply, attempt):
        action.settle(reply, self.epoch, attempt)
        self.history.progress.fire()

    async def stop_acting(self):
        """No new actions; returns once the one in flight has its outcome, and every action sent
        again has one."""
        self.acting = False
        while self._resend or not self.quiet.is_set():
            await asyncio.sleep(0.05)


# ---------------------------------------------------------------------------------------------
# The nemesis


class Fault:
    def __init__(self, number, kind):
        self.number, self.kind = number, kind
        self.target = None
        self.started = self.healed = None
        self.notes = []
        self.problem = None  # the harness could not inject or heal it
        self.recovery = None


class Nemesis:
    """Every `fault_every` seconds one fault of the rotation (reshuffled each round by the
    seeded generator), held, then healed."""

    def __init__(self, cluster, clients, options, rng, clock):
        self.cluster, self.clients, self.options, self.rng, self.clock = cluster, clients, options, rng, clock
        self.faults = []
        self._nats_pauses = 0

    def _rotation(self):
        while True:
            kinds = list(self.options.faults)
            self.rng.shuffle(kinds)
            yield from kinds

    async def run(self, deadline):
        rotation = self._rotation()
        while True:
            await asyncio.sleep(max(0.0, min(self.options.fault_every, deadline - monotonic())))
            if monotonic() >= deadline:
                return
            fault = Fault(len(self.faults) + 1, next(rotation))
            self.faults.append(fault)
            try:
                await getattr(self, f"_{fault.kind.replace('-', '_')}")(fault)
                await self.cluster.heal()  # also whatever crashed meanwhile
            except HarnessError as error:
                fault.problem = str(error)
                self.clock.say(f"fault {fault.number}: could not inject or heal: {error}")
            fault.healed = monotonic()
            self._send_clients_home()

    def _begin(self, fault, target, what):
        fault.target, fault.started = target.name, monotonic()
        if isinstance(target, TetherNode):
            what += f"; {sum(1 for c in self.clients if c.node is target and c.connected)} clients on it"
        self.clock.say(f"fault {fault.number}: {fault.kind} {target.name} ({what})")

    async def _owner(self, fault):
        """The room's owner per GET /cluster; waits for one while ownership moves."""
        deadline = monotonic() + 15
        while monotonic() < deadline:
            owners = await self.cluster.owners()
            if len(owners) > 1:  # worth a note, not a failure: the lease is not trusted for safety
                fault.notes.append(f"several nodes claim the room: {[o.name for o in owners]}")
            if owners:
                return owners[0]
            await asyncio.sleep(0.2)
        fault.notes.append("no node claimed the room within 15 s: took a random node")
        return self._choose([node for node in self.cluster.nodes if node.up])

    async def _kill(self, fault):
        owner = await self._owner(fault)
        self._begin(fault, owner, "owner, kill -9, back in 1 s")
        await owner.kill()
        await asyncio.sleep(1)
        await owner.start_and_wait()

    async def _pause(self, fault):
        owner = await self._owner(fault)
        hold = self.options.lease_seconds + 5
        self._begin(fault, owner, f"owner, SIGSTOP for {hold:g} s")
        owner.pause()
        await asyncio.sleep(hold)
        owner.resume()

    async def _nats(self, fault):
        server, stream = await self.cluster.log_stream_leader()
        if server is None:
            server = self._choose([s for s in self.cluster.nats if s.up])
            fault.notes.append("no stream leader found: took a random NATS server")
        self._begin(fault, server, f"leader of {stream}, kill -9, back in 5 s")
        await server.kill()
        await asyncio.sleep(5)
        await server.start()
        await self.cluster.nats_ready(healthy=False)

    async def _nats_pause(self, fault):
        """SIGSTOP a NATS server, the room's stream leader and another in turn, for 4-10 s."""
        leader, stream = await self.cluster.log_stream_leader()
        self._nats_pauses += 1
        others = [s for s in self.cluster.nats if s.up and s is not leader]
        if leader is not None and self._nats_pauses % 2 == 1:
            server, what = leader, f"leader of {stream}"
        else:
            server, what = self._choose(others), f"not the leader of {stream}"
        hold = self.rng.uniform(4, 10)
        self._begin(fault, server, f"{what}, SIGSTOP for {hold:.1f} s")
        server.pause()
        await asyncio.sleep(hold)
        server.resume()
        await self.cluster.nats_ready(healthy=False)

    def _choose(self, candidates):
        """A random one of `candidates`; a HarnessError (the fault is skipped) when there is none,
        e.g. every other node is down after a restart that failed."""
        if not candidates:
            raise HarnessError("no running process of the kind this fault needs")
        return self.rng.choice(candidates)

    async def _node_pause(self, fault):
        owner = await self._owner(fault)
        target = self._choose([node for node in self.cluster.nodes if node.up and node is not owner])
        hold = self.options.lease_seconds + 3
        self._begin(fault, target, f"not the owner, SIGSTOP for {hold:g} s")
        target.pause()
        await asyncio.sleep(hold)
        target.resume()

    async def _double(self, fault):
        """Two faults back to back: the owner paused, then 3 s later a NATS server."""
        owner = await self._owner(fault)
        hold = self.options.lease_seconds + 5
        server = self._choose([s for s in self.cluster.nats if s.up])
        self._begin(fault, owner, f"owner, SIGSTOP for {hold:g} s; 3 s later {server.name} too, until then")
        owner.pause()
        await asyncio.sleep(3)
        server.pause()
        await asyncio.sleep(hold - 3)
        owner.resume()
        server.resume()
        await self.cluster.nats_ready(healthy=False)

    async def _restart(self, fault):
        owner = await self._owner(fault)
        target = self._choose([node for node in self.cluster.nodes if node.up and node is not owner])
        self._begin(fault, target, "not the owner, SIGTERM, then started")
        if not await target.terminate(timeout=30):
            fault.notes.append(f"{target.name} did not exit within 30 s of SIGTERM: killed")
        await target.start_and_wait()

    def _send_clients_home(self):
        """Clients moved by a fault go back between actions, so every node keeps its clients."""
        for client in self.clients:
            if client.node is not client.home and client.home.up:
                client.going_home = True


# ---------------------------------------------------------------------------------------------
async def log_reads_from_leader(cluster):
    """Per node, since its last start: catch-up reads that ended on the stream leader because the
    replica serving them was behind (GET /cluster's logReadsFromLeader)."""
    counts = {}
    for node in cluster.nodes:
        try:
            counts[node.name] = (await node.cluster_info()).get("logReadsFromLeader")
        except (OSError, asyncio.TimeoutError, HarnessError, ValueError):
            counts[node.name] = None
    return counts


# The end: heal, stop acting, converge, snapshot every node


async def fresh_snapshot(node):
    """(epoch, version, state) from a new connection's join."""
    async with websockets.connect(node.url, subprotocols=["tether.v1"], open_timeout=REQUEST_TIMEOUT,
                                  max_size=2 ** 21) as ws:
        async def next_message():
            return json.loads(await asyncio.wait_for(ws.recv(), REQUEST_TIMEOUT))
        await next_message()  # hello
        await ws.send(json.dumps({"type": "join", "room": ROOM, "id": 1}))
        while True:
            message = await next_message()
            if message.get("type") == "snapshot" and message.get("room") == ROOM:
                return message
            if message.get("type") == "error":
                raise HarnessError(f"final join on {node.name} refused: {message}")


async def final_snapshots(cluster, history, clock):
    """One fresh snapshot per node; retried (nodes are other processes: nothing to await) until
    they agree or CONVERGE_TIMEOUT passes. Returns {node: snapshot message}."""
    deadline = monotonic() + CONVERGE_TIMEOUT
    while True:
        snapshots = {}
        for node in cluster.nodes:
            try:
                snapshots[node.name] = await fresh_snapshot(node)
            except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException, HarnessError) as error:
                clock.say(f"final snapshot of {node.name} failed: {error!r}")
        keys = {(s["epoch"], s["version"], state_hash(s["state"])) for s in snapshots.values()}
        if (len(keys) == 1 and len(snapshots) == len(cluster.nodes)) or monotonic() > deadline:
            break
        await asyncio.sleep(1)
    for name, snapshot in snapshots.items():
        history.observe_snapshot(snapshot)
        history.record_state(f"final@{name}", snapshot["epoch"], snapshot["version"], snapshot["state"])
    return snapshots


async def audit_stored_state(cluster):
    """The ledger's stored state (`applied`, which no client sees) as its `audit` action publishes
    it, and the count beside it: (audited, count) from a fresh snapshot after the audit's ack."""
    node = next(n for n in cluster.nodes if n.up)
    async with websockets.connect(node.url, subprotocols=["tether.v1"], open_timeout=REQUEST_TIMEOUT,
                                  max_size=2 ** 21) as ws:
        async def next_message():
            return json.loads(await asyncio.wait_for(ws.recv(), REQUEST_TIMEOUT))
        await next_message()  # hello
        deadline = monotonic() + CONVERGE_TIMEOUT
        while True:
            await ws.send(json.dumps({"type": "action", "room": ROOM, "name": "audit", "id": 1}))
            while True:
                message = await next_message()
                if message.get("id") == 1 and message.get("type") in ("ack", "error"):
                    break
            if message["type"] == "ack":
                break
            if message.get("code") not in NOT_RUN or monotonic() > deadline:
                raise HarnessError(f"audit refused: {message}")
            await asyncio.sleep(0.5)
    state = (await fresh_snapshot(node))["state"]
    return state.get("audited"), state.get("count")


# ---------------------------------------------------------------------------------------------
# The checks


class Check:
    def __init__(self, number, title, passed, summary, examples=(), figures=None):
        self.number, self.title, self.passed, self.summary = number, title, passed, summary
        self.examples, self.figures = list(examples), figures or {}

    def print(self):
        print(f"{'PASS' if self.passed else 'FAIL'} {self.number}. {self.title}: {self.summary}")
        for example in self.examples[:10]:
            print(f"       {example}")
        if len(self.examples) > 10:
            print(f"       ... and {len(self.examples) - 10} more")

    def as_json(self):
        return {"number": self.number, "title": self.title, "passed": self.passed, "summary": self.summary,
                "examples": self.examples[:50], **self.figures}


def check_acks(history, clock):
    """1. Every acked action is applied exactly once, at the version its ack named."""
    acked = [a for a in history.actions if a.outcome == "ack"]
    false_acks, unverified = [], 0
    for action in acked:
        places = history.places.get(action.id, set())
        named = (action.epoch, action.version)
        if named in places:
            continue
        if places:
            false_acks.append(f"{action.id} acked at version {action.version} by {action.node} at "
                              f"{clock.at(action.replied):.1f}s, applied at {sorted(v for _, v in places)}")
        elif history.ids_at.get(named):
            false_acks.append(f"{action.id} acked at version {action.version} by {action.node} at "
                              f"{clock.at(action.replied):.1f}s; that version applied "
                              f"{sorted(history.ids_at[named])}, and {action.id} is nowhere")
        else:
            unverified += 1
    duplicates = [f"{i} applied at versions {sorted(v for _, v in places)}"
                  for i, places in history.places.items() if len(places) > 1]
    passed = not false_acks and not duplicates
    return Check(1, "acked actions applied exactly once, at their version", passed,
                 f"{len(acked)} acked, {len(false_acks)} false acks, {len(duplicates)} applied twice, "
                 f"{unverified} not verifiable (version seen by nobody)",
                 false_acks + duplicates,
                 {"acked": len(acked), "false_acks": len(false_acks), "duplicates": len(duplicates),
                  "unverified": unverified})


def check_count(history, final):
    """2. A <= C <= A + U."""
    acked = sum(1 for a in history.actions if a.outcome == "ack")
    unknown = sum(1 for a in history.actions if a.uncertain)
    count = final["state"].get("count") if final else None
    passed = count is not None and acked <= count <= acked + unknown
    return Check(2, "acked <= final count <= acked + unknown", passed,
                 f"{acked} <= {count} <= {acked} + {unknown}",
                 figures={"acked": acked, "final_count": count, "unknown": unknown})


def check_resends(history, options):
    """10. Numbered resends leave no action unknown: each ends acked (applied once, check 1) or
    refused."""
    if not options.resend:
        return Check(10, "numbered resends settle every action", True, "not run (--no-resend)")
    unsettled = [f"{a.id} ({a.tries} tries): {a.outcome}" + (f" {a.code}: {a.message}" if a.code else "")
                 for a in history.actions if a.uncertain]
    return Check(10, "numbered resends settle every action (none unknown)", not unsettled,
                 f"{len(history.actions)} actions, {history.resends} resends, {len(unsettled)} still unknown",
                 unsettled, {"resends": history.resends, "unsettled": len(unsettled)})


def check_refusals(history, clock):
    """3. An error that said applied:false was not applied."""
    refused = [a for a in history.actions if a.outcome == "not_applied"]
    applied = [f"{a.id} refused by {a.node} at {clock.at(a.replied):.1f}s with {a.code}, applied: false "
               f"(\"{a.message}\") but applied at {sorted(v for _, v in history.places[a.id])}"
               for a in refused if history.places.get(a.id)]
    return Check(3, "errors with applied:false were not applied", not applied,
                 f"{len(refused)} refused, {len(applied)} of them applied", applied,
                 {"refused": len(refused), "refused_but_applied": len(applied)})


async def check_webhooks(history, cluster, clock):
    """13. Every acked action's `action.applied` webhook arrives (at least once), whichever node
    owned the room or delivered when faults struck."""
    acked = {(a.epoch, a.version) for a in history.actions if a.outcome == "ack"}
    started = monotonic()
    while monotonic() - started < WEBHOOK_TIMEOUT and not acked <= cluster.webhooks.places()[0]:
        await asyncio.sleep(0.2)
    told, repeats = cluster.webhooks.places()
    missing = sorted(acked - told, key=lambda place: (str(place[0]), place[1] or 0))
    clock.say(f"webhooks: {len(acked & told)} of {len(acked)} acked actions told, {monotonic() - started:.1f} s after the checks began")
    return Check(13, "every acked action told to the webhook endpoint", not missing,
                 f"{len(acked)} acked, {len(missing)} never told, {repeats} told more than once",
                 [f"epoch {epoch} version {version}" for epoch, version in missing],
                 {"acked": len(acked), "missing": len(missing), "repeats": repeats})


def check_nodes_agree(snapshots, node_count):
    """4. Every node serves the same epoch, version and state at the end."""
    keys = {name: (s["epoch"], s["version"], state_hash(s["state"])) for name, s in snapshots.items()}
    passed = len(snapshots) == node_count and len(set(keys.values())) == 1
    return Check(4, "all nodes agree at the end", passed,
                 ", ".join(f"{name}: epoch {k[0]} version {k[1]} state {k[2]}" for name, k in sorted(keys.items()))
                 or "no snapshots", figures={"nodes": {n: list(k) for n, k in keys.items()}})


def check_forks(history):
    """5. No two observers held different states, or versions naming different ids, at one
    (epoch, version)."""
    forks = [f"version {v} (epoch {e}): {len(hashes)} states, held by "
             + " / ".join(",".join(sorted(who)) for who in hashes.values())
             for (e, v), hashes in sorted(history.states.items(), key=lambda kv: kv[0][1]) if len(hashes) > 1]
    conflicts = [f"version {v} (epoch {e}) named by several frames as {sorted(ids)}"
                 for (e, v), ids in sorted(history.ids_at.items(), key=lambda kv: kv[0][1]) if len(ids) > 1]
    return Check(5, "no fork (one state per epoch and version)", not forks and not conflicts,
                 f"{len(history.states)} (epoch, version) pairs seen, {len(forks)} with several states, "
                 f"{len(conflicts)} with several ids", forks + conflicts,
                 {"pairs": len(history.states), "forked_states": len(forks), "conflicting_ids": len(conflicts)})


def check_mirrors(clients, final):
    """6. Every client's mirror ends equal to the final state (each gap repaired)."""
    gaps = sum(c.gaps for c in clients)
    repairs = sum(c.repairs for c in clients)
    stale = [f"{c.name} on {c.node.name if c.node else '-'}: epoch {c.epoch} version {c.version}"
             + ("" if c.connected else " (disconnected)") for c in clients
             if final is None or (c.epoch, c.version) != (final["epoch"], final["version"])
             or state_hash(c.state) != state_hash(final["state"])]
    return Check(6, "every mirror ends at the final state (no gap left unrepaired)", not stale,
                 f"{len(clients) - len(stale)}/{len(clients)} mirrors final, {gaps} gaps, {repairs} repaired",
                 stale, {"gaps": gaps, "repairs": repairs, "stale_mirrors": len(stale)})


def check_recovery(faults, actions, clock):
    """7. After each fault, some action sent after it began is acked within RECOVERY_LIMIT."""
    for fault in faults:
        replies = [a.replied for a in actions if a.outcome == "ack" and fault.started and a.sent >= fault.started]
        fault.recovery = min(replies) - fault.started if replies else None
    by_kind = defaultdict(list)
    for fault in faults:
        by_kind[fault.kind].append(fault)
    slow = [f"fault {f.number} ({f.kind} {f.target} at {clock.at(f.started or clock.start):.1f}s): "
            + (f"first ack after {f.recovery:.1f} s" if f.recovery is not None else "no ack at all")
            for f in faults if f.recovery is None or f.recovery > RECOVERY_LIMIT]
    problems = [f"fault {f.number} ({f.kind}): {f.problem}" for f in faults if f.problem]
    figures, parts = {}, []
    for kind, group in sorted(by_kind.items()):
        times = [f.recovery for f in group if f.recovery is not None]
        figures[kind] = {"count": len(group), "median_s": statistics.median(times) if times else None,
                         "max_s": max(times) if times else None}
        parts.append(f"{kind} {len(group)}x median {statistics.median(times):.1f} s max {max(times):.1f} s"
                     if times else f"{kind} {len(group)}x no ack")
    return Check(7, f"recovery: an ack within {RECOVERY_LIMIT:.0f} s of every fault", not slow and not problems,
                 "; ".join(parts) or "no faults", slow + problems, {"by_kind": figures})


def check_epochs(history):
    """8. Failover keeps the epoch (docs/CLUSTER.md): one epoch for the whole run."""
    return Check(8, "one epoch throughout (failover keeps the epoch)", len(history.epochs) == 1,
                 f"{len(history.epochs)} epochs: {', '.join(history.epochs)}", figures={"epochs": list(history.epochs)})


def check_stored_state(audit):
    """11. The ViewModel's stored state survived the faults with the published state: the
    ledger's `applied` (stored, never published) equals its published `count`."""
    if isinstance(audit, Exception):
        return Check(11, "stored state equals published state", False, f"audit failed: {audit!r}")
    audited, count = audit
    return Check(11, "stored state equals published state", audited is not None and audited == count,
                 f"stored applied {audited}, published count {count}", figures={"audited": audited})


def check_answer_times(history, faults, options, clock):
    """12. Every action sent to a tetherd that was running (not paused, killed or restarting while
    it waited) got its answer, an ack or an error, within the target: per fault kind active when it
    was sent (a fault counts until AFTERMATH s after its heal)."""
    target = options.answer_target

    def kind_at(moment):
        active = [f for f in faults if f.started is not None and f.started <= moment
                  and (f.healed is None or moment <= f.healed + AFTERMATH)]
        return active[-1].kind if active else "none"

    times, excluded, slow = defaultdict(list), Counter(), []
    for action in history.actions:
        for node, sent, answered, how in action.try_log:
            end = answered if answered is not None else sent + options.action_timeout
            if node.was_down(sent, end):
                excluded["node not serving"] += 1
                continue
            if answered is None:
                if how == "lost":
                    excluded["connection lost"] += 1  # its node was restarted or cut the connection
                    continue
                elapsed = None
            else:
                elapsed = answered - sent
            kind = kind_at(sent)
            times[kind].append(elapsed if elapsed is not None else float("inf"))
            if elapsed is None or elapsed > target:
                slow.append(f"{action.id} sent to {node.name} at {clock.at(sent):.1f}s ({kind}): "
                            + (f"answered after {elapsed:.2f} s ({how})" if elapsed is not None else "no answer"))
    figures, parts = {}, []
    for kind in sorted(times):
        values = sorted(times[kind])
        finite = [v for v in values if v != float("inf")]
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        over = sum(1 for v in values if v > target)
        figures[kind] = {"count": len(values), "median_s": statistics.median(finite) if finite else None,
                         "p99_s": None if p99 == float("inf") else p99, "max_s": max(finite) if finite else None,
                         "over_target": over, "unanswered": len(values) - len(finite)}
        parts.append(f"{kind} {len(values)} median {statistics.median(finite) if finite else 0:.3f} s p99 "
                     f"{'-' if p99 == float('inf') else f'{p99:.2f}'} s max {max(finite) if finite else 0:.2f} s, {over} over")
    passed = not slow or options.answer_check == "report"
    summary = (f"target {target:g} s ({options.answer_check}); " + "; ".join(parts)
               + f"; not held to it: {dict(excluded)}")
    return Check(12, "every action sent to a running node answered within the target", passed, summary, slow,
                 {"target_s": target, "mode": options.answer_check, "by_kind": figures, "excluded": dict(excluded)})


def check_crashes(cluster):
    """9. No server process exited unless the nemesis stopped it."""
    exits = cluster.unexpected_exits()
    return Check(9, "no server process exited on its own", not exits,
                 ", ".join(f"{n} exited with {codes}" for n, codes in exits.items()) or "none",
                 figures={"unexpected_exits": exits})


# ---------------------------------------------------------------------------------------------
# The run


def client_figures(clients):
    return {c.name: {"home": c.home.name, "node": c.node.name if c.node else None, "gaps": c.gaps,
                     "repairs": c.repairs, "connections_lost": dict(c.disconnects),
                     "errors_without_id": c.stray_errors} for c in clients}


def outcome_figures(history, final):
    actions = history.actions
    outcomes = Counter(a.outcome for a in actions)
    refused_by_code = Counter(a.code for a in actions if a.outcome == "not_applied")
    unknown_by_code = Counter(a.code for a in actions if a.outcome == "unknown")
    final_version = final["version"] if final else None
    unattributed = None
    if final:
        unattributed = sum(1 for v in range(1, final_version + 1) if not history.ids_at.get((final["epoch"], v)))
    return {"actions": len(actions), "resends": history.resends, "acked": outcomes["ack"],
            "late_acks": sum(a.late for a in actions if a.outcome == "ack"),
            "timeouts": outcomes["timeout"], "lost": outcomes["lost"], "applied_unknown": outcomes["unknown"],
            "unknown_by_code": dict(unknown_by_code), "not_applied": outcomes["not_applied"],
            "not_applied_by_code": dict(refused_by_code), "final_version": final_version,
            "final_count": final["state"].get("count") if final else None,
            "unattributed_versions": unattributed, "malformed_patches": len(history.malformed)}


def print_summary(options, figures, checks, faults, clients, clock):
    f = figures
    print("\n== Jepsen summary")
    print(f"seed {options.seed}, {options.seconds:g} s of faults, {options.clients} clients, faults "
          f"{','.join(options.faults)} every {options.fault_every:g} s, lease {options.lease_seconds:g} s")
    print(f"nats-server {options.nats_version} ({options.nats_server}), JetStream "
          + ("fsyncs every write (sync_interval: always)" if options.sync_always else "fsyncs on a timer (its default)"))
    print(f"actions {f['actions']} ({f['resends']} resends): acked {f['acked']} ({f['late_acks']} after the client's timeout), "
          f"unknown {f['timeouts'] + f['lost'] + f['applied_unknown']} (timeout {f['timeouts']}, lost {f['lost']}, "
          f"applied:unknown {f['applied_unknown']} {f['unknown_by_code']}), not applied {f['not_applied']} "
          f"{f['not_applied_by_code']}")
    print(f"final version {f['final_version']}, count {f['final_count']}; versions the map could not attribute: "
          f"{f['unattributed_versions']}; patch frames not naming one id per version: {f['malformed_patches']}")
    print(f"faults {len(faults)}: " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(x.kind for x in faults).items()))
          + f"; client connections lost {dict(sum((c.disconnects for c in clients), Counter()))}"
          + f", errors without id {sum(c.stray_errors for c in clients)}")
    print(f"catch-up reads finished on the stream leader (per node, since its last start): {f.get('log_reads_from_leader')}")
    for fault in faults:
        if fault.notes:
            print(f"  fault {fault.number} ({fault.kind} {fault.target}): {'; '.join(fault.notes)}")
    for check in checks:
        check.print()
    failed = [c.number for c in checks if not c.passed]
    print(f"RESULT: {'FAIL (checks ' + ', '.join(map(str, failed)) + ')' if failed else 'PASS'}")


def write_json(path, options, figures, checks, faults, clock):
    report = {
        "options": {k: v for k, v in vars(options).items()},
        "figures": figures,
        "checks": [c.as_json() for c in checks],
        "faults": [{"number": x.number, "kind": x.kind, "target": x.target,
                    "started_s": clock.at(x.started) if x.started else None,
                    "healed_s": clock.at(x.healed) if x.healed else None,
                    "recovery_s": x.recovery, "notes": x.notes, "problem": x.problem} for x in faults],
        "passed": all(c.passed for c in checks),
    }
    with open(path, "w") as file:
        json.dump(report, file, indent=2)


async def wait_for_recovery(history, fault):
    """After the last heal, keep acting until the last fault has its first ack (check 7)."""
    if fault is None or fault.started is None:
        return

    def recovered():
        for action in reversed(history.actions):  # in the order they were sent
            if action.sent < fault.started:
                return False
            if action.outcome == "ack":
                return True
        return False
    await history.progress.wait_until(recovered, max(0.0, fault.started + RECOVERY_LIMIT + 1 - monotonic()))


async def run(options):
    clock = Clock()
    directory = tempfile.mkdtemp(prefix="tether-jepsen-")
    print(f"jepsen: tetherd {options.tetherd}, nats-server {options.nats_version}"
          f"{' with sync_interval: always' if options.sync_always else ''}, seed {options.seed}, logs in {directory}", flush=True)
    cluster = Cluster(options, directory)
    history = History()
    rng = random.Random(options.seed)
    clients, passed = [], False
    try:
        try:
            await cluster.start()
        except HarnessError as error:
            print(f"jepsen: the cluster did not start: {error}")
            cluster.print_log_tails()
            return 2
        clock.say("3 nats-server and 3 tetherd ready: " + ", ".join(f"{n.name} {n.url}" for n in cluster.nodes))
        clients = [Client(i, cluster.nodes[i % len(cluster.nodes)], cluster, history, options,
                          random.Random(f"{options.seed}-{i}")) for i in range(options.clients)]
        for client in clients:
            client.start()
        if not await history.progress.wait_until(lambda: all(c.synced for c in clients), READY_TIMEOUT):
            print("jepsen: clients did not all join the room")
            cluster.print_log_tails()
            return 2
        clock.say(f"{len(clients)} clients joined {ROOM}; faults for {options.seconds:g} s")

        nemesis = Nemesis(cluster, clients, options, rng, clock)
        await nemesis.run(monotonic() + options.seconds)
        problems = []
        try:
            await cluster.heal()
        except HarnessError as error:
            problems.append(str(error))
        await wait_for_recovery(history, nemesis.faults[-1] if nemesis.faults else None)
        clock.say("healed; stopping actions")
        await asyncio.wait_for(asyncio.gather(*(c.stop_acting() for c in clients)),
                               options.action_timeout + REQUEST_TIMEOUT * 3)
        converged = await history.progress.wait_until(
            lambda: all(c.synced for c in clients) and len({(c.epoch, c.version) for c in clients}) == 1,
            CONVERGE_TIMEOUT)
        clock.say("mirrors converged; final snapshots" if converged else "mirrors did NOT converge; final snapshots")
        snapshots = await final_snapshots(cluster, history, clock)
        final = max(snapshots.values(), key=lambda s: s["version"]) if snapshots else None

        checks = [check_acks(history, clock), check_count(history, final), check_refusals(history, clock),
                  check_nodes_agree(snapshots, len(cluster.nodes)), check_forks(history),
                  check_mirrors(clients, final), check_recovery(nemesis.faults, history.actions, clock),
                  check_epochs(history), check_crashes(cluster), check_resends(history, options),
                  check_answer_times(history, nemesis.faults, options, clock), await check_webhooks(history, cluster, clock)]
        # Before the audit, whose step names no id (the clients still mirror the room).
        figures = {**outcome_figures(history, final), "clients": client_figures(clients),
                   "log_reads_from_leader": await log_reads_from_leader(cluster)}
        try:
            audit = await audit_stored_state(cluster)
        except (OSError, asyncio.TimeoutError, StopIteration, websockets.exceptions.WebSocketException, HarnessError) as error:
            audit = error
        checks.append(check_stored_state(audit))
        if problems:
            checks.append(Check(10, "the cluster healed at the end", False, "; ".join(problems)))
        passed = all(c.passed for c in checks)
        if not passed:
            cluster.print_log_tails()  # before the summary, which stays last on screen
        print_summary(options, figures, checks, nemesis.faults, clients, clock)
        if options.json:
            write_json(options.json, options, figures, checks, nemesis.faults, clock)
        return 0 if passed else 1
    finally:
        await cluster.stop()  # first: then no client waits on a paused peer to close
        for client in clients:
            client.close()
        if clients:
            await asyncio.wait([client.task for client in clients], timeout=REQUEST_TIMEOUT)
        if passed and not options.keep:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            print(f"jepsen: logs and stores kept in {directory}")


def parse_options(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    default_tetherd = os.environ.get("TETHERD") or os.path.join(here, "..", "..", ".build", "debug", "tetherd")
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[1],
        epilog="fault kinds: " + "; ".join(f"{k}: {v}" for k, v in FAULT_HELP.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    duration = parser.add_mutually_exclusive_group()
    duration.add_argument("--seconds", type=float, default=180, help="how long faults are injected (default 180)")
    duration.add_argument("--minutes", type=float, help="the same in minutes")
    parser.add_argument("--tetherd", default=os.path.normpath(default_tetherd),
                        help="the tetherd binary (default $TETHERD, else .build/debug/tetherd)")
    parser.add_argument("--nats-server", default=os.environ.get("TETHER_NATS_SERVER") or shutil.which("nats-server")
                        or "/usr/sbin/nats-server",
                        help="the nats-server binary (default $TETHER_NATS_SERVER, else from PATH); from 2.10 on it "
                             "gets sync_interval: always")
    parser.add_argument("--answer-target", type=float,
                        help="seconds within which every action sent to a running node must be answered "
                             "(check 12; default lease + 1)")
    parser.add_argument("--answer-check", choices=("strict", "report"), default="strict",
                        help="strict: check 12 fails past the target; report: it only reports (default strict)")
    parser.add_argument("--clients", type=int, default=6, help="clients, spread evenly over the 3 nodes (default 6)")
    parser.add_argument("--faults", default=",".join(FAULT_KINDS),
                        help=f"comma-separated fault kinds to rotate through (default {','.join(FAULT_KINDS)})")
    parser.add_argument("--fault-every", type=float, default=8, help="seconds between faults (default 8)")
    parser.add_argument("--lease-seconds", type=float, default=3, help="tetherd --lease-seconds (default 3)")
    parser.add_argument("--action-timeout", type=float, default=10,
                        help="seconds a client waits for an action's reply before counting it unknown (default 10)")
    parser.add_argument("--think-ms", type=float, default=5, help="most milliseconds a client waits between actions (default 5)")
    parser.add_argument("--no-resend", dest="resend", action="store_false",
                        help="send each action once, without a number (seq): unknown outcomes stay unknown")
    parser.add_argument("--seed", type=int, help="seed of the nemesis rotation and targets (default: random, printed)")
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, stores) after a pass")
    options = parser.parse_args(argv)
    if options.minutes is not None:
        options.seconds = options.minutes * 60
    options.faults = [kind.strip() for kind in options.faults.split(",") if kind.strip()]
    unknown = [kind for kind in options.faults if kind not in FAULT_KINDS]
    if unknown or not options.faults:
        parser.error(f"--faults: unknown kind(s) {unknown}; kinds are {', '.join(FAULT_KINDS)}")
    if options.clients < 1:
        parser.error("--clients must be at least 1")
    if not os.access(options.tetherd, os.X_OK):
        parser.error(f"no tetherd at {options.tetherd} (build it: swift build --product tetherd, or set $TETHERD)")
    if options.seed is None:
        options.seed = random.randrange(1 << 31)
    if options.answer_target is None:
        options.answer_target = options.lease_seconds + 1
    options.nats_version = nats_version(options.nats_server)
    options.sync_always = has_sync_interval(options.nats_version)
    return options


def nats_version(binary):
    """`nats-server --version` ("nats-server: v2.15.1") as "2.15.1"."""
    try:
        import subprocess
        text = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, ValueError):
        return "unknown"
    return text.strip().rsplit("v", 1)[-1] if "v" in text else "unknown"


def has_sync_interval(version):
    """`sync_interval` came in nats-server 2.10."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (2, 10)


async def interruptible(work):
    """Ctrl-C or SIGTERM cancels the run, whose cleanup stops every process it started; a second
    one exits at once (the kernel then kills the servers: die_with_parent)."""
    task = asyncio.current_task()
    signals = 0

    def interrupt():
        nonlocal signals
        signals += 1
        if signals > 1:
            os._exit(130)
        task.cancel()

    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, interrupt)
    try:
        return await work
    except asyncio.CancelledError:
        print("jepsen: interrupted; every process it started is stopped")
        return 130


def main(argv=None):
    options = parse_options(sys.argv[1:] if argv is None else argv)
    return asyncio.run(interruptible(run(options)))


if __name__ == "__main__":
    sys.exit(main())
