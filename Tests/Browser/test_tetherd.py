"""The dashboard against the real tetherd (from $TETHERD, default .build/debug/tetherd), which
serves it at GET / and publishes the system room tether.server, with the terminal client `tether`
($TETHER) in tmux."""

import base64
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

from dashboard_cases import DashboardCases
from support.processes import TETHER, Server, http_get, mint_token

SECRET = "browser-test-secret"


class DashboardOnTetherd(DashboardCases, unittest.TestCase):
    label = "tetherd"

    def start_server(self, auth=False, port=0, args=()):
        return Server(args=["--memory-only", *(["--auth-secret", SECRET] if auth else []), *args], port=port)

    def tokens(self):
        return mint_token(SECRET, admin=True), mint_token(SECRET, admin=False)

    def test_the_socket_threads_are_shown_with_their_connections(self):
        """A daemon on two socket threads: the server facts name both, with the connections each
        serves (the page's and three clients', 4 in all; HTTP requests take turns too, so the
        split varies) and their CPU."""
        server = self.server_with(Server(args=["--memory-only", "--io-threads", "2"]))
        b = self.browser
        self.open(server)
        self.wait_live()
        clients = [self.client(server.url) for _ in range(3)]
        b.wait_for("4 connections", lambda: b.text("#stat-connections") == "4")

        def threads_fact():
            terms = [element.text for element in b.find_all("#server-facts dt")]
            values = [element.text for element in b.find_all("#server-facts dd")]
            return dict(zip(terms, values)).get("Socket threads", "")
        pattern = re.compile(r"^2 threads: (\d+) and (\d+) connections, \d+\.\d and \d+\.\d s of CPU$")

        def counted_all():
            match = pattern.match(threads_fact())
            return match is not None and int(match.group(1)) + int(match.group(2)) == 4
        b.wait_for("the socket threads fact with 4 connections", counted_all)
        for client in clients:
            client.close()
        self.assert_no_console_errors()

    # Only the real daemon stores rooms.

    def test_stored_rooms_are_listed_after_their_clients_left_and_can_be_deleted(self):
        """A daemon with a data directory and a token secret: rooms whose clients left (and that
        left memory) are listed as stored, with size and last change; the Delete button asks,
        then deletes with the page's admin token, and the room is gone from the list and GET /rooms."""
        data = tempfile.mkdtemp(prefix="tether-browser-data-")
        self.addCleanup(shutil.rmtree, data, True)
        server = self.server_with(Server(args=["--data", data, "--idle-room-seconds", "1", "--auth-secret", SECRET]))
        admin, _ = self.tokens()
        writer = self.client(server.url, token=admin)
        for room, action, args in [("counter", "increment", {"by": 3}), ("todo:nc", "add", {"title": "milk"}), ("vote:nc", "vote", {"option": "pizza"})]:
            writer.join(room)
            writer.act(room, action, args)
        writer.close()

        b = self.browser
        self.open(server)
        b.wait_for("the sign-in form", lambda: b.visible("#sign-in"))
        b.find("#token-input").send_keys(admin)
        b.find("#sign-in-form button").click()
        stored = lambda name: b.find_all(f'#rooms-body tr[data-room="{name}"]') and b.find(f'#rooms-body tr[data-room="{name}"]').find_elements("css selector", "td")[5].text == "stored"
        b.wait_for("the three rooms listed as stored", lambda: all(stored(name) for name in ("counter", "todo:nc", "vote:nc")), timeout=20)
        cells = [td.text for td in b.find('#rooms-body tr[data-room="todo:nc"]').find_elements("css selector", "td")]
        self.assertEqual(cells[1:3], ["todo", "shared"])
        self.assertEqual((cells[3], cells[6]), ("0", "1"), "no subscribers, version 1")
        self.assertEqual(cells[4], "0", "no members: nobody is in it")
        self.assertTrue(cells[7].endswith("B"), cells)
        self.assertEqual(cells[8], "just now")
        self.assertIn("stored", b.text("#rooms-summary"))
        self.assertFalse(b.find('#rooms-body tr[data-room="tether.server"] button').is_displayed(), "the server's own room has no Delete")
        path = b.screenshot(f"stored-rooms-{self.label}")
        print(f"\n  screenshot: {path}")

        # Dismissing the question deletes nothing; accepting it deletes the room.
        b.find('#rooms-body tr[data-room="todo:nc"] button[data-delete]').click()
        self.assertIn("Delete the room todo:nc?", b.driver.switch_to.alert.text)
        b.driver.switch_to.alert.dismiss()
        self.assertTrue(b.find_all('#rooms-body tr[data-room="todo:nc"]'))
        b.find('#rooms-body tr[data-room="todo:nc"] button[data-delete]').click()
        b.driver.switch_to.alert.accept()
        b.wait_for("the notice", lambda: "Deleted todo:nc" in b.text("#rooms-notice"))
        b.wait_for("the row gone", lambda: not b.find_all('#rooms-body tr[data-room="todo:nc"]'))
        status, _, _ = http_get(server.http + "/rooms")
        self.assertEqual(status, 401, "GET /rooms needs the admin token")
        names = [room["name"] for room in json.loads(self.get_rooms(server, admin))["rooms"]]
        self.assertEqual([name for name in names if not name.startswith("tether.")], ["counter", "vote:nc"])
        self.assert_no_console_errors()
        path = b.screenshot(f"stored-rooms-after-delete-{self.label}")
        print(f"  screenshot: {path}")

    def test_the_webhooks_panel_shows_a_failing_endpoint_then_it_catching_up(self):
        """An endpoint whose receiver answers 503: the panel lists it with the events waiting and
        the receiver's answer as the last error; once the receiver answers 204 the queue drains
        and the panel says it is up to date."""
        answer = {"status": 503}
        received = []

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append((self.headers["webhook-id"], answer["status"]))
                self.send_response(answer["status"])
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        self.addCleanup(receiver.server_close)
        self.addCleanup(receiver.shutdown)
        folder = tempfile.mkdtemp(prefix="tether-browser-webhooks-")
        self.addCleanup(shutil.rmtree, folder, True)
        secret = pathlib.Path(folder, "orders.whsec")
        secret.write_text("whsec_" + base64.b64encode(os.urandom(32)).decode() + "\n")
        config = pathlib.Path(folder, "tetherd.yaml")
        config.write_text(f"""webhooks:
  - name: orders
    url: http://127.0.0.1:{receiver.server_address[1]}/hooks
    secret-file: {secret}
    events: [action.applied]
""")
        server = self.server_with(Server(args=["--memory-only", "--config", str(config)]))
        writer = self.client(server.url)
        writer.join("counter")
        for _ in range(3):
            writer.act("counter", "increment", {"by": 1})

        b = self.browser
        self.open(server)
        self.wait_live()
        row = '#webhooks-body tr[data-endpoint="orders"]'
        cells = lambda: [td.text for td in b.find(row).find_elements("css selector", "td")] if b.find_all(row) else []
        b.wait_for("the endpoint with 3 events pending and the 503",
                   lambda: cells() and cells()[2] == "3" and "503" in cells()[4], timeout=20)
        shown = cells()
        self.assertIn(f"127.0.0.1:{receiver.server_address[1]}/hooks", shown[0])
        self.assertEqual((shown[1], shown[3]), ("● sending", "0"))
        print(f"\n  screenshot: {b.screenshot(f'webhooks-failing-{self.label}')}")

        answer["status"] = 204
        b.wait_for("the queue drained", lambda: cells() and cells()[1:4] == ["● up to date", "0", "0"], timeout=40)
        refused = {id for id, status in received if status == 503}
        delivered = [id for id, status in received if status == 204]
        self.assertEqual(len(set(delivered)), 3, "each event delivered")
        self.assertTrue(refused and refused <= set(delivered), "the refused event (the room's oldest: it holds the others back) delivered too")
        self.assert_no_console_errors()
        print(f"  screenshot: {b.screenshot(f'webhooks-caught-up-{self.label}')}")

    def test_a_deleted_room_keeps_its_last_state_and_acts_no_more(self):
        """`tether rooms delete todo` while the page shows todo (issue 34): the last state stays
        (not "could not be joined"), "Who is here" says presence is gone (it asked forever), the
        forms are disabled (an add made a new todo room the page did not show), and "Join again"
        opens the new, empty room."""
        server = self.server_with(Server(args=["--memory-only"]))
        writer = self.client(server.url)
        writer.join("todo")
        for title in ("milk", "eggs"):
            writer.act("todo", "add", {"title": title})
        b = self.browser
        self.open(server, "todo")
        b.wait_for("the items and the forms", lambda: self.tree_values("title") == ['"milk"', '"eggs"'] and b.find_all('form[data-action="add"]'))
        b.wait_for("presence answered", lambda: "Asking" not in b.text("#room-members-note"))
        deleted = subprocess.run([str(TETHER), "rooms", "delete", "todo", "--url", server.url], capture_output=True, text=True, timeout=20)
        self.assertEqual(deleted.returncode, 0, deleted.stderr)

        b.wait_for("the banner", lambda: b.visible("#room-error") and "deleted" in b.text("#room-error"))
        time.sleep(0.5)  # time for anything the page would still do
        self.assertEqual(self.tree_values("title"), ['"milk"', '"eggs"'], "the last state stays on screen")
        self.assertNotIn("could not be joined", b.text("#room-state"))
        self.assertEqual(b.text("#room-version"), "2")
        self.assertIn("deleted", b.text("#room-members-note"))
        self.assertNotIn("Asking", b.text("#room-members-note"))
        for button in b.find_all("#room-actions button"):
            self.assertFalse(button.is_enabled(), button.text)
        self.assertTrue(b.visible("#room-rejoin"))
        path = b.screenshot(f"deleted-room-{self.label}")
        print(f"\n  screenshot: {path}")
        names = [room["name"] for room in json.loads(self.get_rooms(server, ""))["rooms"]]
        self.assertNotIn("todo", names, "the page made no new room")

        b.find("#room-rejoin").click()
        b.wait_for("the new, empty room", lambda: self.tree_values("title") == [] and b.text("#room-version") == "0")
        self.assertFalse(b.visible("#room-error"))
        self.assertEqual(self.click_action("add", title="bread").get_attribute("data-kind"), "ok")
        b.wait_for("the new item", lambda: self.tree_values("title") == ['"bread"'])
        self.assert_no_console_errors()

    def test_a_token_without_the_admin_claim_opens_the_rooms_it_covers(self):
        """A token for rooms '*' without the admin claim (issue 34): the room view works with it
        (it was refused: "tether.server … needs a token with the admin claim"), and the overview
        says what it needs and offers what it can."""
        server = self.server_with(Server(args=["--memory-only", "--auth-secret", SECRET]))
        _, ordinary = self.tokens()
        b = self.browser
        self.open(server, "counter")
        b.wait_for("the sign-in form", lambda: b.visible("#sign-in"))
        b.find("#token-input").send_keys(ordinary)
        b.find("#sign-in-form button").click()
        b.wait_for("the room view", lambda: b.visible("#room-view") and self.tree_values("count") == ["0"])
        self.assertFalse(b.visible("#sign-in"))
        self.assertEqual(self.click_action("increment").get_attribute("data-kind"), "ok")
        b.wait_for("the count", lambda: self.tree_values("count") == ["1"])
        path = b.screenshot(f"room-with-a-room-token-{self.label}")
        print(f"\n  screenshot: {path}")

        b.find(".crumbs a").click()
        b.wait_for("the overview's note", lambda: b.visible("#limited-access"))
        note = b.text("#limited-access")
        self.assertIn("admin claim", note)
        self.assertIn("browser-test", note, "whose token")
        self.assertIn("every room", note, "what it covers")
        self.assertFalse(b.visible(".cards"))
        self.assertTrue(b.visible("#open-room-form"))
        path = b.screenshot(f"overview-with-a-room-token-{self.label}")
        print(f"  screenshot: {path}")
        b.find("#open-room-input").send_keys("todo:mine")
        b.find("#open-room-form button").click()
        b.wait_for("the room opened", lambda: b.visible("#room-view") and b.text("#room-title") == "todo:mine" and b.text("#room-version") == "0")
        self.assert_no_console_errors()

    def server_with(self, server):
        self.addCleanup(server.stop)
        return server

    @staticmethod
    def get_rooms(server, token):
        request = urllib.request.Request(server.http + "/rooms", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read()


if __name__ == "__main__":
    unittest.main()
