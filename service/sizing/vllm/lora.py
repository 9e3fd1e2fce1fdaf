"""vLLM's LoRA slots (--enable-lora): the adapter weights it pre-allocates in every wrapped
layer, the extra vocabulary of models with LoRA embedding modules, and the Punica metadata."""

from typing import Literal, get_args

import msgspec

from service.sizing.errors import require
from service.sizing.models import ModelSpec
from service.sizing.units import GiB, ceil_div
from service.sizing.vllm.config import EngineConfig, model_dtype_bytes
from service.sizing.vllm.defaults import EngineDefaults
from service.sizing.vllm.shapes import allocated, require_dense, round_up, ties_embeddings

LoraRank = Literal[8, 16, 32, 64, 128, 256, 320, 512]
LORA_RANKS: tuple[int, ...] = get_args(LoraRank)
"""LoRAConfig's accepted max_lora_rank values (``possible_max_ranks``)."""
LORA_VOCAB_PADDING = 256
"""LoRAConfig.lora_vocab_padding_size: the LM head of a LoRA-enabled model is padded to it."""
VOCAB_PADDING = 64
"""DEFAULT_VOCAB_PADDING_SIZE of ``VocabParallelEmbedding``."""


def validate_lora(model: ModelSpec, config: EngineConfig) -> None:
    require_dense(model, "LoRA slot memory", "enable_lora")
    require(config.max_loras >= 1, "max_loras", "must be at least 1")
    require(
        config.max_lora_rank in LORA_RANKS,
        "max_lora_rank",
        f"must be one of {', '.join(map(str, LORA_RANKS))}",
    )
    require(config.lora_extra_vocab_size >= 0, "lora_extra_vocab_size", "must not be negative")


def lora_layer_bytes(model: ModelSpec, config: EngineConfig) -> int:
    """One decoder layer's LoRA slots on one rank (vllm/lora/layers.py, ``create_lora_weights``
    of the wrappers ``from_layer`` puts on qkv_proj, o_proj, gate_up_proj and down_proj): per
    slot and per packed slice, ``lora_a_stacked`` (max_loras, 1, max_lora_rank, in) and
    ``lora_b_stacked`` (max_loras, 1, out, max_lora_rank) of zeros in the LoRA dtype (the model's,
    lora_dtype auto). Column-parallel layers (qkv, gate_up) slice B's output by TP and keep A
    whole; row-parallel ones (o, down) slice A's input and keep B whole (fully_sharded_loras
    off, the default). Llama 3.1 8B at rank 32: qkv 3 x 32 x 4,096 + 32 x 6,144, o 2 x 32 x
    4,096, gate_up 2 x 32 x 4,096 + 2 x 32 x 14,336, down 32 x 14,336 + 32 x 4,096 = 2,621,440
    values, 5,242,880 B a slot."""
    h, head, r = model.hidden_size, model.resolved_head_dim, config.max_lora_rank
    tp = config.tensor_parallel_size
    q = ceil_div(model.attention_heads, tp) * head
    kv = ceil_div(model.kv_heads, tp) * head
    i = ceil_div(model.intermediate_size, tp)
    values = (
        3 * r * h
        + r * (q + 2 * kv)  # qkv_proj: A per slice over the hidden size, B per slice
        + r * q
        + h * r  # o_proj
        + 2 * r * h
        + 2 * i * r  # gate_up_proj
        + r * i
        + h * r  # down_proj
    )
    return values * config.max_loras * model_dtype_bytes(config)


def lora_vocab_rows(model: ModelSpec, config: EngineConfig) -> tuple[int, int]:
    """(embedding rows, LM-head rows) a LoRA-enabled model with LoRA embedding modules adds to
    the plain vocabulary (Llama's ``LlamaModel``: vocab_size + lora_extra_vocab_size x max_loras,
    ``VocabParallelEmbedding`` padding each part to 64; ``LlamaForCausalLM``: an LM head of
    vocab_size + lora_extra_vocab_size rows padded to lora_vocab_padding_size, 256). Llama 3.1
    8B: 128,256 + 256 = 128,512 rows each, 256 more. A tied head is the embedding."""
    if not (config.enable_lora and config.lora_embeddings):
        return 0, 0
    v, extra = model.vocab_size, config.lora_extra_vocab_size
    embedding = round_up(round_up(v, VOCAB_PADDING) + extra * config.max_loras, VOCAB_PADDING)
    head = 0
    if not ties_embeddings(model):
        head = round_up(round_up(v, LORA_VOCAB_PADDING) + extra, LORA_VOCAB_PADDING) - v
    return embedding - v, head


