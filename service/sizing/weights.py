"""Weights: parameters times bytes per parameter.

Seed rule (part 7, "How big is a model in memory?"): the size of the weights is the number of
parameters times the bytes used to store each one. Use total parameters, even for MoE models
(step 1 of the six-step method); active parameters only set the bytes read per token.
"""

from service.sizing.formats import NumberFormat
from service.sizing.models import ModelSpec


def weight_bytes(params: int, fmt: NumberFormat) -> int:
    """Bytes to hold ``params`` parameters in ``fmt`` (scales included), rounded up."""
    return fmt.bytes_for(params)


def model_weight_bytes(model: ModelSpec, fmt: NumberFormat) -> int:
    """Bytes the whole model occupies: TOTAL parameters, every expert included."""
    return weight_bytes(model.total_params, fmt)


def active_weight_bytes(model: ModelSpec, fmt: NumberFormat) -> int:
    """Bytes one token reads (part 20's speed check): active parameters for MoE, all for dense."""
    return weight_bytes(model.resolved_active_params, fmt)
