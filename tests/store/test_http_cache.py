from __future__ import annotations

from pathlib import Path

from priceadvisor.collect.fetch import run_cycle
from priceadvisor.records import CachedBody, RunStatus
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from priceadvisor.store.http_cache import load_validators, save_validators
from tests.localserver import local_settings, serving


def test_renewed_validators_survive_a_new_connection(db_path: Path) -> None:
    with connections.writer(db_path) as con:
        cache = load_validators(con, "oracle")
        assert cache.entries == {}
        cache.put("https://x/products", CachedBody(b'{"items": []}', '"v1"', None))
        assert save_validators(con, cache) == 1
        assert save_validators(con, cache) == 0  # nothing renewed since
    with connections.writer(db_path) as con:
        again = load_validators(con, "oracle")
        other = load_validators(con, "azure")
    assert again.entries == {"https://x/products": CachedBody(b'{"items": []}', '"v1"', None)}
    assert other.entries == {}


def test_a_second_process_sends_the_stored_etag_and_reuses_the_body(db_path: Path) -> None:
    """Each run_cycle starts cold in memory, as a CLI fetch or a restarted daemon does."""
    with serving("oracle") as server:
        server.etag = '"list-2026-11-14"'
        settings = local_settings(db_path, server)
        [first] = run_cycle(
            settings, configured_store(settings), ["oracle"], False, lambda *_: None
        )
        [second] = run_cycle(
            settings, configured_store(settings), ["oracle"], False, lambda *_: None
        )
    assert first.status is second.status is RunStatus.OK
    assert server.not_modified == 1
    assert (second.offers_seen, second.offers_changed, second.offers_closed) == (32, 0, 0)
