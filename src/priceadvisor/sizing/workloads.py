"""The one translation from a validated workload (a config profile or `estimate`'s options,
priceadvisor.workload) to what the sizing core sizes."""

from __future__ import annotations

import dataclasses

from priceadvisor.sizing.calibration import calibrated
from priceadvisor.sizing.estimate import Workload
from priceadvisor.workload import WorkloadSpec

# Fields of the sizing input that the spec does not carry under the same name.
_DERIVED = {"task", "arch", "concurrency", "scales"}
SIZED_FIELDS = tuple(f.name for f in dataclasses.fields(Workload) if f.name not in _DERIVED)


def to_workload(spec: WorkloadSpec) -> Workload:
    """The workload as the sizing core takes it, with the calibrated efficiency scales. Every
    field of the same name is copied (a config profile also carries monthly_output_tokens);
    the layout's tensor parallel degree is an argument of `estimate`, not of the workload."""
    declared = type(spec).model_fields
    given = {name: getattr(spec, name) for name in SIZED_FIELDS if name in declared}
    return calibrated(
        Workload(
            task=spec.task,
            arch=spec.arch(),
            concurrency=spec.resolved_concurrency(),
            **given,
        )
    )
