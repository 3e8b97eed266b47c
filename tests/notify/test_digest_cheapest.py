"""The digest's GPU table names who offers each GPU cheapest now: that provider's offer is the
price the row shows (a derived price, which is never "cheapest", is not named for it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.cli.app import main
from priceadvisor.config import load_settings
from priceadvisor.notify import digest
from priceadvisor.records import utcnow
from priceadvisor.store import connections

SHOWN_PRICE_SQL = """
SELECT min(price_gpu_hour_usd), count(*) FROM offers
WHERE provider = ? AND region = ? AND gpu_model = ? AND pricing = ?
  AND price_origin = 'published' AND flag IS NULL
"""


def test_the_provider_named_cheapest_offers_the_price_shown(db_path: Path, tmp_path: Path) -> None:
    # Oracle's recording: published on-demand prices and spot prices derived from them (a
    # documented discount); its P100's derived spot price is below GCP's published ones.
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "oracle", "-p", "gcp"])
    config = tmp_path / "c.toml"
    config.write_text('[digest]\ngpus = ["P100-16GB"]\n')  # the reader's GPUs first
    with connections.reader(db_path) as con:
        built = digest.build(con, load_settings(config), utcnow())
        rows = built.gpu_prices
        named = [
            con.execute(
                SHOWN_PRICE_SQL, [r["provider"], r["region"], r["gpu_model"], r["pricing"]]
            ).fetchone()
            for r in rows
        ]
        derived = con.execute("SELECT count(*) FROM offers WHERE price_origin = 'derived'")
        assert derived.fetchone() != (0,)
    assert rows and [n[0] for n in named] == [r["now_price"] for r in rows]
