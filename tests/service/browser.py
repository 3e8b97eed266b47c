"""Headless Chromium (Debian's chromium + chromedriver) for the browser tests, and a real
dashboard server on 127.0.0.1 in a background thread.

Tests that need the browser skip with the reason when either binary is missing; CI installs
them (.ci/run).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def require_chromium() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]
    if missing:
        pytest.skip(
            f"browser tests need Debian's chromium and chromium-driver ({', '.join(missing)} "
            "missing): apt-get install -y chromium chromium-driver"
        )


@contextmanager
def chromium(downloads: Path, width: int = 1280, height: int = 900) -> Iterator[Any]:
    require_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="priceadvisor-chromium-")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    if width < 500:  # a headless window is at least 500 px wide: emulate the phone's viewport
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True},
        )
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class ServerThread:
    """The dashboard app on uvicorn in its own event loop and thread, like `priceadvisor serve`."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.port = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("dashboard server did not start")
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        self._thread.join(30)

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        from priceadvisor.service import web

        self._server = await web.serve("127.0.0.1", 0, self.app)
        self.port = self._server.port
        self._ready.set()
        await self._server.wait_closed()
