"""A webhook receiver for load tests: answers 204 to every POST at once and, on SIGTERM,
prints how many it got. Signatures are not checked here (the tests do that).

    python3 webhook_sink.py PORT
"""
import http.server
import signal
import sys

count = 0


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global count
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        count += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def stop(*_):
    print(f"webhook_sink: {count} deliveries", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
