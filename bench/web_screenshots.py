"""Screenshots for docs/img/: the dashboard (1280 px; phone 390 px, dark) and the digest email
(1000 px and 390 px), rendered from the same sample data.

Usage: python bench/web_screenshots.py [--out docs/img]
Serves the browser tests' sample database (tests/service/dashboard_data.py) and photographs
each page with Debian's headless Chromium.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests.service import dashboard_data
from tests.service.browser import ServerThread, chromium

from priceadvisor.config import load_settings
from priceadvisor.notify import digest as digests
from priceadvisor.records import utcnow
from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from priceadvisor.store.handle import Store

SHOTS = [
    ("dashboard-prices", "/", 1280, 1000, False),
    ("dashboard-prices-phone", "/", 390, 844, False),
    ("dashboard-prices-phone-dark", "/?pricing=spot", 390, 844, True),
    ("dashboard-gpu", "/gpu/H100-SXM-80GB", 1280, 1000, False),
    ("dashboard-gpu-phone-dark", "/gpu/H100-SXM-80GB", 390, 844, True),
    ("dashboard-workloads", "/workloads", 1280, 600, False),
    ("dashboard-workloads-phone", "/workloads", 390, 844, False),
    ("dashboard-providers", "/providers", 1280, 700, False),
    ("dashboard-providers-phone", "/providers", 390, 844, False),
    ("dashboard-alerts", "/alerts", 1280, 600, False),
    ("dashboard-alerts-phone", "/alerts", 390, 844, False),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = dashboard_data.build(Path(tmp) / "shots.duckdb")
        with ServerThread(web.build_app(Dashboard(Store(db), "sample data").routes())) as url:
            for name, path, width, height, dark in SHOTS:
                shoot(url + path, args.out / f"{name}.png", width, height, dark, Path(tmp))
                print(args.out / f"{name}.png")
        page = Path(tmp) / "digest.html"
        page.write_text(digest_html(db), encoding="utf-8")
        for name, width in (("digest-email", 1000), ("digest-email-phone", 390)):
            shoot(page.as_uri(), args.out / f"{name}.png", width, 1400, False, Path(tmp))
            print(args.out / f"{name}.png")


def digest_html(db: Path) -> str:
    settings = load_settings(None, db=db)
    with connections.reader(db) as con:
        built = digests.build(con, settings, utcnow())
    return digests.render(digests.with_health(built, settings, configured_store(settings))).html


def shoot(url: str, target: Path, width: int, height: int, dark: bool, tmp: Path) -> None:
    with chromium(tmp, width=width, height=height) as driver:
        if dark:
            driver.execute_cdp_cmd(
                "Emulation.setEmulatedMedia",
                {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
            )
        driver.get(url)
        driver.save_screenshot(str(target))


if __name__ == "__main__":
    main()
