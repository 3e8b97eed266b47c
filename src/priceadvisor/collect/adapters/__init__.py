"""The explicit adapter registry: one module per provider, listed here by hand."""

from __future__ import annotations

from priceadvisor.collect.adapters.aws import AwsAdapter
from priceadvisor.collect.adapters.azure import AzureAdapter
from priceadvisor.collect.adapters.base import Adapter
from priceadvisor.collect.adapters.coreweave import CoreWeaveAdapter
from priceadvisor.collect.adapters.cudo import CudoAdapter
from priceadvisor.collect.adapters.ecb import EcbAdapter
from priceadvisor.collect.adapters.gcp import GcpAdapter
from priceadvisor.collect.adapters.hyperbolic import HyperbolicAdapter
from priceadvisor.collect.adapters.lambdalabs import LambdaAdapter
from priceadvisor.collect.adapters.oracle import OracleAdapter
from priceadvisor.collect.adapters.ovh import OvhAdapter
from priceadvisor.collect.adapters.runpod import RunPodAdapter
from priceadvisor.collect.adapters.scaleway import ScalewayAdapter
from priceadvisor.collect.adapters.tensordock import TensorDockAdapter
from priceadvisor.collect.adapters.vast import VastAdapter
from priceadvisor.collect.adapters.verda import VerdaAdapter
from priceadvisor.collect.adapters.voltagepark import VoltageParkAdapter
from priceadvisor.collect.adapters.vultr import VultrAdapter

REGISTRY: dict[str, type[Adapter]] = {
    AwsAdapter.id: AwsAdapter,
    AzureAdapter.id: AzureAdapter,
    CoreWeaveAdapter.id: CoreWeaveAdapter,
    CudoAdapter.id: CudoAdapter,
    EcbAdapter.id: EcbAdapter,
    GcpAdapter.id: GcpAdapter,
    HyperbolicAdapter.id: HyperbolicAdapter,
    LambdaAdapter.id: LambdaAdapter,
    OracleAdapter.id: OracleAdapter,
    OvhAdapter.id: OvhAdapter,
    RunPodAdapter.id: RunPodAdapter,
    ScalewayAdapter.id: ScalewayAdapter,
    TensorDockAdapter.id: TensorDockAdapter,
    VastAdapter.id: VastAdapter,
    VerdaAdapter.id: VerdaAdapter,
    VoltageParkAdapter.id: VoltageParkAdapter,
    VultrAdapter.id: VultrAdapter,
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