def lora_embedding_bytes(model: ModelSpec, config: EngineConfig) -> tuple[int, int]:
    """(embedding wrapper, logits wrapper) LoRA slots for a model with LoRA embedding modules
    (vllm/lora/layers.py): ``VocabParallelEmbeddingWithLoRA`` holds ``embeddings_tensors``
    (max_loras, extra, hidden), ``lora_a_stacked`` (max_loras, vocab + extra, rank) and
    ``lora_b_stacked`` (max_loras, 1, hidden, rank); ``LogitsProcessorWithLoRA`` holds
    ``lora_a_stacked`` (max_loras, 1, rank, hidden), ``lora_b_stacked`` (max_loras, 1, vocab +
    extra padded to 256, rank) and ``embeddings_tensors`` (max_loras, extra, hidden), all whole on
    every rank, in the LoRA dtype."""
    if not config.lora_embeddings:
        return 0, 0
    v, h, r = model.vocab_size, model.hidden_size, config.max_lora_rank
    extra, slots, b = config.lora_extra_vocab_size, config.max_loras, model_dtype_bytes(config)
    embedding = slots * (extra * h + (v + extra) * r + h * r) * b
    logits = slots * (r * h + round_up(v + extra, LORA_VOCAB_PADDING) * r + extra * h) * b
    return embedding, logits


def punica_metadata_bytes(config: EngineConfig, defaults: EngineDefaults) -> int:
    """The LoRA manager's per-batch index buffers on each rank (vllm/lora/punica_wrapper/
    punica_base.py ``PunicaWrapperBase.__init__``: token_lora_indices, sampler_indices,
    sampler_indices_padded and the 2-row embeddings_indices, int64 of max_num_batched_tokens;
    seq_start_locs, seq_lengths and lora_indices_per_batch, int64 of max_num_seqs;
    punica_gpu.py ``PunicaWrapperGPU`` adds two ``LoRAKernelMeta`` (token and prompt mapping:
    two int32 vectors of the tokens, or of the sequences, and three of max_loras + 1 or 2)),
    each an allocator block. 0.10's layout; releases before the long-context LoRA removal had
    one more int64 token vector."""
    t, seqs, slots = defaults.max_num_batched_tokens, defaults.max_num_seqs, config.max_loras
    base = 3 * allocated(8 * t) + allocated(16 * t) + 3 * allocated(8 * seqs)

    def meta(n: int) -> int:
        small = 2 * allocated(4 * (slots + 1)) + allocated(4 * (slots + 2))
        return 2 * allocated(4 * n) + small

    return base + meta(t) + meta(seqs)


class LoraBytes(msgspec.Struct, frozen=True, kw_only=True):
    """What LoRA adds to a rank's weights (the weights line counts all of it from 0.8; before,
    only the extra vocabulary, the slots coming out of the memory left outside the budget)."""

    vocab_first: int = 0
    """The extra embedding rows, on the first stage."""
    vocab_last: int = 0
    """The extra LM-head rows, on the last stage."""
    layer: int = 0
    """Slots in each decoder layer (``lora_layer_bytes``)."""
    embedding: int = 0
    """Slots of the embedding wrapper, on the first stage."""
    logits: int = 0
    """Slots of the logits wrapper, on the last stage."""
    punica: int = 0
    """The Punica index buffers, on every rank."""


def lora_bytes(
    model: ModelSpec, config: EngineConfig, defaults: EngineDefaults
) -> tuple[LoraBytes, str | None]:
    """LoRA's bytes on a rank and the note that says where they are counted. The extra
    vocabulary rows are part of the model (built with the LoRA config, so in the weights line in
    every release); the adapter slots are counted where the release measures them
    (``ReleaseRules.lora_in_weights``)."""
    if not config.enable_lora:
        return LoraBytes(), None
    validate_lora(model, config)
    tp = config.tensor_parallel_size
    rows_embedding, rows_head = lora_vocab_rows(model, config)
    vocab_first = ceil_div(rows_embedding * model.hidden_size * 2, tp)
    vocab_last = ceil_div(rows_head * model.hidden_size * 2, tp)
    layer_slots = lora_layer_bytes(model, config)
    emb_slots, logit_slots = lora_embedding_bytes(model, config)
    indices = punica_metadata_bytes(config, defaults)
    slots = layer_slots * model.layers + emb_slots + logit_slots + indices
    where = (
        ", counted in the weights (vLLM 0.8 and later)"
        if config.lora_in_weights
        else " that this release allocates after measuring the weights: they are in neither "
        "the weights line nor the KV budget, and come out of the memory "
        "gpu_memory_utilization leaves free"
    )
    note = (
        f"LoRA: {config.max_loras} slot(s) of rank {config.max_lora_rank} take "
        f"{round(slots / GiB, 2)} GiB a rank{where}."
    )
    if not config.lora_in_weights:
        return LoraBytes(vocab_first=vocab_first, vocab_last=vocab_last), note
    return LoraBytes(
        vocab_first=vocab_first,
        vocab_last=vocab_last,
        layer=layer_slots,
        embedding=emb_slots,
        logits=logit_slots,
        punica=indices,
    ), note
