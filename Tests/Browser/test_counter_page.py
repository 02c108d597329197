"""The counter example page (/examples/counter.html) against the real tetherd: what its status,
its count and its "waiting" line say must follow what actually happened. A press shows at once
(a prediction), waits while the daemon is stopped or away, and counts once."""

import shutil
import signal
import tempfile
import time
import unittest

from support.browser import Browser
from support.processes import ProtocolClient, Server, free_port

SECRET = "browser-test-secret"


class CounterPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = Browser(width=900, height=700)

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()

    def tearDown(self):
        self.browser.open("about:blank")

    def server(self, args, port=0):
        server = Server(args=args, port=port)
        self.addCleanup(server.stop)
        return server

    def server_count(self, server):
        client = ProtocolClient(server.url)
        try:
            return client.join("counter")["state"]["count"]
        finally:
            client.close()

    def test_the_status_is_not_live_before_the_count_arrives(self):
        """Connected but not joined (here: refused, the page has no token) is not "live"."""
        server = self.server(["--memory-only", "--auth-secret", SECRET])
        b = self.browser
        b.open(server.http + "/examples/counter.html")
        b.wait_for("the refused join", lambda: "unauthorized" in b.text("#status"))
        self.assertEqual(b.text("#count"), "…")
        self.assertNotIn("live", b.text("#status"))
        self.assertFalse(b.find("#increment").is_enabled(), "nothing to press before the count")

    def test_a_press_on_a_stopped_daemon_shows_at_once_waits_and_counts_once(self):
        """SIGSTOP: each press changes the count at once and is listed as waiting; after SIGCONT
        the count settles to the server's, with nothing waiting."""
        server = self.server(["--memory-only"])
        b = self.browser
        b.open(server.http + "/examples/counter.html")
        b.wait_for("the counter live", lambda: b.text("#status") == "live" and b.text("#count") == "0")
        self.assertEqual(b.text("#pending"), "")

        server.process.send_signal(signal.SIGSTOP)
        try:
            b.find("#increment").click()
            self.assertEqual(b.text("#count"), "1", "shown at once")
            b.wait_for("one press waiting", lambda: b.text("#pending") == "1 press waiting for the server")
            b.find("#increment").click()
            b.find("#decrement").click()
            b.find("#increment").click()
            b.wait_for("four presses waiting", lambda: b.text("#pending") == "4 presses waiting for the server")
            self.assertEqual(b.text("#count"), "2")
            path = b.screenshot("counter-page-stopped-daemon")
            print(f"\n  screenshot: {path}")
        finally:
            server.process.send_signal(signal.SIGCONT)
        b.wait_for("nothing waiting", lambda: b.text("#pending") == "")
        self.assertEqual(b.text("#count"), "2")
        self.assertEqual(b.text("#error"), "")
        self.assertEqual(self.server_count(server), 2, "each press counted once")
        self.assertEqual(b.run("return window.document.getElementById('count').textContent"), "2")
        path = b.screenshot("counter-page-settled")
        print(f"  screenshot: {path}")

    def test_presses_while_the_daemon_is_away_wait_and_count_once(self):
        """A press sent to a stopped daemon that is then killed (-9), and one pressed while the
        page is reconnecting: both wait, shown, and each counts once when a daemon is back on the
        same data."""
        data = tempfile.mkdtemp(prefix="tether-counter-page-")
        self.addCleanup(shutil.rmtree, data, True)
        port = free_port()
        server = self.server(["--data", data], port=port)
        b = self.browser
        b.open(server.http + "/examples/counter.html")
        b.wait_for("the counter live", lambda: b.text("#status") == "live" and b.text("#count") == "0")

        server.process.send_signal(signal.SIGSTOP)
        b.find("#increment").click()
        time.sleep(0.3)  # sent; the stopped daemon never reads it
        server.process.kill()
        server.process.wait()
        b.wait_for("the page reconnecting", lambda: b.text("#status") == "reconnecting")
        self.assertTrue(b.find("#increment").is_enabled(), "a press while reconnecting waits in the queue")
        b.find("#increment").click()
        b.wait_for("two presses waiting", lambda: b.text("#pending") == "2 presses waiting for the server")
        self.assertEqual(b.text("#count"), "2", "both shown")

        restarted = self.server(["--data", data], port=port)
        b.wait_for("nothing waiting", lambda: b.text("#pending") == "", timeout=20)
        self.assertEqual(b.text("#count"), "2")
        self.assertEqual(b.text("#status"), "live")
        self.assertEqual(b.text("#error"), "")
        self.assertEqual(self.server_count(restarted), 2, "each press counted once")


if __name__ == "__main__":
    unittest.main()
