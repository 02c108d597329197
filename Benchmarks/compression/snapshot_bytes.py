#!/usr/bin/env python3
"""Bytes on the wire and server CPU for big snapshots, with and without permessage-deflate.

Usage: snapshot_bytes.py URL PID [--items 1000] [--joins 500] [--rounds 3]

Fills a fresh todo room with ITEMS items (titles of a few words, like a real list), then, ROUNDS
times and alternating, JOINS connections join it and leave: once offering permessage-deflate and
once not. For each mode it prints one JSON line: the server's bytes sent per join (hello, snapshot,
ack; from /metrics `tether_bytes_sent_total`) and its CPU time per join (all its threads, from
/proc/PID/task/*/schedstat, nanosecond resolution), medians over the rounds. The server must run
with `--compression on` for the compressed mode to differ.
"""
import argparse, asyncio, json, os, random, statistics, time, urllib.request

import websockets

WORDS = ("buy milk call the plumber renew passport book flights review pull request water plants "
         "pay rent fix the bike light send invoice to the accountant plan the team offsite").split()


def server_cpu_ns(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended between listdir and open
    return total


def bytes_sent(http_url):
    with urllib.request.urlopen(http_url + "/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("tether_bytes_sent_total"):
                return float(line.split()[-1])
    raise SystemExit("snapshot_bytes: no tether_bytes_sent_total in /metrics")


async def request(ws, message, request_id):
    message["id"] = request_id
    await ws.send(json.dumps(message))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == request_id:
            if reply["type"] == "error":
                raise SystemExit(f"snapshot_bytes: {reply}")
            return reply


async def fill(url, room, items):
    random.seed(7)
    async with websockets.connect(url, subprotocols=["tether.v1"], compression=None, max_size=None) as ws:
        await ws.recv()  # hello
        await request(ws, {"type": "join", "room": room}, 1)
        for i in range(items):
            title = " ".join(random.choice(WORDS) for _ in range(random.randint(2, 6)))
            await request(ws, {"type": "action", "room": room, "name": "add", "args": {"title": f"{title} #{i}"}}, i + 2)


async def join_once(url, room, compression):
    async with websockets.connect(url, subprotocols=["tether.v1"], compression=compression, max_size=None) as ws:
        await ws.recv()  # hello
        await request(ws, {"type": "join", "room": room}, 1)


async def joins(url, room, count, compression, parallel=50):
    gate = asyncio.Semaphore(parallel)

    async def one():
        async with gate:
            await join_once(url, room, compression)
    await asyncio.gather(*(one() for _ in range(count)))


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("pid", type=int)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--joins", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    http_url = "http" + args.url[2:]
    room = f"todo:snapshot-{random.randrange(1 << 30)}"
    await fill(args.url, room, args.items)
    figures = {"deflate": [], None: []}
    for _ in range(args.rounds):
        for compression in ("deflate", None):
            cpu, sent = server_cpu_ns(args.pid), bytes_sent(http_url)
            await joins(args.url, room, args.joins, compression)
            await asyncio.sleep(0.2)  # the closes' last frames
            figures[compression].append(((bytes_sent(http_url) - sent) / args.joins,
                                         (server_cpu_ns(args.pid) - cpu) / args.joins / 1000))
    plain_bytes = statistics.median(b for b, _ in figures[None])
    for compression, rows in figures.items():
        per_join = statistics.median(b for b, _ in rows)
        print(json.dumps({
            "ok": True, "exit_code": 0, "label": "snapshot-" + ("deflate" if compression else "plain"), "items": args.items, "joins": args.joins,
            "rounds": args.rounds, "compression": compression is not None,
            "server_bytes_per_delivery": per_join,
            "server_cpu_us_per_delivery": statistics.median(us for _, us in rows),
            "bytes_ratio_to_plain": per_join / plain_bytes,
        }))

asyncio.run(main())
