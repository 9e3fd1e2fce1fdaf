"""Typed access to an untrusted config.json (every error names its key), and the pieces the
family parsers share: attention, the decoder, the layer types."""

from collections.abc import Callable, Mapping
from typing import Any

from service.sizing.errors import SizingError, require
from service.sizing.models import MAX_LAYERS, LayerType
from service.sizing.params import Architecture, Attention, Experts

FIELD = "config_json"
MAX_DIMENSION = 2**31 - 1
"""Bounds that keep an untrusted config's arithmetic small (no model comes near them)."""


class Config:
    """Typed access to a config dict; every error names the key."""

    def __init__(self, raw: Mapping[str, Any], path: str = FIELD) -> None:
        self.raw, self.path = raw, path

    def field(self, key: str) -> str:
        return f"{self.path}.{key}"

    def integer(
        self,
        key: str,
        default: int | None = None,
        *,
        minimum: int = 1,
        maximum: int = MAX_DIMENSION,
    ) -> int:
        value = self.raw.get(key, default)
        if value is None:
            raise SizingError(self.field(key), "is required for this model family")
        if isinstance(value, bool) or not isinstance(value, int):
            raise SizingError(self.field(key), f"must be an integer, got {value!r}")
        require(value >= minimum, self.field(key), f"must be at least {minimum}")
        require(
            value <= MAX_LAYERS if key == "num_hidden_layers" else value <= maximum,
            self.field(key),
            "is larger than any supported model",
        )
        return value

    def optional_integer(self, key: str) -> int | None:
        return None if self.raw.get(key) is None else self.integer(key, minimum=0)

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise SizingError(self.field(key), f"must be true or false, got {value!r}")
        return value

    def sub(self, key: str) -> "Config":
        value = self.raw.get(key)
        if not isinstance(value, Mapping):
            raise SizingError(self.field(key), "must be an object")
        return Config(value, self.field(key))


def head_dim(c: Config, hidden: int, heads: int) -> int:
    explicit = c.optional_integer("head_dim")
    if explicit:
        return explicit
    require(hidden % heads == 0, c.field("num_attention_heads"), "must divide hidden_size")
    return hidden // heads


def layer_types(
    c: Config, layers: int, default: Callable[[int], LayerType]
) -> tuple[LayerType, ...]:
    raw = c.raw.get("layer_types")
    if raw is None:
        return tuple(default(i) for i in range(layers))
    require(
        isinstance(raw, list) and len(raw) == layers,
        c.field("layer_types"),
        f"must list one type for each of the {layers} layers",
    )
    kinds: list[LayerType] = []
    for i, kind in enumerate(raw):
        if kind == "full_attention":
            kinds.append("full")
        elif kind == "sliding_attention":
            kinds.append("sliding")
        elif kind == "linear_attention":
            kinds.append("linear")
        else:
            raise SizingError(f"{c.field('layer_types')}[{i}]", f"unknown layer type {kind!r}")
    return tuple(kinds)


def uniform(kind: LayerType, layers: int) -> tuple[LayerType, ...]:
    return (kind,) * layers


def gqa(
    c: Config,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    sinks: bool = False,
) -> Attention:
    hidden, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    return Attention(
        heads=heads,
        kv_heads=c.integer("num_key_value_heads", heads),
        head_dim=head_dim(c, hidden, heads),
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        qk_norm=qk_norm,
        sinks=sinks,
    )


def base(
    c: Config,
    attention: Attention,
    *,
    tie: bool,
    experts: Experts | None = None,
    norms: int = 2,
) -> Architecture:
    return Architecture(
        layers=c.integer("num_hidden_layers"),
        hidden_size=c.integer("hidden_size"),
        vocab_size=c.integer("vocab_size"),
        intermediate_size=c.integer("intermediate_size"),
        attention=attention,
        experts=experts,
        tie_word_embeddings=c.flag("tie_word_embeddings", tie),
        norms_per_layer=norms,
    )


def uniform_window(c: Config, layers: int) -> tuple[tuple[LayerType, ...], int]:
    """Mistral/Mixtral: a non-null sliding_window applies to every layer."""
    window = c.optional_integer("sliding_window") or 0
    return uniform("sliding" if window else "full", layers), window
