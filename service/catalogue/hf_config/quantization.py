"""A quantised checkpoint's storage (quantization_config): the bytes of each layout and the
weight format to plan with."""

import msgspec

from service.catalogue.hf_config.reader import FIELD, Config
from service.sizing.errors import SizingError, require
from service.sizing.formats import FORMATS, NumberFormat
from service.sizing.params import Architecture, LinearKind, linear_weights
from service.sizing.vllm.bitsandbytes import bnb_skipped_layers
from service.sizing.weights import CheckpointBytes, QuantScheme

ALL_LINEAR_BUT_ROUTER: frozenset[LinearKind] = frozenset(
    {"attention", "dense_ffn", "routed_expert", "shared_expert"}
)


def quant_scheme(c: Config, arch: Architecture) -> tuple[QuantScheme, NumberFormat, list[str]]:
    """The checkpoint's storage and the closest weight format for planning."""
    raw = c.raw.get("quantization_config")
    if raw is None:
        return QuantScheme(), FORMATS["bf16"], []
    q = c.sub("quantization_config")
    method = q.raw.get("quant_method")
    if method == "mxfp4":
        # gpt-oss keeps attention, router, embeddings and head in BF16 (modules_to_not_convert).
        scheme = QuantScheme(
            method="mxfp4", quantized=frozenset({"routed_expert"}), value_format=FORMATS["mxfp4"]
        )
        return scheme, FORMATS["mxfp4"], ["experts stored in MXFP4 (4.25 bits); the rest BF16"]
    if method == "fp8":
        block = q.raw.get("weight_block_size")
        if block is not None:
            require(
                isinstance(block, list)
                and len(block) == 2
                and all(isinstance(b, int) and b > 0 for b in block),
                q.field("weight_block_size"),
                "must be two positive integers",
            )
        quantized = ALL_LINEAR_BUT_ROUTER
        scheme = QuantScheme(
            method="fp8",
            quantized=quantized,
            value_format=FORMATS["fp8"],
            block=(block[0], block[1]) if block else None,
        )
        note = "linear layers stored in FP8" + (
            f" with one FP32 scale per {block[0]}x{block[1]} block" if block else ""
        )
        return scheme, FORMATS["fp8"], [note + "; router, norms, embeddings and head BF16"]
    if method in ("gptq", "awq"):
        bits = q.integer("bits")
        require(bits == 4, q.field("bits"), "only 4-bit GPTQ/AWQ is supported")
        group = q.integer("group_size", 128)
        fmt = msgspec.structs.replace(FORMATS[f"{method}-int4"], block_size=group)
        quantized = ALL_LINEAR_BUT_ROUTER
        scheme = QuantScheme(method="int4", quantized=quantized, value_format=fmt)
        return scheme, FORMATS[f"{method}-int4"], [f"{method.upper()} int4, group {group}"]
    if method == "bitsandbytes":
        require(not q.raw.get("load_in_8bit"), q.field("load_in_8bit"), "only 4-bit bitsandbytes")
        kind = q.raw.get("bnb_4bit_quant_type", "fp4")
        require(kind in ("nf4", "fp4"), q.field("bnb_4bit_quant_type"), "must be nf4 or fp4")
        # One absmax per 64 values: a uint8 with an fp32 per 256 of them when double-quantised,
        # else an fp32 (bitsandbytes quantize_4bit, blocksize 64).
        fmt = FORMATS["nf4"]
        double = bool(q.raw.get("bnb_4bit_use_double_quant"))
        if not double:
            fmt = msgspec.structs.replace(
                fmt, scale_bits=32, super_block_size=0, super_scale_bits=0
            )
        scheme = QuantScheme(
            method="int4", quantized=frozenset({"attention", "dense_ffn"}), value_format=fmt
        )
        note = f"bitsandbytes {kind} 4-bit, " + (
            "double-quantised block scales" if double else "fp32 block scales"
        )
        return scheme, FORMATS["nf4"], [note + "; embeddings, head and norms 16-bit"]
    raise SizingError(
        q.field("quant_method"),
        f"unsupported quantization {method!r}; supported: mxfp4, fp8, gptq, awq, bitsandbytes",
    )


def bnb_skipped(
    c: Config, arch: Architecture, scheme: QuantScheme, stored: CheckpointBytes
) -> tuple[CheckpointBytes, list[str]]:
    """A bitsandbytes checkpoint's llm_int8_skip_modules layers (Unsloth's dynamic 4-bit keeps
    some attention and MLP blocks 16-bit): their matrices move from the quantised bytes to the
    16-bit ones."""
    q = c.raw.get("quantization_config") or {}
    if q.get("quant_method") != "bitsandbytes" or scheme.value_format is None:
        return stored, []
    skips = q.get("llm_int8_skip_modules") or []
    require(
        isinstance(skips, list) and all(isinstance(x, str) for x in skips),
        f"{FIELD}.quantization_config.llm_int8_skip_modules",
        "must be a list of module names",
    )
    attention, mlp = bnb_skipped_layers(skips, arch.layers)
    if not attention and not mlp:
        return stored, []
    fmt, per = scheme.value_format, scheme.unquantized_bytes_per_param
    moved_params = moved_bytes = 0
    for w in linear_weights(arch):
        layers = len(attention) if w.kind == "attention" else len(mlp)
        if w.kind not in ("attention", "dense_ffn") or not layers:
            continue
        params = w.out_features * w.in_features * layers
        moved_params += params
        moved_bytes += fmt.bytes_for(w.out_features * w.in_features) * layers
    stored = msgspec.structs.replace(
        stored,
        total_bytes=stored.total_bytes - moved_bytes + moved_params * per,
        quantized_params=stored.quantized_params - moved_params,
        quantized_bytes=stored.quantized_bytes - moved_bytes,
        unquantized_params=stored.unquantized_params + moved_params,
        unquantized_bytes=stored.unquantized_bytes + moved_params * per,
    )
    note = (
        f"llm_int8_skip_modules keeps {len(attention)} attention and {len(mlp)} MLP blocks "
        f"16-bit ({moved_params:,} parameters)"
    )
    return stored, [note]
