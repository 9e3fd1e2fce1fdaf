"""Weights as vLLM's Marlin kernels hold 4-bit checkpoints: AWQ and GPTQ linear layers, and
compressed-tensors W4A16 experts."""

from service.sizing.errors import require
from service.sizing.models import ModelSpec
from service.sizing.units import ceil_div

INT4_BYTES: dict[str, tuple[int, int]] = {"gptq": (66, 128), "awq": (133, 256)}
"""Bytes per quantised weight as vLLM's Marlin kernels hold an AWQ / GPTQ 4-bit checkpoint
(``awq_marlin.py``, ``gptq_marlin.py``, ``utils/marlin_utils.py``), groups of 128: the packed
weight (0.5 B) and an fp16 scale per group (2 / 128 B); GPTQ's symmetric zero points are
dropped after repacking, AWQ keeps a 4-bit zero point per group (0.5 / 128 B): 0.515625 and
0.51953125 B. Embeddings, the LM head, norms and routers stay 16-bit. Checked: Qwen2.5-7B
GPTQ-Int4 on vLLM 0.8.5 logs 5.1811 GiB against 5.1722 (a blog run whose BF16 and FP8 loads
match to 0.0001 GiB). Not modelled: Machete on Hopper in newer releases keeps AWQ's zero points
as a 16-bit tensor (0.53125 B), and recent Qwen2.5-7B-AWQ logs print about 0.09 GiB more than
this layout (5.29 against 5.20 GiB), likely allocator rounding."""


W4A16_GROUP_SIZES = (32, 64, 128)


def w4a16_expert_bytes(model: ModelSpec, tensor_parallel: int, group_size: int) -> int:
    """One rank's routed experts from a compressed-tensors W4A16 checkpoint (symmetric int4 in
    groups, no zero points) as ``CompressedTensorsWNA16MarlinMoEMethod`` holds them: packed
    4-bit weights (0.5 B) and a 16-bit scale per ``group_size`` values, the repacking for
    Marlin keeping the size. Everything else (attention, linear attention, shared experts,
    routers, embeddings: the recipes' ignore list) stays 16-bit. Qwen3-Next-80B at TP 2, groups
    of 32: 48 x 512 x 3 x 2,048 x 256 x (0.5 + 2 / 32) B = 21,743,271,936 B."""
    require(
        group_size in W4A16_GROUP_SIZES,
        "int4_group_size",
        f"must be one of {', '.join(map(str, W4A16_GROUP_SIZES))}",
    )
    values = model.layers * model.experts * 3 * model.hidden_size
    values *= ceil_div(model.intermediate_size, tensor_parallel)
    return values // 2 + values * 2 // group_size
