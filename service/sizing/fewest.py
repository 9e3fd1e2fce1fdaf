"""The fewest GPUs that hold a model, in closed form: what a matrix cell asks, without a plan.

``plan`` tries the allowed splits from the fewest GPUs up, lays the model out on each and stops
at the first whose busiest GPU has room to spare (seed step 4). The busiest GPU of a split needs
its share of the weights plus its stage's worst-case KV cache; that need depends on the model,
the formats, the workload and the split (tensor parallel x pipeline stages) only. A GPU enters
through its budget alone (capacity x utilisation - overhead, seed step 3). So the fewest GPUs
is the smallest allowed split whose need is at most the budget, and a matrix computes:

- per model and node size, the allowed splits (heads that divide, a layer for every stage);
- per model, KV format and split, the KV cache each stage's GPU holds (shared by the rows of
  every weight format with that KV format, and by every GPU with that node size);
- per row and split, the busiest GPU's need (weights share + its stage's KV);
- per GPU, its budget;

then each cell is a few comparisons. The answers are the plan search's, to the byte (a
property test compares them on random models, GPUs and formats).
"""

from collections.abc import Sequence

from service.sizing.errors import SizingError
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec, validate_gpu
from service.sizing.kv import stage_shapes
from service.sizing.models import ModelSpec, validate_model
from service.sizing.parallel import Split, split_for, split_problem
from service.sizing.plan import budget_bytes_per_gpu
from service.sizing.spare import AMBER_BELOW, Status, spare_status
from service.sizing.weights import model_weight_bytes
from service.sizing.workload import Workload, splits_for

FitCell = tuple[Split, int, float, Status, bool] | None
"""(split, spare bytes, spare fraction, status, amber) of the fewest GPUs that fit, or None."""


class FewestGpus:
    """One matrix's shared work, for one workload; the matrix asks ``cell`` row by row."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self._splits: dict[tuple[int, int], list[Split]] = {}
        self._kv: dict[tuple[int, int, int, int], tuple[tuple[int, ...], int]] = {}
        self._budgets: list[int] | None = None
        """Each GPU's budget (capacity x utilisation - overhead), once the first row checked
        them; the columns are the same for every row."""

    def splits(self, model: ModelSpec, gpu: GpuSpec) -> list[Split]:
        """The allowed splits of ``model`` on ``gpu``, fewest GPUs first (what plan tries)."""
        key = (id(model), gpu.gpus_per_node)  # the counts depend on the node size only
        found = self._splits.get(key)
        if found is None:
            found = []
            for count in sorted(set(splits_for(self.workload, gpu))):
                try:
                    split = split_for(count, gpu.gpus_per_node)
                except SizingError:  # more than a node, not a whole number of nodes
                    continue
                if split_problem(model, split) is None:
                    found.append(split)
            self._splits[key] = found
        return found

    def stage_kv(
        self, model: ModelSpec, kv_format: NumberFormat, split: Split
    ) -> tuple[tuple[int, ...], int]:
        """The worst-case KV cache on one GPU of each stage, and across all GPUs of the split."""
        tp, pp = split.tensor_parallel, split.pipeline_parallel
        key = (id(model), id(kv_format), tp, pp)  # both alive while the matrix is built
        found = self._kv.get(key)
        if found is None:
            w = self.workload
            per_stage = tuple(
                w.concurrency * shape.bytes_per_sequence(w.context_tokens)
                for shape in stage_shapes(model, kv_format, tp, pp)
            )
            found = self._kv[key] = (per_stage, sum(kv * tp for kv in per_stage))
        return found

    def row(
        self,
        model: ModelSpec,
        weight_format: NumberFormat,
        kv_format: NumberFormat,
        gpus: Sequence[GpuSpec],
    ) -> list[FitCell]:
        """One matrix row, a cell per GPU. The first row checks the model, then every GPU, as
        the first row's plans did; later rows check their model (remembered once checked)."""
        validate_model(model)
        if self._budgets is None:
            for gpu in gpus:
                validate_gpu(gpu)
            self._budgets = [budget_bytes_per_gpu(gpu, self.workload) for gpu in gpus]
        weights = model_weight_bytes(model, weight_format)
        # Per node size: the allowed splits, fewest GPUs first, and each one's (busiest GPU's
        # need, total KV), computed the first time a GPU of that node size asks for it.
        per_node: dict[int, tuple[list[Split], list[tuple[int, int] | None]]] = {}
        cells: list[FitCell] = []
        for gpu, budget in zip(gpus, self._budgets, strict=True):
            entry = per_node.get(gpu.gpus_per_node)
            if entry is None:
                ladder = self.splits(model, gpu)
                entry = per_node[gpu.gpus_per_node] = (ladder, [None] * len(ladder))
            ladder, needs = entry
            cell: FitCell = None
            for i, split in enumerate(ladder):
                need = needs[i]
                if need is None:
                    need = needs[i] = self._need(model, kv_format, split, weights)
                if need[0] <= budget:
                    cell = _fit(split, budget, weights, *need)
                    break
            cells.append(cell)
        return cells

    def _need(
        self, model: ModelSpec, kv_format: NumberFormat, split: Split, weights: int
    ) -> tuple[int, int]:
        """The busiest GPU's weights share plus its stage's KV (as plan's layout measures it:
        the first GPU of each stage holds the stage's largest share), and the total KV."""
        per_stage, total_kv = self.stage_kv(model, kv_format, split)
        base, extra = divmod(weights, split.gpu_count)
        tp = split.tensor_parallel
        need = max(
            base + (1 if stage * tp < extra else 0) + kv for stage, kv in enumerate(per_stage)
        )
        return need, total_kv


def _fit(split: Split, budget: int, weights: int, need: int, total_kv: int) -> FitCell:
    """The cell's figures when the busiest GPU fits; None when the totals still do not (the
    plan's status is does_not_fit and plan stops there)."""
    total_budget = budget * split.gpu_count
    spare = total_budget - weights - total_kv
    fraction = spare / total_budget if total_budget > 0 else -1.0
    busiest = budget - need
    busiest_fraction = busiest / budget if budget > 0 else -1.0
    status = spare_status(min(fraction, busiest_fraction))
    if status == "does_not_fit":
        return None
    return split, spare, fraction, status, fraction < AMBER_BELOW
