"""Workload profiles from the config, turned into what the sizing core sizes."""

from __future__ import annotations

from priceadvisor.config import WorkloadProfile
from priceadvisor.sizing.calibration import calibrated
from priceadvisor.sizing.estimate import Workload


def to_workload(profile: WorkloadProfile) -> Workload:
    """The profile as the sizing core takes it, with the calibrated efficiency scales."""
    return calibrated(
        Workload(
            task=profile.task,
            arch=profile.arch(),
            precision=profile.precision,
            input_tokens=profile.input_tokens,
            output_tokens=profile.output_tokens,
            concurrency=profile.concurrency,
            ttft_ms_max=profile.ttft_ms_max,
            tpot_ms_max=profile.tpot_ms_max,
            monthly_output_tokens=profile.monthly_output_tokens,
            train_tokens=profile.train_tokens,
            seq_len=profile.seq_len,
        )
    )
