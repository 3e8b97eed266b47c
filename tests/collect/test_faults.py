"""Every provider against a real local server, with the faults live sources show injected
(errors, timeouts, slow and malformed bodies).

Each fault must end as a recorded failed (or partial) run with a clear error, the prices of the
previous good run intact, and the other providers of the same cycle unaffected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect import offline
from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import Settings
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.service.stores import configured_store
from tests.conftest import query
from tests.localserver import RecordingServer, local_settings, serving

# A provider disabled in its manifest has no good run to spoil (GMI Cloud: only 'from' floors).
PROVIDERS = sorted(p for p in REGISTRY if manifest(p).enabled_by_default)
PRICE_KEYS = {
    "retailPrice",
    "unitPrice",
    "price",
    "uninterruptablePrice",
    "minimumBidPrice",
    "dph_total",
    "dph_base",
    "min_bid",
    "value",
    "units",
    "nanos",
    "price_cents_per_hour",
    "rate",
    # wave 2
    "gpu_price_ethernet",
    "gpu_price_infiniband",
    "costPerHourCents",
    "providerCostPerHourCents",
    "hourly_price",
    "monthly_price",
    "hourly_cost",
    "hourly_cost_preemptible",
    "price_per_hour",
    "spot_price",
    "price_per_hr",
    # wave 4 (key-free JSON feeds)
    "price_per_gpu_hour",
    "price_per_node_hour",
    "onDemandPricePerHour",
    "spotPricePerHour",
    "med",
    "price_per_gpu_hour_usd",
    # wave 4
    "cost_per_hour",
    "priceHourly",
    "pricePerGpu",
    # LLM API token prices (OpenRouter: decimal strings of dollars per token)
    "prompt",
    "completion",
}
# Prices inside JSON that a page embeds in a JS string (Next.js flight data): keys written \"key\".
ESCAPED_PRICE_KEYS = re.compile(r'(\\"(?:hour|avg|month|year)\\":)-?[\d.]+')


@pytest.fixture(autouse=True)
def _gcp_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCP_API_KEY", "test-key")
    monkeypatch.setenv("VERDA_CREDENTIALS", "test-client:test-secret")


# A deadline no healthy fetch reaches on a loaded machine; only a hanging provider gets a short
# one, and its server answers well after it (HANG_DELAY).
DEADLINE, HANG_DEADLINE, HANG_DELAY = "60s", "4s", 10.0


def settings_for(
    servers: dict[str, RecordingServer], db: Path, hanging: tuple[str, ...] = ()
) -> Settings:
    short = {p: {"deadline": HANG_DEADLINE} for p in hanging}
    return local_settings(
        db, *servers.values(), http={"attempts": 2}, overrides=short, deadline=DEADLINE
    )


@contextmanager
def servers_for(providers: list[str]) -> Iterator[dict[str, RecordingServer]]:
    with ExitStack() as stack:
        yield {p: stack.enter_context(serving(p)) for p in providers}


def snapshot(db: Path, provider: str) -> list[tuple[Any, ...]]:
    if provider == "openrouter":  # token prices, not offers
        return query(db, "SELECT * FROM api_prices ORDER BY ALL")
    return query(
        db, "SELECT * EXCLUDE (last_seen) FROM offers WHERE provider = ? ORDER BY ALL", [provider]
    )


def fx_snapshot(db: Path) -> list[tuple[Any, ...]]:
    return query(db, "SELECT rate_date, currency, per_eur FROM fx_rates ORDER BY ALL")


def recorded_body(server: RecordingServer, path: str, query: dict[str, str], body: bytes) -> bytes:
    found = offline.find(server.provider, "POST" if body else "GET", path, query, body)
    return found.file.read_bytes() if found else b""


def rewrite_prices(content: bytes, value: float) -> bytes:
    """The recording with every price replaced by an absurd value."""
    try:
        document = json.loads(content)
    except ValueError:
        text = content.decode()
        text = re.sub(r"\$\s*[\d,]+(\.\d+)?", f"${value}", text)
        text = ESCAPED_PRICE_KEYS.sub(rf"\g<1>{value}", text)
        return re.sub(r"rate='[\d.]+'", f"rate='{value}'", text).encode()
    return json.dumps(_rewrite(document, value)).encode()


def _rewrite(node: Any, value: float) -> Any:
    if isinstance(node, dict):
        return {k: _absurd(k, v, value) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite(v, value) for v in node]
    return node


def _absurd(key: str, node: Any, value: float) -> Any:
    if key in PRICE_KEYS and isinstance(node, int | float | str) and not isinstance(node, bool):
        if isinstance(node, str):
            return str(value) if re.fullmatch(r"[\d.]+", node) else node
        return value
    return _rewrite(node, value)


Fault = Callable[[RecordingServer], None]


def status(code: int, headers: dict[str, str] | None = None) -> Fault:
    def install(server: RecordingServer) -> None:
        server.faults.append(lambda path, q: (code, headers or {}, b"error"))
        server.post_faults.append(lambda body: (code, headers or {}, b"error"))

    return install


def truncated(server: RecordingServer) -> None:
    def cut(path: str, q: dict[str, str], body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        full = recorded_body(server, path, q, body)
        return 200, {}, full[: len(full) // 2]

    server.faults.append(cut)
    server.post_faults.append(lambda body: cut(_post_path(server), {}, body))


def absurd(value: float) -> Fault:
    def install(server: RecordingServer) -> None:
        def answer(
            path: str, q: dict[str, str], body: bytes = b""
        ) -> tuple[int, dict[str, str], bytes]:
            return 200, {}, rewrite_prices(recorded_body(server, path, q, body), value)

        server.faults.append(answer)
        server.post_faults.append(lambda body: answer(_post_path(server), {}, body))

    return install


def _post_path(server: RecordingServer) -> str:
    return next(r.path for r in offline.recordings(server.provider) if r.method == "POST")


def hang(server: RecordingServer) -> None:
    server.delay = HANG_DELAY


FAULTS: dict[str, Fault] = {
    "http-500": status(500),
    "http-503-retry-after": status(503, {"Retry-After": "1"}),
    "http-429-retry-after": status(429, {"Retry-After": "1"}),
    "truncated-body": truncated,
    "zero-prices": absurd(0),
    "negative-prices": absurd(-5),
    "absurd-prices": absurd(1e6),
    "hang-past-deadline": hang,
}


def fault_cases() -> list[Any]:
    """Every provider × every fault. The default run takes every fault on one provider and one
    fault on every provider; the rest of the matrix is `slow` (CI runs it with -m slow)."""
    return [
        pytest.param(
            provider,
            fault,
            marks=() if provider == "azure" or fault == "http-500" else (pytest.mark.slow,),
            id=f"{provider}-{fault}",
        )
        for provider in PROVIDERS
        for fault in sorted(FAULTS)
    ]


@pytest.mark.parametrize(("provider", "fault"), fault_cases())
def test_fault_is_recorded_and_changes_nothing(provider: str, fault: str, db_path: Path) -> None:
    if provider == "ecb" and fault == "absurd-prices":
        pytest.skip("a rate of 1e6 per euro is a valid FX rate")
    with servers_for([provider, "ecb"]) as servers:
        hanging = (provider,) if fault == "hang-past-deadline" else ()
        settings = settings_for(servers, db_path, hanging)
        # FX first, so a provider priced in euros has its rate (ecb alone when it is the subject)
        run_cycle(settings, configured_store(settings), ["ecb"], False, lambda *_: None)
        [good] = run_cycle(settings, configured_store(settings), [provider], False, lambda *_: None)
        assert good.status is RunStatus.OK, good.error
        before = fx_snapshot(db_path) if provider == "ecb" else snapshot(db_path, provider)
        FAULTS[fault](servers[provider])
        [bad] = run_cycle(settings, configured_store(settings), [provider], False, lambda *_: None)
    assert bad.status in (RunStatus.FAILED, RunStatus.PARTIAL)
    assert bad.error and "\n" not in bad.error and len(bad.error) < 600
    assert bad.offers_closed == 0
    after = fx_snapshot(db_path) if provider == "ecb" else snapshot(db_path, provider)
    assert after == before
    con = duckdb.connect(str(db_path), read_only=True)
    runs = con.execute("SELECT status, error FROM fetch_runs ORDER BY run_id").fetchall()
    con.close()
    assert runs[-1] == (str(bad.status), bad.error)


def test_one_failing_provider_leaves_the_others_alone(db_path: Path) -> None:
    with servers_for(PROVIDERS) as servers:
        settings = settings_for(servers, db_path, hanging=("coreweave",))
        status(500)(servers["runpod"])
        hang(servers["coreweave"])
        summaries = {
            s.provider: s
            for s in run_cycle(
                settings, configured_store(settings), PROVIDERS, False, lambda *_: None
            )
        }
    assert summaries["runpod"].status is RunStatus.FAILED
    assert summaries["coreweave"].status is RunStatus.FAILED
    healthy = [p for p in PROVIDERS if p not in ("runpod", "coreweave")]
    assert all(summaries[p].status is RunStatus.OK for p in healthy)
    assert all(summaries[p].offers_seen > 0 for p in healthy)
