"""The explicit adapter registry: one module per provider, listed here by hand."""

from __future__ import annotations

from priceadvisor.collect.adapters.aws import AwsAdapter
from priceadvisor.collect.adapters.azure import AzureAdapter
from priceadvisor.collect.adapters.base import Adapter
from priceadvisor.collect.adapters.coreweave import CoreWeaveAdapter
from priceadvisor.collect.adapters.ecb import EcbAdapter
from priceadvisor.collect.adapters.gcp import GcpAdapter
from priceadvisor.collect.adapters.lambdalabs import LambdaAdapter
from priceadvisor.collect.adapters.oracle import OracleAdapter
from priceadvisor.collect.adapters.runpod import RunPodAdapter
from priceadvisor.collect.adapters.vast import VastAdapter

REGISTRY: dict[str, type[Adapter]] = {
    AwsAdapter.id: AwsAdapter,
    AzureAdapter.id: AzureAdapter,
    CoreWeaveAdapter.id: CoreWeaveAdapter,
    EcbAdapter.id: EcbAdapter,
    GcpAdapter.id: GcpAdapter,
    LambdaAdapter.id: LambdaAdapter,
    OracleAdapter.id: OracleAdapter,
    RunPodAdapter.id: RunPodAdapter,
    VastAdapter.id: VastAdapter,
}


class UnknownProviderError(KeyError):
    def __str__(self) -> str:
        from priceadvisor.manifest import manifest  # noqa: PLC0415 - only for this message

        known = ", ".join(
            p + (" (FX)" if manifest(p).kind == "fx" else "") for p in sorted(REGISTRY)
        )
        return f"unknown provider {self.args[0]!r} (known: {known})"


def adapter_class(provider_id: str) -> type[Adapter]:
    try:
        return REGISTRY[provider_id]
    except KeyError:
        raise UnknownProviderError(provider_id) from None
