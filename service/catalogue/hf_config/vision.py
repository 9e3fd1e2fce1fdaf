"""The vision towers of the supported multimodal wrappers, counted to the parameter."""

from service.catalogue.hf_config.reader import Config
from service.sizing.errors import require
from service.sizing.models import MAX_LAYERS


def siglip_vision_params(v: Config) -> int:
    """SigLIP vision tower (Gemma 3): patch embedding, position embedding, encoder layers with
    biased attention and MLP and two LayerNorms each, and the post-LayerNorm."""
    hidden, inter = v.integer("hidden_size"), v.integer("intermediate_size")
    patch, image, channels = (
        v.integer("patch_size"),
        v.integer("image_size"),
        v.integer("num_channels", 3),
    )
    positions = (image // patch) ** 2
    embeddings = channels * patch * patch * hidden + hidden + positions * hidden
    layer = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden
    require(
        not v.flag("vision_use_head", False),
        v.field("vision_use_head"),
        "a pooling head is not supported",
    )
    return embeddings + v.integer("num_hidden_layers") * layer + 2 * hidden


def qwen25_vision_params(v: Config) -> tuple[int, int]:
    """Qwen2.5-VL's vision transformer and patch merger as vLLM 0.8.2 builds them
    (``vllm/model_executor/models/qwen2_5_vl.py``; the same shapes as transformers'
    ``modeling_qwen2_5_vl``): (all parameters, those every TP rank holds whole).

    * ``Qwen2_5_VisionPatchEmbed``: an ``nn.Conv3d`` of in_channels x temporal_patch_size x
      patch_size^2 x hidden, no bias (a plain module: whole on every rank);
    * ``depth`` x ``Qwen2_5_VisionBlock``: two ``RMSNorm`` (whole); attention ``qkv``
      (``ColumnParallelLinear`` hidden -> 3 hidden, biased: weight and bias sliced) and ``proj``
      (``RowParallelLinear``, biased: weight sliced, the bias whole); ``Qwen2_5_VisionMLP``
      gate_proj and up_proj (``ColumnParallelLinear``) and down_proj (``RowParallelLinear``), all
      biased, at intermediate_size;
    * ``Qwen2_5_VisionPatchMerger``: ``ln_q`` RMSNorm over hidden (whole), then
      ``ColumnParallelLinear`` hidden x merge^2 -> the same and ``RowParallelLinear`` -> the
      decoder's out_hidden_size, both biased (the second's bias whole).

    vLLM's ``RowParallelLinear`` allocates its bias at the full output size on each rank;
    ``ColumnParallelLinear`` slices it with the output
    (``vllm/model_executor/layers/linear.py``)."""
    hidden, inter = v.integer("hidden_size"), v.integer("intermediate_size")
    channels = v.integer("in_channels", v.raw.get("in_chans", 3))
    patch, temporal = v.integer("patch_size"), v.integer("temporal_patch_size", 2)
    merged = hidden * v.integer("spatial_merge_size", 2) ** 2
    out = v.integer("out_hidden_size")
    depth = v.integer("depth", maximum=MAX_LAYERS)
    patch_embed = channels * temporal * patch * patch * hidden
    norms = 2 * hidden
    attention = (3 * hidden * hidden + 3 * hidden) + (hidden * hidden + hidden)
    mlp = 2 * (hidden * inter + inter) + (inter * hidden + hidden)
    merger = hidden + (merged * merged + merged) + (merged * out + out)
    total = patch_embed + depth * (norms + attention + mlp) + merger
    # Whole on each rank: the convolution, the norms and the row-parallel biases (proj and
    # down_proj in every block, the merger's second linear).
    whole = patch_embed + depth * (norms + 2 * hidden) + hidden + out
    return total, whole
