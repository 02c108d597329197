"""The dashboard against the real tetherd (from $TETHERD, default .build/debug/tetherd), with the
terminal client `tether` ($TETHER) in tmux. Skipped, with the reason, while tetherd does not serve
the dashboard at GET /."""

import unittest

from dashboard_cases import DashboardCases
from support.processes import Server, mint_token

SECRET = "browser-test-secret"


class DashboardOnTetherd(DashboardCases, unittest.TestCase):
    label = "tetherd"

    @classmethod
    def setUpClass(cls):
        probe = Server(args=["--memory-only"])
        try:
            if not probe.serves_dashboard():
                raise unittest.SkipTest(f"{probe.command[0]} does not serve the dashboard (GET / is not 200): "
                                        "these tests need tetherd's web side (issue 12)")
        finally:
            probe.stop()
        super().setUpClass()

    def start_server(self, auth=False, port=0, args=()):
        return Server(args=["--memory-only", *(["--auth-secret", SECRET] if auth else []), *args], port=port)

    def tokens(self):
        return mint_token(SECRET, admin=True), mint_token(SECRET, admin=False)


if __name__ == "__main__":
    unittest.main()
