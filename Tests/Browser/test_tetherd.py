"""The dashboard against the real tetherd (from $TETHERD, default .build/debug/tetherd), which
serves it at GET / and publishes the system room tether.server, with the terminal client `tether`
($TETHER) in tmux."""

import unittest

from dashboard_cases import DashboardCases
from support.processes import Server, mint_token

SECRET = "browser-test-secret"


class DashboardOnTetherd(DashboardCases, unittest.TestCase):
    label = "tetherd"

    def start_server(self, auth=False, port=0, args=()):
        return Server(args=["--memory-only", *(["--auth-secret", SECRET] if auth else []), *args], port=port)

    def tokens(self):
        return mint_token(SECRET, admin=True), mint_token(SECRET, admin=False)


if __name__ == "__main__":
    unittest.main()
