"""A decoder layer's matrices as vLLM slices them over tensor parallelism, and the rounding
its allocations follow: what the checkpoint layouts and LoRA share."""

from service.sizing.errors import require
from service.sizing.models import ModelSpec
from service.sizing.units import ceil_div

ALLOCATOR_BLOCK_BYTES = 512
"""PyTorch's caching allocator rounds every allocation up to 512 B (``kMinBlockSize``), and
``torch.cuda.memory_allocated`` (what vLLM's weights line measures) counts the rounded block: a
bitsandbytes quant state's 64-byte code table takes 512 B."""


def allocated(nbytes: int) -> int:
    return round_up(nbytes, ALLOCATOR_BLOCK_BYTES)


def embedding_params(model: ModelSpec) -> int:
    return model.vocab_size * model.hidden_size


def round_up(n: int, multiple: int) -> int:
    return ceil_div(n, multiple) * multiple


def linear_shapes(model: ModelSpec, tp: int) -> tuple[list[int], list[int]]:
    """One rank's checkpoint matrices of a dense decoder layer, as values: attention (q, k, v,
    o) and MLP (gate, up, down), each sliced by TP (vLLM's ``BitsAndBytesModelLoader`` shards
    before it quantises in flight; a pre-quantised checkpoint is refused at TP > 1)."""
    h, head = model.hidden_size, model.resolved_head_dim
    q = ceil_div(model.attention_heads, tp) * head
    kv = ceil_div(model.kv_heads, tp) * head
    i = ceil_div(model.intermediate_size, tp)
    return [h * q, h * kv, h * kv, q * h], [h * i, h * i, i * h]


def require_dense(model: ModelSpec, what: str, field: str) -> None:
    require(
        not model.is_moe and not model.kv_lora_rank and model.count_layers("linear") == 0,
        field,
        f"{what} is modelled for dense attention models (no experts, MLA or linear attention)",
    )


def mla_attention_params(model: ModelSpec) -> int:
    """One MLA layer's projections (DeepSeek: the no-RoPE query/key head and the value head
    are both ``head_dim``)."""
    h, heads, head = model.hidden_size, model.attention_heads, model.resolved_head_dim
    q_out = heads * (head + model.qk_rope_head_dim)
    q = h * model.q_lora_rank + model.q_lora_rank * q_out if model.q_lora_rank else h * q_out
    kv_a = h * (model.kv_lora_rank + model.qk_rope_head_dim)
    kv_b = model.kv_lora_rank * heads * 2 * head
    return q + kv_a + kv_b + heads * head * h


def attention_params(model: ModelSpec) -> int:
    if model.kv_lora_rank:
        return mla_attention_params(model)
    h, head = model.hidden_size, model.resolved_head_dim
    return 2 * h * model.attention_heads * head + 2 * h * model.kv_heads * head


def ties_embeddings(model: ModelSpec) -> bool:
    """Whether a dense model's LM head is its embedding (tie_word_embeddings): its parameters
    then hold one vocab x hidden matrix beside the decoder layers, not two."""
    attention, mlp = linear_shapes(model, 1)
    outside = model.total_params - model.layers * (sum(attention) + sum(mlp))
    return outside < 1.5 * embedding_params(model)


def untied_embedding_params(model: ModelSpec) -> int:
    """The input embedding's parameters when it is a table of its own beside the LM head (0 when
    tied: the one table is the head): a step gathers only its tokens' rows of it, where the
    head is multiplied whole. A dense model's tie is read off its parameter count
    (``ties_embeddings``); an MoE's is taken as untied, as in DeepSeek-V3, Qwen3's MoE, GLM-4.5,
    gpt-oss and Mixtral (their config.json: tie_word_embeddings false)."""
    if not model.is_moe and ties_embeddings(model):
        return 0
    return embedding_params(model)
