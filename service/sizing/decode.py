"""What one decode step reads: the one definition /plan's decode ceiling and /offload share.

Seed rule (part 7, "Weights worked out for five real models"): active parameters set the
bandwidth per token. A decode step of B running sequences reads:

* every weight of a dense model, once for the whole batch;
* for a mixture of experts, the weights every token runs (attention, router, norms, shared
  experts, dense layers, LM head: ``active_params`` less the routed experts' share) plus the
  routed experts the batch touches. With top-k routing over E experts and routing assumed
  uniform and independent per token, the expected number of distinct experts one layer runs
  for B tokens is E x (1 - (1 - k/E)^B): k at B = 1, tending to E as B grows;
* each running sequence's KV cache once.

The bytes read out of any part of the weights (one GPU's slice, the resident part, the
offloaded part) are that part's bytes x read parameters / total parameters: every byte is
assumed to be a cross-section of the model (its experts in the model's own proportion).
"""

import math

import msgspec

from service.sizing.models import ModelSpec
from service.sizing.units import ceil_div

UNIFORM_ROUTING = (
    "routing is assumed uniform and independent per token: a batch of B reads "
    "E x (1 - (1 - k/E)^B) distinct experts per layer (k at B = 1)"
)
"""The assumption, in the words the answers' warnings use."""


class DecodeStep(msgspec.Struct, frozen=True, kw_only=True):
    """One step of ``batch_size`` sequences, one token each, on one GPU."""

    batch_size: int
    experts_read_per_layer: float
    """Distinct routed experts a layer runs for the batch (0 for a dense model)."""
    read_params: int
    """Parameters the step reads, whole model (``active_params`` at batch 1)."""
    weight_bytes_per_gpu: int
    kv_bytes_per_gpu: int
    """batch_size x one sequence's KV slice on this GPU."""
    bytes_per_gpu: int


def distinct_experts(experts: int, top_k: int, batch_size: float) -> float:
    """Expected distinct experts of ``experts`` that ``batch_size`` tokens routed top-``top_k``
    touch in one layer, under uniform routing: E x (1 - (1 - k/E)^B); 0 for a dense model or no
    tokens. ``batch_size`` may be a mean (the serving model's tokens a step)."""
    if experts <= 0 or batch_size <= 0:
        return 0.0
    return float(experts * (1 - (1 - top_k / experts) ** batch_size))


def routed_expert_params(model: ModelSpec) -> int:
    """All routed experts' parameters: MoE layers x E x 3 x hidden x expert width (gate, up,
    down; the catalogue's ``intermediate_size`` is one expert's width). Where that is unknown
    or does not fit the parameter counts, the gap total - active taken as the E - k unused
    experts: (total - active) x E / (E - k), at most active x E / k (so that the weights every
    token reads, active - routed x k / E, are never negative)."""
    if not model.is_moe:
        return 0
    e, k = model.experts, model.experts_per_token
    counted = (model.layers - model.dense_layers) * e * 3 * model.hidden_size
    counted *= model.intermediate_size
    active = model.resolved_active_params
    if 0 < counted <= model.total_params and counted * k <= active * e:
        return counted
    if e == k:
        return 0
    gap = (model.total_params - active) * e // (e - k)
    return min(model.total_params, gap, active * e // k)


def read_params(model: ModelSpec, batch_size: int) -> int:
    """Parameters a step of ``batch_size`` sequences reads (the module's rule)."""
    active = model.resolved_active_params
    if not model.is_moe or batch_size == 1:
        return active  # one token runs top-k experts: the active parameters, exactly
    routed = routed_expert_params(model)
    e, k = model.experts, model.experts_per_token
    always = active - routed * k // e
    touched = distinct_experts(e, k, batch_size) / e
    return min(model.total_params, always + math.ceil(routed * touched))


def bytes_read(model: ModelSpec, weight_bytes: int, batch_size: int) -> int:
    """Bytes a step reads out of ``weight_bytes`` of the model's weights (a cross-section)."""
    return ceil_div(weight_bytes * read_params(model, batch_size), model.total_params)


def decode_step(
    model: ModelSpec,
    weight_bytes_per_gpu: int,
    kv_bytes_per_sequence_per_gpu: int,
    batch_size: int,
) -> DecodeStep:
    """The bytes one GPU reads in a step, holding ``weight_bytes_per_gpu`` of the weights."""
    weights = bytes_read(model, weight_bytes_per_gpu, batch_size)
    kv = batch_size * kv_bytes_per_sequence_per_gpu
    experts = (
        distinct_experts(model.experts, model.experts_per_token, batch_size)
        if model.is_moe
        else 0.0
    )
    return DecodeStep(
        batch_size=batch_size,
        experts_read_per_layer=experts,
        read_params=read_params(model, batch_size),
        weight_bytes_per_gpu=weights,
        kv_bytes_per_gpu=kv,
        bytes_per_gpu=weights + kv,
    )
