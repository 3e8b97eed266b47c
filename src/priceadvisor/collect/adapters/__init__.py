"""The explicit adapter registry: one module per provider, listed here by hand."""

from __future__ import annotations

from priceadvisor.collect.adapters.akash import AkashAdapter
from priceadvisor.collect.adapters.aws import AwsAdapter
from priceadvisor.collect.adapters.azure import AzureAdapter
from priceadvisor.collect.adapters.base import Adapter
from priceadvisor.collect.adapters.civo import CivoAdapter
from priceadvisor.collect.adapters.cloudrift import CloudRiftAdapter
from priceadvisor.collect.adapters.coreweave import CoreWeaveAdapter
from priceadvisor.collect.adapters.crusoe import CrusoeAdapter
from priceadvisor.collect.adapters.cudo import CudoAdapter
from priceadvisor.collect.adapters.daytona import DaytonaAdapter
from priceadvisor.collect.adapters.digitalocean import DigitalOceanAdapter
from priceadvisor.collect.adapters.ecb import EcbAdapter
from priceadvisor.collect.adapters.fal import FalAdapter
from priceadvisor.collect.adapters.gcp import GcpAdapter
from priceadvisor.collect.adapters.gmicloud import GmiCloudAdapter
from priceadvisor.collect.adapters.gpuai import GpuAiAdapter
from priceadvisor.collect.adapters.hotaisle import HotAisleAdapter
from priceadvisor.collect.adapters.hyperbolic import HyperbolicAdapter
from priceadvisor.collect.adapters.hyperstack import HyperstackAdapter
from priceadvisor.collect.adapters.lambdalabs import LambdaAdapter
from priceadvisor.collect.adapters.latitude import LatitudeAdapter
from priceadvisor.collect.adapters.lium import LiumAdapter
from priceadvisor.collect.adapters.massedcompute import MassedComputeAdapter
from priceadvisor.collect.adapters.modal import ModalAdapter
from priceadvisor.collect.adapters.nebius import NebiusAdapter
from priceadvisor.collect.adapters.openrouter import OpenRouterAdapter
from priceadvisor.collect.adapters.oracle import OracleAdapter
from priceadvisor.collect.adapters.ovh import OvhAdapter
from priceadvisor.collect.adapters.packetai import PacketAiAdapter
from priceadvisor.collect.adapters.quantacloud import QuantaCloudAdapter
from priceadvisor.collect.adapters.runpod import RunPodAdapter
from priceadvisor.collect.adapters.scaleway import ScalewayAdapter
from priceadvisor.collect.adapters.sesterce import SesterceAdapter
from priceadvisor.collect.adapters.sfcompute import SfComputeAdapter
from priceadvisor.collect.adapters.tensordock import TensorDockAdapter
from priceadvisor.collect.adapters.tensorpool import TensorPoolAdapter
from priceadvisor.collect.adapters.together import TogetherAdapter
from priceadvisor.collect.adapters.vast import VastAdapter
from priceadvisor.collect.adapters.verda import VerdaAdapter
from priceadvisor.collect.adapters.voltagepark import VoltageParkAdapter
from priceadvisor.collect.adapters.vultr import VultrAdapter

REGISTRY: dict[str, type[Adapter]] = {
    AkashAdapter.id: AkashAdapter,
    AwsAdapter.id: AwsAdapter,
    AzureAdapter.id: AzureAdapter,
    CivoAdapter.id: CivoAdapter,
    CloudRiftAdapter.id: CloudRiftAdapter,
    CoreWeaveAdapter.id: CoreWeaveAdapter,
    CrusoeAdapter.id: CrusoeAdapter,
    CudoAdapter.id: CudoAdapter,
    DaytonaAdapter.id: DaytonaAdapter,
    DigitalOceanAdapter.id: DigitalOceanAdapter,
    EcbAdapter.id: EcbAdapter,
    OpenRouterAdapter.id: OpenRouterAdapter,
    FalAdapter.id: FalAdapter,
    GcpAdapter.id: GcpAdapter,
    GpuAiAdapter.id: GpuAiAdapter,
    GmiCloudAdapter.id: GmiCloudAdapter,
    HotAisleAdapter.id: HotAisleAdapter,
    HyperbolicAdapter.id: HyperbolicAdapter,
    HyperstackAdapter.id: HyperstackAdapter,
    LambdaAdapter.id: LambdaAdapter,
    LatitudeAdapter.id: LatitudeAdapter,
    LiumAdapter.id: LiumAdapter,
    MassedComputeAdapter.id: MassedComputeAdapter,
    ModalAdapter.id: ModalAdapter,
    NebiusAdapter.id: NebiusAdapter,
    OracleAdapter.id: OracleAdapter,
    OvhAdapter.id: OvhAdapter,
    PacketAiAdapter.id: PacketAiAdapter,
    QuantaCloudAdapter.id: QuantaCloudAdapter,
    RunPodAdapter.id: RunPodAdapter,
    ScalewayAdapter.id: ScalewayAdapter,
    SesterceAdapter.id: SesterceAdapter,
    SfComputeAdapter.id: SfComputeAdapter,
    TensorDockAdapter.id: TensorDockAdapter,
    TensorPoolAdapter.id: TensorPoolAdapter,
    TogetherAdapter.id: TogetherAdapter,
    VastAdapter.id: VastAdapter,
    VerdaAdapter.id: VerdaAdapter,
    VoltageParkAdapter.id: VoltageParkAdapter,
    VultrAdapter.id: VultrAdapter,
}


_KIND_NOTE = {"fx": " (FX)", "api": " (API prices)"}


class UnknownProviderError(KeyError):
    def __str__(self) -> str:
        from priceadvisor.manifest import manifest  # noqa: PLC0415 - only for this message

        known = ", ".join(p + _KIND_NOTE.get(manifest(p).kind, "") for p in sorted(REGISTRY))
        return f"unknown provider {self.args[0]!r} (known: {known})"


def adapter_class(provider_id: str) -> type[Adapter]:
    try:
        return REGISTRY[provider_id]
    except KeyError:
        raise UnknownProviderError(provider_id) from None
