"""Headless Chromium through Selenium (Debian's chromium, chromium-driver and python3-selenium),
with what the dashboard tests need: console logs, waiting for a condition, screenshots as
artifacts under .build/browser-artifacts/."""

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import JavascriptException, StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO / ".build" / "browser-artifacts"


def find_executable(names, variable):
    if os.environ.get(variable):
        return os.environ[variable]
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = find_executable(["chromium", "chromium-browser", "google-chrome"], "CHROMIUM")
CHROMEDRIVER = find_executable(["chromedriver"], "CHROMEDRIVER")


class Browser:
    """One headless Chromium window; `quit()` it (tests do it in addCleanup)."""

    def __init__(self, width=1400, height=1000):
        if not CHROMIUM or not CHROMEDRIVER:
            raise RuntimeError("chromium and chromedriver are needed: Scripts/setup.sh installs them "
                               "(Debian packages chromium, chromium-driver)")
        options = Options()
        options.binary_location = CHROMIUM
        self.profile = tempfile.mkdtemp(prefix="tether-chromium-")
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         f"--window-size={width},{height}", f"--user-data-dir={self.profile}",
                         "--no-first-run", "--disable-extensions", "--disable-background-networking"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_script_timeout(60)
        self.logs = []

    def quit(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def open(self, url):
        self.driver.get(url)

    def run(self, script, *arguments):
        return self.driver.execute_script(script, *arguments)

    def run_async(self, script, *arguments):
        """Runs `script`, whose last argument is a callback to call with the result."""
        return self.driver.execute_async_script(script, *arguments)

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css):
        return self.find(css).text

    def visible(self, css):
        elements = self.find_all(css)
        return bool(elements) and elements[0].is_displayed()

    def wait_for(self, what, condition, timeout=15):
        """Polls `condition()` (a function of nothing) until it returns something truthy; returns it.
        On timeout, fails with `what`, the page's text and its console."""
        deadline = time.monotonic() + timeout
        last_error = None
        while time.monotonic() < deadline:
            try:
                result = condition()
                if result:
                    return result
            except (StaleElementReferenceException, JavascriptException) as error:
                last_error = error
            time.sleep(0.05)
        body = ""
        try:
            body = self.driver.find_element(By.TAG_NAME, "body").text[:3000]
        except Exception:  # the page itself may be what is broken
            pass
        raise AssertionError(f"timed out after {timeout} s waiting for {what}"
                             f"{f' (last error: {last_error})' if last_error else ''}\n"
                             f"--- page text ---\n{body}\n--- console ---\n{self.console_text()}")

    def console(self):
        """Console entries since the last call, kept in self.logs: [{level, message}]."""
        self.logs.extend(self.driver.get_log("browser"))
        return self.logs

    def console_errors(self):
        return [entry for entry in self.console() if entry["level"] == "SEVERE"]

    def console_text(self):
        try:
            return "\n".join(f"{entry['level']}: {entry['message']}" for entry in self.console())
        except Exception as error:
            return f"(no console: {error})"

    def screenshot(self, name):
        """Saves .build/browser-artifacts/NAME.png (the whole page, not just the window) and returns its path."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        height = self.run("return Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)")
        width = self.run("return document.documentElement.clientWidth")
        original = self.driver.get_window_size()
        self.driver.set_window_size(max(width, original["width"]), min(max(height + 120, original["height"]), 4000))
        time.sleep(0.3)
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(original["width"], original["height"])
        return path

    def stats(self):
        return self.run("return window.tetherDashboardStats && window.tetherDashboardStats.read()")


def dump(value):
    return json.dumps(value, indent=1, sort_keys=True)
