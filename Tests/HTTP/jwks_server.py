#!/usr/bin/env python3
"""An identity provider for tests: publishes a JWKS and mints tokens, with real keys.

    PYTHONPATH=.tools/py python3 Tests/HTTP/jwks_server.py [--issuer URL] [--kid-prefix P]

Listens on 127.0.0.1, port 0; prints its port as the first line on stdout. Keys (PyJWT with
cryptography): RSA-2048 "rsa-1" (RS256), P-256 "ec-1" (ES256), Ed25519 "ed-1" (EdDSA).

    GET  /.well-known/jwks.json   the public keys (counted; 503 while down)
    POST /control {"op": ...}     rotate (a new RSA key "rsa-N", published beside the others),
                                  down, up, slow {"seconds"}, count -> {"fetches": N}
    POST /mint {...}              {"token": ...}: kid (default rsa-1), sub, rooms, read, aud, iss
                                  (default the issuer; null leaves it out), ttl (default 300),
                                  nbf / iat (seconds from now), header_kid (the kid written in
                                  the header, when it should differ from the signing key's)
    GET  /fixture/redirect        302 to /fixture/ok        (OutboundHTTP tests)
    GET  /fixture/ok              200 "ok"
    GET  /fixture/hang            never answers (within a minute)
    GET  /fixture/big?bytes=N     200 with N bytes
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm


class Provider:
    def __init__(self, issuer, prefix):
        self.issuer = issuer
        self.prefix = prefix
        self.lock = threading.Lock()
        self.keys = {}  # kid -> (alg, private key)
        self.fetches = 0
        self.down = False
        self.slow = 0.0
        self.rotations = 1
        self.add("rsa-1", "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))
        self.add("ec-1", "ES256", ec.generate_private_key(ec.SECP256R1()))
        self.add("ed-1", "EdDSA", ed25519.Ed25519PrivateKey.generate())

    def add(self, kid, alg, key):
        self.keys[self.prefix + kid] = (alg, key)

    def rotate(self):
        with self.lock:
            self.rotations += 1
            kid = "rsa-%d" % self.rotations
            self.add(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))
            return self.prefix + kid

    def jwks(self):
        keys = []
        for kid, (alg, key) in self.keys.items():
            if alg == "RS256":
                jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
            elif alg == "ES256":
                jwk = json.loads(ECAlgorithm.to_jwk(key.public_key()))
            else:
                jwk = json.loads(OKPAlgorithm.to_jwk(key.public_key()))
            jwk.update({"kid": kid, "use": "sig", "alg": alg})
            keys.append(jwk)
        return {"keys": keys}

    def mint(self, request):
        kid = request.get("kid", self.prefix + "rsa-1")
        alg, key = self.keys[kid]
        now = int(time.time())
        claims = {"sub": request.get("sub", "ana"), "exp": now + int(request.get("ttl", 300))}
        issuer = request.get("iss", self.issuer)
        if issuer is not None:
            claims["iss"] = issuer
        for name in ("rooms", "read", "aud", "admin"):
            if name in request:
                claims[name] = request[name]
        for name in ("nbf", "iat"):
            if name in request:
                claims[name] = now + int(request[name])
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": request.get("header_kid", kid)})


def handler_for(provider):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send_json(self, status, value):
            body = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            url = urlparse(self.path)
            if url.path == "/.well-known/jwks.json":
                with provider.lock:
                    provider.fetches += 1
                    down, slow, document = provider.down, provider.slow, provider.jwks()
                time.sleep(slow)
                if down:
                    self.send_json(503, {"error": "down"})
                else:
                    self.send_json(200, document)
            elif url.path == "/fixture/redirect":
                self.send_response(302)
                self.send_header("Location", "/fixture/ok")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif url.path == "/fixture/ok":
                self.send_json(200, "ok")
            elif url.path == "/fixture/hang":
                time.sleep(60)
                self.send_json(200, "late")
            elif url.path == "/fixture/big":
                count = int(parse_qs(url.query).get("bytes", ["0"])[0])
                self.send_response(200)
                self.send_header("Content-Length", str(count))
                self.end_headers()
                self.wfile.write(b"x" * count)
            else:
                self.send_json(404, {"error": "no such path"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/mint":
                try:
                    self.send_json(200, {"token": provider.mint(request)})
                except KeyError as error:
                    self.send_json(400, {"error": "no key %s" % error})
            elif self.path == "/control":
                op = request.get("op")
                if op == "rotate":
                    self.send_json(200, {"kid": provider.rotate()})
                    return
                with provider.lock:
                    if op == "down":
                        provider.down = True
                    elif op == "up":
                        provider.down = False
                    elif op == "slow":
                        provider.slow = float(request.get("seconds", 0))
                    elif op != "count":
                        self.send_json(400, {"error": "unknown op %r" % op})
                        return
                    self.send_json(200, {"fetches": provider.fetches, "down": provider.down})
            else:
                self.send_json(404, {"error": "no such path"})

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--issuer", default="https://idp.test/realms/a")
    parser.add_argument("--kid-prefix", default="")
    parser.add_argument("--down", action="store_true", help="start answering 503")
    arguments = parser.parse_args()
    provider = Provider(arguments.issuer, arguments.kid_prefix)
    provider.down = arguments.down
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(provider))
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
