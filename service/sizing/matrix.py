"""The matrix: models x formats as rows, GPUs as columns, each cell the fewest GPUs.

Seed rule (part 7, "Which GPUs hold which models?"): each cell is the fewest GPUs that hold the
model with a modest working load: 8 conversations of 8,192 tokens (16-bit KV in the BF16 rows,
FP8 KV in the others), about 4 GB of overhead per GPU, each GPU filled to 90%. Splits come in
1, 2, 4 or 8; beyond one server, pipeline stages across servers ("or two servers"): the default
ladder /plan uses too (``service.sizing.parallel.default_splits``). Amber cells fit with under
5% to spare.
"""

from collections.abc import Sequence

import msgspec

from service.sizing.errors import require
from service.sizing.fewest import FewestGpus, FitCell
from service.sizing.formats import NumberFormat, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.plan import plan_if_splittable
from service.sizing.spare import AMBER_BELOW, Status
from service.sizing.weights import model_weight_bytes
from service.sizing.workload import Workload, validate_workload

SEED_MATRIX_WORKLOAD = Workload(capacity_basis="marketed")
"""The seeds' matrix: their workload on the marketed capacity basis, the default split ladder."""

MAX_MATRIX_CELLS = 4096
"""The most cells (models x formats x GPUs) one matrix computes: the whole shipped catalogue in
every format (17 x 13 x 11 = 2,431) fits; 64 x 16 x 64 = 65,536 cells took 40 s and 11.8 MB."""


class MatrixCell(msgspec.Struct, frozen=True, kw_only=True):
    gpu: str
    gpu_count: int | None
    """None: no allowed split holds it."""
    tensor_parallel: int | None
    pipeline_parallel: int | None
    spare_fraction: float | None
    spare_bytes: int | None
    status: Status
    amber: bool


class MatrixRow(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    weight_format: str
    kv_format: str
    weights_bytes: int
    cells: list[MatrixCell]


class Matrix(msgspec.Struct, frozen=True, kw_only=True):
    gpus: list[str]
    workload: Workload
    rows: list[MatrixRow]


def matrix_cell(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
) -> MatrixCell:
    """One cell by the full plan search (build_matrix computes the same in closed form)."""
    p = plan_if_splittable(model, gpu, weight_format, kv_format, workload)
    if p is None or not p.fits:
        return MatrixCell(
            gpu=gpu.slug,
            gpu_count=None,
            tensor_parallel=None,
            pipeline_parallel=None,
            spare_fraction=None,
            spare_bytes=None,
            status="does_not_fit",
            amber=False,
        )
    return MatrixCell(
        gpu=gpu.slug,
        gpu_count=p.gpu_count,
        tensor_parallel=p.tensor_parallel,
        pipeline_parallel=p.pipeline_parallel,
        spare_fraction=p.spare_fraction,
        spare_bytes=p.spare_bytes,
        status=p.status,
        amber=p.spare_fraction < AMBER_BELOW,
    )


def validate_size(models: int, formats: int, gpus: int) -> None:
    """At most MAX_MATRIX_CELLS cells; too many is an error naming the longest list."""
    cells = models * formats * gpus
    longest = max((models, "models"), (formats, "formats"), (gpus, "gpus"), key=lambda c: c[0])
    require(
        cells <= MAX_MATRIX_CELLS,
        longest[1],
        f"{models} models x {formats} formats x {gpus} GPUs is {cells:,} cells; a matrix holds "
        f"at most {MAX_MATRIX_CELLS:,} (name fewer {longest[1]})",
    )


def build_matrix(
    models: Sequence[ModelSpec],
    weight_formats: Sequence[NumberFormat],
    gpus: Sequence[GpuSpec],
    workload: Workload | None = None,
    kv_format: NumberFormat | None = None,
    cell_type: type[MatrixCell] = MatrixCell,
) -> Matrix:
    """Every (model, format) row against every GPU column; the KV format follows the seed's
    rule unless one is forced (``workload``: default the core's, on the driver basis).
    ``cell_type``: a subclass whose added fields have defaults (service.sizing.cost's
    CostedCell), built directly rather than copied from each MatrixCell afterwards."""
    workload = validate_workload(workload or Workload())
    validate_size(len(models), len(weight_formats), len(gpus))
    # Each cell in closed form (service.sizing.fewest), the same as matrix_cell's plan search.
    fewest = FewestGpus(workload)
    slugs = [g.slug for g in gpus]
    unfit = [_cell(cell_type, slug, None) for slug in slugs]  # frozen: shared by a column
    rows: list[MatrixRow] = []
    for model in models:
        for fmt in weight_formats:
            kv = kv_format or default_kv_format(fmt)
            fits = fewest.row(model, fmt, kv, gpus)
            rows.append(
                MatrixRow(
                    model=model.slug,
                    weight_format=fmt.slug,
                    kv_format=kv.slug,
                    weights_bytes=model_weight_bytes(model, fmt),
                    cells=[
                        unfit[i] if fit is None else _cell(cell_type, slug, fit)
                        for i, (slug, fit) in enumerate(zip(slugs, fits, strict=True))
                    ],
                )
            )
    return Matrix(gpus=slugs, workload=workload, rows=rows)


def _cell(cell_type: type[MatrixCell], gpu: str, fit: FitCell) -> MatrixCell:
    if fit is None:
        return cell_type(
            gpu=gpu,
            gpu_count=None,
            tensor_parallel=None,
            pipeline_parallel=None,
            spare_fraction=None,
            spare_bytes=None,
            status="does_not_fit",
            amber=False,
        )
    split, spare, fraction, status, amber = fit
    return cell_type(
        gpu=gpu,
        gpu_count=split.gpu_count,
        tensor_parallel=split.tensor_parallel,
        pipeline_parallel=split.pipeline_parallel,
        spare_fraction=fraction,
        spare_bytes=spare,
        status=status,
        amber=amber,
    )
