"""The explicit adapter registry: one module per provider, listed here by hand."""

from __future__ import annotations

from priceadvisor.adapters.aws import AwsAdapter
from priceadvisor.adapters.azure import AzureAdapter
from priceadvisor.adapters.base import Adapter
from priceadvisor.adapters.coreweave import CoreWeaveAdapter
from priceadvisor.adapters.ecb import EcbAdapter
from priceadvisor.adapters.gcp import GcpAdapter
from priceadvisor.adapters.lambdalabs import LambdaAdapter
from priceadvisor.adapters.oracle import OracleAdapter
from priceadvisor.adapters.runpod import RunPodAdapter
from priceadvisor.adapters.vast import VastAdapter

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
        known = ", ".join(sorted(REGISTRY))
        return f"unknown provider {self.args[0]!r} (known: {known})"


def adapter_class(provider_id: str) -> type[Adapter]:
    try:
        return REGISTRY[provider_id]
    except KeyError:
        raise UnknownProviderError(provider_id) from None
