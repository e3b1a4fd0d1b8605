"""A real headless Chromium (Debian's package) driven over the DevTools protocol, for tests of
report.html: load a page, collect console errors, evaluate JavaScript, take a screenshot."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

__all__ = ["Chromium", "chromium_path"]

FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1200,1400", "--remote-debugging-port=0",
)  # fmt: skip


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """One browser with one page; every wait has a deadline."""

    def __init__(self, timeout: float = 30) -> None:
        path = chromium_path()
        if path is None:
            raise RuntimeError("chromium is not installed")
        self.timeout = timeout
        self.profile = Path(tempfile.mkdtemp(prefix="bcc-chromium-"))
        self.proc = subprocess.Popen(
            [path, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._id = 0
        self.events: list[dict[str, Any]] = []
        try:
            self.ws = websocket.create_connection(
                self._page_url(), timeout=timeout, suppress_origin=True
            )
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable")
        except BaseException:
            self._stop()  # no browser outlives a failed start
            raise

    def _page_url(self) -> str:
        port = self._port()
        deadline = time.monotonic() + self.timeout
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                pages = [t for t in json.loads(r.read()) if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            if time.monotonic() > deadline:
                raise TimeoutError("chromium opened no page")
            time.sleep(0.1)

    def _port(self) -> int:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its debugging port")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)
        raise TimeoutError(method)

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load")
            self.events.append(json.loads(self.ws.recv()))

    def evaluate(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(reply["exceptionDetails"])
        return reply["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        errors = []
        for ev in self.events:
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                errors.append(str(params.get("exceptionDetails")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                errors.append(str(params.get("args")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(str(params["entry"].get("text")))
        return errors

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self._stop()

    def _stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
