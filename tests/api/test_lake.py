"""The Python API on a lake: the config's `storage = "ducklake"` opens it, read-only, and the
offers are the rows `prices` lists from the same lake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import priceadvisor.api as pa
from priceadvisor.store import lake
from tests.conftest import cli


def test_offers_from_a_lake_are_what_prices_lists(
    capsys: pytest.CaptureFixture[str], pg_dsn: str, tmp_path: Path
) -> None:
    config = tmp_path / "lake.toml"
    config.write_text(
        'storage = "ducklake"\n'
        f'[lake]\ncatalog = "postgres:{pg_dsn}"\ndata_path = "{tmp_path / "data"}"\n'
    )
    code, _, err = cli(
        capsys, "--config", str(config), "fetch", "--offline", "--into-live", "-p", "azure"
    )
    assert code == 0, err
    code, out, err = cli(capsys, "--config", str(config), "prices", "--gpu", "A100", "-f", "json")
    assert code == 0, err
    expected = json.loads(out)

    data = pa.open(config=config)
    assert isinstance(data.store.where, lake.Lake)
    got = data.offers(gpu="A100")
    assert expected
    assert json.loads(json.dumps(got.records(), default=str)) == expected
    with pytest.raises(pa.PriceDataError, match="unknown GPU 'ZZ9000'"):
        data.offers(gpu="ZZ9000")
