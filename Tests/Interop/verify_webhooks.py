#!/usr/bin/env python3
"""Verifies webhook deliveries with `standardwebhooks`, the specification's own library.

Reads JSON lines {"secret", "headers": {...}, "body"} from standard input; prints one JSON line
per delivery: {"ok": true} or {"ok": false, "error": WHY}.
"""
import json
import sys

from standardwebhooks import Webhook

for line in sys.stdin:
    delivery = json.loads(line)
    try:
        Webhook(delivery["secret"]).verify(delivery["body"], delivery["headers"])
        print(json.dumps({"ok": True}))
    except Exception as error:  # the library's WebhookVerificationError, or a malformed secret
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
