"""Under a TPOT target the layout search's speed bound (`replica_speed_bound`) caps the batch at
what a decode step can meet (`tpot_batch_cap`) and, on a MoE model, reads the weights that
capped batch routes to: it must stay above every fitting layout's tokens/s, so that the bounded
search still chooses what sizing every layout chooses, with the same figures to the last bit."""

from __future__ import annotations

import dataclasses
import itertools

from priceadvisor import llm
from priceadvisor.gpu_specs import GpuSpec
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing import layoutbounds
from priceadvisor.sizing.estimate import Workload
from priceadvisor.sizing.memo import sizing_pass
from tests.sizing.reference import sizable_gpus

MODELS = ("mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v3", "llama-3.1-8b")
# (precision, TPOT target in ms, changes): targets that bind at small, middling and large batches.
TARGETS: tuple[tuple[str, float, dict[str, object]], ...] = (
    ("fp8", 12.0, {}),
    ("bf16", 40.0, {"engine": "vllm"}),
    ("fp8", 100.0, {"engine": "trt-llm", "concurrency": None}),
    ("bf16", 60.0, {"pipeline_parallel": 2, "concurrency": 512}),
)
COUNTS = (1, 2, 4, 8)


def _works() -> list[Workload]:
    works = []
    for model, (precision, target, changes) in itertools.product(MODELS, TARGETS):
        work = Workload("serve", llm.lookup(model), precision)
        works.append(dataclasses.replace(work, tpot_ms_max=target, **changes))  # type: ignore[arg-type]
    return works


def test_the_bound_under_a_tpot_target_is_above_every_fitting_layouts_speed() -> None:
    checked, binding = 0, 0
    for work in _works():
        with sizing_pass():
            for gpu, gpus in itertools.product(sizable_gpus(), COUNTS):
                if gpus % work.pipeline_parallel:
                    continue
                for tp, pp in sizing.layouts_in_pass(work, gpus):
                    figures = sizing.layout_figures(work, gpu, tp, pp)
                    bound = sizing.replica_speed_bound(work, gpu, tp, pp)
                    if figures is None or bound is None:
                        continue
                    speed = figures.batch / figures.step  # one replica's
                    assert speed <= bound, (work, gpu.id, gpus, tp, pp)
                    checked += 1
                    binding += figures.batch < _asked(figures.work, gpu, tp)
    assert checked > 2000 and binding > 200, (checked, binding)  # the targets bind here


def _asked(work: Workload, gpu: GpuSpec, tp: int) -> int:
    admitted = sizing.max_requests(work, sizing.kv_tokens(work, gpu, tp))
    return min(sizing.requested_batch(work, gpu, admitted), admitted)


def test_the_bounded_search_under_a_tpot_target_chooses_the_fastest_fitting_layout() -> None:
    chosen = 0
    for work in _works():
        with sizing_pass():
            for gpu, gpus in itertools.product(sizable_gpus(), COUNTS):
                if gpus % work.pipeline_parallel:
                    continue
                fitting = sizing.fitting_layouts(work, gpu, gpus)
                best = sizing.fastest_fitting(work, gpu, gpus)
                if not fitting:
                    assert best is None
                    continue
                want = fitting[0]
                assert best is not None
                got = (best.tp, best.work.pipeline_parallel, best.batch, repr(best.tokens_per_s))
                wanted = (want.tp, want.work.pipeline_parallel, want.batch, repr(want.tokens_per_s))
                assert got == wanted, (work, gpu.id, gpus)
                chosen += 1
    assert chosen > 500


def test_the_array_bounds_under_a_tpot_target_are_the_scalar_ones_to_the_last_bit() -> None:
    gpus = sizable_gpus()
    for work in _works():
        layouts = sorted({layout for n in COUNTS for layout in sizing.serving_layouts(work, n)})
        with sizing_pass():
            table = layoutbounds.speed_bounds(work, gpus, layouts)
        for gpu, (tp, pp) in itertools.product(gpus, layouts):
            got = table.rows[gpu.id][table.column[(tp, pp)]]
            staged = dataclasses.replace(work, pipeline_parallel=pp)
            want = sizing.replica_speed_bound(staged, gpu, tp, pp)  # no pass: from scratch
            assert repr(got) == repr(float("nan") if want is None else want), (work, gpu.id)


def test_routing_grows_concavely_where_the_bound_relies_on_it() -> None:
    """Every bundled MoE model qualifies, and its routed weights do grow concavely (second
    differences over micro-batches of 1..256 not positive beyond rounding); a dense model and
    a MoE whose stated active parameters exceed its total do not qualify."""
    catalog = llm.catalog()
    moe = [name for name in sorted(catalog) if catalog[name].is_moe]
    assert len(moe) >= 5
    for name in moe:
        work = Workload("serve", catalog[name], "bf16")
        assert sizing.routing_grows_concavely(work), name
        weights = [sizing.weights_read(work, m) for m in range(1, 257)]
        steps = [b - a for a, b in itertools.pairwise(weights)]
        rounding = weights[-1] * 1e-12
        assert all(later <= earlier + rounding for earlier, later in itertools.pairwise(steps))
        assert steps[0] > steps[-1] + rounding  # not flat: the test means something
        assert sizing.weights_read(work, 0.5) == sizing.weights_read(work, 1)
    assert not sizing.routing_grows_concavely(Workload("serve", llm.lookup("llama-3.1-8b"), "bf16"))
    stated = catalog[moe[0]]
    odd = dataclasses.replace(stated, active_params_b=stated.total_params / 1e9 * 2)
    assert not sizing.routing_grows_concavely(Workload("serve", odd, "bf16"))
