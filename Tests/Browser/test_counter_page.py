"""The counter example page (/examples/counter.html) against the real tetherd: what its status
and its message line say must follow what actually happened."""

import shutil
import signal
import tempfile
import time
import unittest

from support.browser import Browser
from support.processes import Server, free_port

SECRET = "browser-test-secret"


class CounterPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = Browser()

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()

    def tearDown(self):
        self.browser.open("about:blank")

    def server(self, args, port=0):
        server = Server(args=args, port=port)
        self.addCleanup(server.stop)
        return server

    def test_the_status_is_not_live_before_the_count_arrives(self):
        """Connected but not joined (here: refused, the page has no token) is not "live"."""
        server = self.server(["--memory-only", "--auth-secret", SECRET])
        b = self.browser
        b.open(server.http + "/examples/counter.html")
        b.wait_for("the refused join", lambda: "unauthorized" in b.text("#status"))
        self.assertEqual(b.text("#count"), "…")
        self.assertNotIn("live", b.text("#status"))
        self.assertFalse(b.find("#increment").is_enabled(), "nothing to press before the count")

    def test_an_unknown_outcome_is_followed_by_what_happened(self):
        """A press the stopped daemon answers late is reported applied; one lost with a kill -9
        is reported not applied once the page is back; neither warning just vanishes."""
        data = tempfile.mkdtemp(prefix="tether-counter-page-")
        self.addCleanup(shutil.rmtree, data, True)
        port = free_port()
        server = self.server(["--data", data], port=port)
        b = self.browser
        b.open(server.http + "/examples/counter.html")
        b.wait_for("the counter live", lambda: b.text("#status") == "live" and b.text("#count") == "0")

        server.process.send_signal(signal.SIGSTOP)
        b.find("#increment").click()
        b.wait_for("the unknown outcome", lambda: "may or may not" in b.text("#error"), timeout=20)
        server.process.send_signal(signal.SIGCONT)
        b.wait_for("the late ack", lambda: "increment was applied after all" in b.text("#error"))
        self.assertEqual(b.text("#count"), "1")
        self.assertNotIn("may or may not", b.text("#error"))

        server.process.send_signal(signal.SIGSTOP)
        b.find("#increment").click()
        time.sleep(0.3)  # sent; the stopped daemon never reads it
        server.process.kill()
        server.process.wait()
        b.wait_for("the dropped connection", lambda: "may or may not" in b.text("#error"))
        self.server(["--data", data], port=port)
        b.wait_for("the press known lost", lambda: "increment was not applied" in b.text("#error"), timeout=20)
        self.assertEqual(b.text("#count"), "1")
        self.assertEqual(b.text("#status"), "live")


if __name__ == "__main__":
    unittest.main()
