"""The dashboard against the mock web side (support/mock_server.py): the page's own logic, with
no tetherd needed. Also what a single real daemon cannot show: cluster nodes and a truncated
room list."""

import unittest

from dashboard_cases import DashboardCases
from support.processes import Server


class DashboardOnTheMock(DashboardCases, unittest.TestCase):
    label = "mock"

    def start_server(self, auth=False, port=0, args=()):
        return Server(args=[*(["--token", "admin-token"] if auth else []), *args], mock=True, port=port)

    def tokens(self):
        return "admin-token", "a-token-without-admin"

    def test_cluster_nodes_and_a_truncated_room_list(self):
        server = self.server(args=["--nodes", "--rooms", "600"])
        b = self.browser
        self.open(server)
        b.wait_for("the nodes table", lambda: b.visible("#nodes-panel") and len(b.find_all("#nodes-body tr")) == 3)
        self.assertIn("down", b.text("#nodes-body"))
        b.wait_for("the webhooks panel", lambda: b.visible("#webhooks-panel") and len(b.find_all("#webhooks-body tr")) == 1)
        self.assertIn("delivered by node n2", b.text("#webhooks-body"), "a node that does not deliver names the one that does")
        print(f"\n  screenshot: {b.screenshot('webhooks-delivered-elsewhere')}")
        b.wait_for("500 rooms listed", lambda: len(b.find_all("#rooms-body tr")) == 500)
        self.assertTrue(b.visible("#rooms-truncated"))
        b.find("#room-filter").send_keys("bulk-0042")
        b.wait_for("the filter applied", lambda: len(b.find_all("#rooms-body tr")) == 1)
        b.find("#rooms-body tr td:nth-child(2)").click()
        b.wait_for("the room opened by clicking its row", lambda: b.visible("#room-view") and b.text("#room-title") == "todo:bulk-0042")
        self.assert_no_console_errors()


if __name__ == "__main__":
    unittest.main()
