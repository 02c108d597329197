"""tether.js on a page of your own (another origin, a copy of tether.js next to it, the daemon
started with --allowed-origins), as docs/CLIENTS.md describes: a send made right after
client.room(), before the client is live, waits and is applied; and the complete page printed in
docs/CLIENTS.md works as printed."""

import re
import unittest
import urllib.parse

from support.browser import Browser
from support.processes import REPO, ProtocolClient, Server, StaticSite

TETHER_JS = (REPO / "Clients" / "web" / "tether.js").read_text()

EARLY_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>early</title><link rel="icon" href="data:,">
<script type="module" src="./early.js"></script></head><body><p id="out">…</p></body></html>
"""

# room.send in the same task as client.room(): no WebSocket can be open yet.
EARLY_SCRIPT = """import { TetherClient } from "./tether.js";
window.result = "pending";
const client = new TetherClient(new URLSearchParams(location.search).get("target"));
const room = client.room("counter:early");
const sent = room.send("increment", { by: 5 }, { predict: (state) => { state.count += 5; } });
const before = { state: client.state, pending: client.pendingActions };
sent.then(
  (ack) => { window.result = { before, ack, shown: room.state, server: room.serverState }; },
  (error) => { window.result = { before, error: `${error.code}: ${error.message}` }; });
"""


def documented_page():
    """The complete page in docs/CLIENTS.md, "Browsers and Node: tether.js"."""
    text = (REPO / "docs" / "CLIENTS.md").read_text()
    section = text[text.index("## Browsers and Node: tether.js"):]
    return re.search(r"```html\n(.*?)```", section, re.S).group(1)


class OwnPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = Browser(width=900, height=700)

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()

    def tearDown(self):
        self.browser.open("about:blank")

    def site_and_server(self, files):
        site = StaticSite({"tether.js": TETHER_JS, **files})
        self.addCleanup(site.stop)
        server = Server(args=["--memory-only", "--allowed-origins", site.origin])
        self.addCleanup(server.stop)
        return site, server

    def count(self, server, room):
        client = ProtocolClient(server.url)
        try:
            return client.join(room)["state"]["count"]
        finally:
            client.close()

    def test_a_send_right_after_opening_the_room_waits_and_is_applied(self):
        site, server = self.site_and_server({"early.html": EARLY_PAGE, "early.js": EARLY_SCRIPT})
        b = self.browser
        b.open(f"{site.origin}/early.html?target={urllib.parse.quote(server.url)}")
        result = b.wait_for("the send's outcome", lambda: (r := b.run("return window.result")) != "pending" and r)
        self.assertNotIn("error", result, result)
        self.assertEqual(result["before"]["state"], "connecting")
        self.assertEqual(result["before"]["pending"], [{"room": "counter:early", "name": "increment", "args": {"by": 5}, "seq": 1, "sent": False}])
        self.assertEqual(result["ack"]["type"], "ack")
        self.assertEqual(result["shown"], {"count": 5}, "the patch applied, the prediction gone")
        self.assertEqual(result["server"], {"count": 5})
        self.assertEqual(self.count(server, "counter:early"), 5)
        self.assertEqual(b.console_errors(), [])

    def test_the_documented_page_works_as_printed(self):
        page = documented_page()
        self.assertIn('new TetherClient("ws://127.0.0.1:8080")', page)
        site, server = self.site_and_server({"index.html": ""})
        # The daemon's port is known only now: the page as printed, with it.
        (site.directory / "index.html").write_text(page.replace("ws://127.0.0.1:8080", server.url))
        b = self.browser
        b.open(f"{site.origin}/index.html")
        b.wait_for("the count", lambda: b.text("#count") == "0" and b.text("#status") == "live")
        b.find("#plus").click()
        b.find("#plus").click()
        b.wait_for("both presses counted", lambda: b.text("#count") == "2" and b.text("#waiting") == "")
        self.assertEqual(b.text("#error"), "")
        self.assertEqual(self.count(server, "counter"), 2)


if __name__ == "__main__":
    unittest.main()
