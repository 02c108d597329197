#!/usr/bin/env python3
"""A webhook receiver for tests: verifies every delivery with `standardwebhooks` (the
specification's own library) and keeps what it got, deduplicated by webhook-id.

    webhook_receiver.py SECRET_FILE [--port N]

Prints its port as the first line. POST /hook takes deliveries; GET /received answers
{"events": [...first copy of each id...], "duplicates": N, "bad": N, "attempts": N};
POST /control {"mode": "ok" | "status" | "slow" | "gone", "status": N, "seconds": S} changes how it
answers (gone: 410).
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook

secrets = [line.strip() for line in open(sys.argv[1]) if line.strip()]
port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
lock = threading.Lock()
state = {"events": {}, "order": [], "duplicates": 0, "bad": 0, "attempts": 0, "mode": {"mode": "ok"}}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            body = {"events": [state["events"][i] for i in state["order"]], "duplicates": state["duplicates"],
                    "bad": state["bad"], "attempts": state["attempts"]}
        self.answer(200, json.dumps(body).encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/control":
            with lock:
                state["mode"] = json.loads(body)
            return self.answer(200)
        with lock:
            mode = dict(state["mode"])
            state["attempts"] += 1
        if mode["mode"] == "slow":
            time.sleep(mode.get("seconds", 5))
        headers = {name.lower(): value for name, value in self.headers.items()}
        # Verified with the current secret (the first line): a rotation's new one.
        try:
            Webhook(secrets[0]).verify(body, headers)
        except Exception:
            with lock:
                state["bad"] += 1
            return self.answer(400)
        if mode["mode"] == "status":
            return self.answer(mode["status"])
        if mode["mode"] == "gone":
            return self.answer(410)
        event = json.loads(body)
        event["id"] = headers["webhook-id"]
        event["received"] = time.time()
        with lock:
            if event["id"] in state["events"]:
                state["duplicates"] += 1
            else:
                state["events"][event["id"]] = event
                state["order"].append(event["id"])
        self.answer(204)


server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
