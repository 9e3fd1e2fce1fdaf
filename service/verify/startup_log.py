"""Read a vLLM start-up log (and optionally nvidia-smi CSV): pure text in, numbers out.

Understands the V1 lines ("Model loading took X GiB", "Available KV cache memory: X GiB",
"GPU KV cache size: N tokens", "Maximum concurrency for L tokens per request: Xx"), the V0
memory-profiling summaries (one-line and multi-line), "# GPU blocks: N", the engine's echoed
configuration (tensor_parallel_size=, max_seq_len=, quantization=, kv_cache_dtype=, ...), the
non-default args dict, and the start-up failures ("No available memory for the cache blocks",
"... KV cache is needed, which is larger than the available KV cache memory",
"The model's max seq len (N) is larger than the maximum number of tokens ...").
"""

import re
from collections.abc import Callable
from typing import Literal

import msgspec

from service.sizing.errors import SizingError
from service.verify.needles import as_lines, lines_holding, needles
from service.verify.numbers import (
    NUMBER,
    NvidiaSmiGpu,
    gib_bytes,
    parse_nvidia_smi,
    to_float,
    to_int,
)

EXPECTED_LINES = (
    "Model loading took X GiB",
    "Available KV cache memory: X GiB",
    "GPU KV cache size: N tokens",
    "Maximum concurrency for L tokens per request: X.XXx",
    "# GPU blocks: N",
    "model weights take X GiB; non_torch_memory takes Y GiB; PyTorch activation peak memory "
    "takes Z GiB; the rest of the memory reserved for KV Cache is W GiB",
    "No available memory for the cache blocks / ... KV cache is needed, which is larger than "
    "the available KV cache memory",
)


class StartupLog(msgspec.Struct, frozen=True, kw_only=True):
    """What the log says; None where it is silent. Memory in bytes (from the logged GiB)."""

    vllm_version: str | None = None
    model: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    enforce_eager: bool | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    block_size: int | None = None
    cpu_offload_bytes: int | None = None
    """--cpu-offload-gb (GiB in the flag) in bytes."""
    enable_lora: bool | None = None
    """True when the log shows LoRA on: --enable-lora / 'enable_lora': True, or the LoRA
    manager's "Using PunicaWrapperGPU" line."""
    max_loras: int | None = None
    max_lora_rank: int | None = None
    compile_cache: Literal["cold", "warm"] | None = None
    """warm: "Directly load the compiled graph(s) ... from the cache"; cold: "Compiling a
    graph for ..." (torch.compile ran during this start)."""
    model_runner: Literal["v2"] | None = None
    """"Using V2 Model Runner" (0.23 on); its absence proves nothing (a trimmed log)."""
    unsloth_version: str | None = None
    """The Unsloth release whose fast_inference built the engine ("Unsloth 2025.8.4: Fast Qwen2
    patching"); it patches some of vLLM's loading (``bitsandbytes.unsloth_keeps_nested_absmax``)."""
    total_gpu_memory_bytes: int | None = None
    weights_bytes: int | None = None
    activation_bytes: int | None = None
    non_torch_bytes: int | None = None
    kv_cache_bytes: int | None = None
    kv_cache_tokens: int | None = None
    gpu_blocks: int | None = None
    concurrency_tokens: int | None = None
    max_concurrency: float | None = None
    cuda_graph_bytes: int | None = None
    failed: bool = False
    failure: str | None = None
    nvidia_smi: list[NvidiaSmiGpu] = msgspec.field(default_factory=list)
    matched_lines: int = 0


SHORTEST_LINE_CHARS = 4
"""The shortest line any pattern below reads ("-q x"): shorter ones (blank lines above all)
are skipped before the sixty searches each line otherwise costs (a 1 MiB paste of empty lines
took over three seconds)."""
_PATTERNS: dict[str, re.Pattern[str]] = {
    "weights": re.compile(
        r"(?:Model loading took|Loading model weights took) " + NUMBER + r" ?Gi?B", re.I
    ),
    "weights_v0": re.compile(r"model weights take\s+" + NUMBER + r" ?GiB", re.I),
    "non_torch": re.compile(r"non_torch_memory(?: takes)?\s*(?:=\s*)?" + NUMBER + r" ?GiB", re.I),
    "activation": re.compile(r"PyTorch activation peak memory(?: takes)?\s+" + NUMBER + r" ?GiB"),
    "kv_rest": re.compile(r"the rest of the memory reserved for KV Cache is " + NUMBER + r" ?GiB"),
    "kv_v0_line": re.compile(r"available_kv_cache_memory\s+" + NUMBER + r" ?GiB"),
    "kv_size_v0": re.compile(r"kv_cache_size=" + NUMBER + r"GiB"),
    "kv_available": re.compile(r"Available KV cache memory: " + NUMBER + r" GiB"),
    "kv_tokens": re.compile(r"GPU KV cache size: " + NUMBER + r" tokens"),
    "blocks": re.compile(r"(?:# )?(?:GPU|cuda) blocks: " + NUMBER, re.I),
    "concurrency": re.compile(
        r"Maximum concurrency for " + NUMBER + r" tokens per request: " + NUMBER + r"x"
    ),
    "total": re.compile(r"total_gpu_memory\s*(?:[=(]\s*)?" + NUMBER + r" ?GiB"),
    "util_v0": re.compile(r"gpu_memory_utilization\s*(?:[=(]\s*)?" + NUMBER),
    "graphs": re.compile(r"Graph capturing finished in [\d.]+ secs?, took " + NUMBER + r" GiB"),
    # "vLLM API server version 0.9.2", "LLM engine (v0.19.0) with config", and the 0.19+
    # banner "... █ ▀▄▀ █  version 0.19.1".
    "version": re.compile(
        r"(?:vLLM API server version|LLM engine \(v|[█▀▄]\s+version)\s*v?(\d[\w.+-]*?)(?:[)\s,]|$)"
    ),
    "unsloth": re.compile(r"Unsloth (\d{4}\.\d+\.\d+): Fast \w+ patching"),
    "no_memory": re.compile(r"No available memory for the cache blocks"),
    "too_small": re.compile(
        rf"max seq len \({NUMBER}\), \({NUMBER} GiB KV cache is needed, which is larger "
        rf"than the available KV cache memory \({NUMBER} GiB\)"
    ),
    "v0_too_small": re.compile(
        r"The model's max seq len \(" + NUMBER + r"\) is larger than the maximum number of tokens"
    ),
}

_READS: dict[str, tuple[str, Callable[[str], object]]] = {
    "weights": ("weights_bytes", gib_bytes),
    "weights_v0": ("weights_bytes", gib_bytes),
    "non_torch": ("non_torch_bytes", gib_bytes),
    "activation": ("activation_bytes", gib_bytes),
    "kv_rest": ("kv_cache_bytes", gib_bytes),
    "kv_v0_line": ("kv_cache_bytes", gib_bytes),
    "kv_size_v0": ("kv_cache_bytes", gib_bytes),
    "kv_available": ("kv_cache_bytes", gib_bytes),
    "kv_tokens": ("kv_cache_tokens", to_int),
    "blocks": ("gpu_blocks", to_int),
    "total": ("total_gpu_memory_bytes", gib_bytes),
    "util_v0": ("gpu_memory_utilization", to_float),
    "graphs": ("cuda_graph_bytes", gib_bytes),
    "version": ("vllm_version", str),
    "unsloth": ("unsloth_version", str),
}
"""The patterns whose one number (or word) sets one field; the first line that says it wins."""

_CONFIG: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"\bmodel='([^']+)'"),
    "tensor_parallel_size": re.compile(r"tensor_parallel_size['\"]?\s*[=:]\s*(\d+)"),
    "pipeline_parallel_size": re.compile(r"pipeline_parallel_size['\"]?\s*[=:]\s*(\d+)"),
    "max_model_len": re.compile(r"(?:max_seq_len|max_model_len)['\"]?\s*[=:]\s*(\d+)"),
    "gpu_memory_utilization": re.compile(r"'gpu_memory_utilization':\s*([\d.]+)"),
    "quantization": re.compile(r"quantization=([\w-]+)"),
    "kv_cache_dtype": re.compile(r"kv_cache_dtype['\"]?\s*[=:]\s*'?([\w-]+)"),
    "dtype": re.compile(r"\bdtype=torch\.(\w+)"),
    "enforce_eager": re.compile(r"enforce_eager['\"]?\s*[=:]\s*(True|False)"),
    "max_num_batched_tokens": re.compile(r"max_num_batched_tokens['\"]?\s*[=:]\s*(\d+)"),
    "max_num_seqs": re.compile(r"max_num_seqs['\"]?\s*[=:]\s*(\d+)"),
    "block_size": re.compile(r"(?:'block_size':\s*|--block-size[= ])(\d+)"),
    "cpu_offload_bytes": re.compile(r"'cpu_offload_gb':\s*([\d.]+)"),
    "enable_lora": re.compile(r"enable_lora['\"]?\s*[=:]\s*(True|False)"),
    "max_loras": re.compile(r"\bmax_loras['\"]?\s*[=:]\s*(\d+)"),
    "max_lora_rank": re.compile(r"max_lora_rank['\"]?\s*[=:]\s*(\d+)"),
}
_PUNICA = re.compile(r"Using PunicaWrapper")
"""The LoRA manager picks its kernels' wrapper (punica_selector.py) only with LoRA on."""
_V2_RUNNER = re.compile(r"Using V2 Model Runner")
_W4A16_EXPERTS = re.compile(r"CompressedTensorsWNA16(?:Marlin)?MoEMethod")
"""compressed-tensors W4A16 experts: the checkpoint's quantization= echo says only
compressed-tensors, which the engine would otherwise take for FP8."""
_COMPILE_WARM = re.compile(r"Directly load the compiled graph")
_COMPILE_COLD = re.compile(r"Compiling a graph for")
_FLAGS: dict[str, re.Pattern[str]] = {
    "gpu_memory_utilization": re.compile(r"--gpu[-_]memory[-_]utilization[= ]([\d.]+)"),
    "tensor_parallel_size": re.compile(r"(?:--tensor[-_]parallel[-_]size|-tp)[= ](\d+)"),
    "pipeline_parallel_size": re.compile(r"(?<!\S)(?:--pipeline[-_]parallel[-_]size|-pp)[= ](\d+)"),
    "quantization": re.compile(r"(?<!\S)(?:--quantization|-q)[= ]([\w-]+)"),
    "max_model_len": re.compile(r"--max[-_]model[-_]len[= ](\d+)"),
    "max_num_batched_tokens": re.compile(r"--max[-_]num[-_]batched[-_]tokens[= ](\d+)"),
    "max_num_seqs": re.compile(r"--max[-_]num[-_]seqs[= ](\d+)"),
    "kv_cache_dtype": re.compile(r"--kv[-_]cache[-_]dtype[= ]([\w-]+)"),
    "cpu_offload_bytes": re.compile(r"--cpu[-_]offload[-_]gb[= ]([\d.]+)"),
    "enable_lora": re.compile(r"--enable[-_]lora()(?![-_\w])"),
    "max_loras": re.compile(r"--max[-_]loras[= ](\d+)"),
    "max_lora_rank": re.compile(r"--max[-_]lora[-_]rank[= ](\d+)"),
    "model": re.compile(r"vllm serve ([\w./-]+)"),
}


_MISC: dict[str, re.Pattern[str]] = {
    "w4a16_experts": _W4A16_EXPERTS,
    "punica": _PUNICA,
    "v2_runner": _V2_RUNNER,
    "compile_warm": _COMPILE_WARM,
    "compile_cold": _COMPILE_COLD,
}
_NEEDS: dict[str, tuple[str, ...]] = {
    # _PATTERNS (the re.I ones are compared casefolded, as re.I compares)
    "weights": ("model loading took", "model weights took"),
    "weights_v0": ("model weights take",),
    "non_torch": ("non_torch_memory",),
    "activation": ("PyTorch activation peak memory",),
    "kv_rest": ("the rest of the memory reserved for KV Cache is ",),
    "kv_v0_line": ("available_kv_cache_memory",),
    "kv_size_v0": ("kv_cache_size=",),
    "kv_available": ("Available KV cache memory: ",),
    "kv_tokens": ("GPU KV cache size: ",),
    "blocks": (" blocks: ",),
    "concurrency": ("Maximum concurrency for ",),
    "total": ("total_gpu_memory",),
    "util_v0": ("gpu_memory_utilization",),
    "graphs": ("Graph capturing finished in ",),
    "version": ("version", "LLM engine (v"),
    "unsloth": ("Unsloth ",),
    "no_memory": ("No available memory for the cache blocks",),
    "too_small": ("max seq len (",),
    "v0_too_small": ("The model's max seq len (",),
    # _CONFIG (the flags of _FLAGS: _FLAG_NEEDS and _FLAG_MARK below)
    "model": ("model='",),
    "tensor_parallel_size": ("tensor_parallel_size",),
    "pipeline_parallel_size": ("pipeline_parallel_size",),
    "max_model_len": ("max_seq_len", "max_model_len"),
    "gpu_memory_utilization": ("'gpu_memory_utilization'",),
    "quantization": ("quantization",),
    "kv_cache_dtype": ("kv_cache_dtype",),
    "dtype": ("dtype=torch.",),
    "enforce_eager": ("enforce_eager",),
    "max_num_batched_tokens": ("max_num_batched_tokens",),
    "max_num_seqs": ("max_num_seqs",),
    "block_size": ("'block_size':", "--block-size"),
    "cpu_offload_bytes": ("'cpu_offload_gb'",),
    "enable_lora": ("enable_lora",),
    "max_loras": ("max_loras",),
    "max_lora_rank": ("max_lora_rank",),
    # _MISC
    "w4a16_experts": ("CompressedTensorsWNA16",),
    "punica": ("Using PunicaWrapper",),
    "v2_runner": ("Using V2 Model Runner",),
    "compile_warm": ("Directly load the compiled graph",),
    "compile_cold": ("Compiling a graph for",),
}
"""For every pattern, texts it cannot match without (one of them at least; for a name that
both _CONFIG and _FLAGS read, enough for either spelling). parse_startup_log finds them in the
whole log with str.find, then searches a line only with the patterns whose text it holds: most
lines of a pasted log hold none, and about sixty regex searches a line were most of a 200-line
log's parse (a dozen patterns start with no fixed text, so the engine tries every position)."""

_FLAG_NEEDS: dict[str, tuple[str, ...]] = {"model": ("vllm serve ",)}
_FLAG_MARK = re.compile(r"--[a-z]|-(?:tp|pp|q)[= ]")
"""Every other flag pattern starts with "--" and a letter (--gpu-memory-utilization) or is one
of the short forms -tp, -pp, -q followed by "=" or a space: one regex pass marks the lines that
hold one, where a dozen short texts ("-q", "-tp") would each scan the whole log slowly."""
_GROUPS = (("p", _PATTERNS), ("s", _CONFIG), ("f", _FLAGS), ("x", _MISC))


_ANCHORS = ("z", "'", "K", "M", "T", "q", "v", "max_", "model weights t")
"""What several needed texts share, found with one scan of the log instead of one scan per
text (each costs about 10 us over a 33,000-character paste): a character most lines of a
start-up log lack ("z" is in nine texts, from "quantization" to "tensor_parallel_size", and
in 3 of the benchmark's 200 lines; "'" in the echoed config only; "K" in "KV cache"), found as
fast as memchr, or "max_" (six texts), or "model weights t" (the weights' lines of V1 and V0:
a long text is found faster than "took "). A text takes the first anchor it holds; a text that
holds none is scanned alone."""
_NEEDLES = needles(
    (
        (f"{group}:{name}", bool(pattern.flags & re.IGNORECASE), texts)
        for group, patterns in _GROUPS
        for name, pattern in patterns.items()
        if (texts := (_FLAG_NEEDS if group == "f" else _NEEDS).get(name))
    ),
    _ANCHORS,
)
_MARKS = [(_FLAG_MARK, frozenset(f"f:{name}" for name in _FLAGS if name not in _FLAG_NEEDS))]


_SETTINGS = [
    *((f"s:{n}", n, p) for n, p in _CONFIG.items()),
    *((f"f:{n}", n, p) for n, p in _FLAGS.items()),
]
_KEYED_PATTERNS = [(f"p:{name}", name, pattern) for name, pattern in _PATTERNS.items()]
"""The patterns with the keys their lines are marked with (built once, not per line)."""
_ORDER = {
    key: rank
    for rank, key in enumerate(
        [
            *(key for key, _, _ in _KEYED_PATTERNS),
            *(key for key, _, _ in _SETTINGS),
            *(f"x:{name}" for name in _MISC),
        ]
    )
}
"""The order a line is searched in (lines' patterns, then settings, echoed before flags, then
the rest): where two keys of one line set the same field, the first wins, as the log's first
line that says it does."""
_BY_KEY = {key: (name, pattern) for key, name, pattern in (*_KEYED_PATTERNS, *_SETTINGS)}
_MISC_BY_KEY = {f"x:{name}": pattern for name, pattern in _MISC.items()}


def _read_line(name: str, m: re.Match[str], line: str, found: dict[str, object]) -> None:
    """What a _PATTERNS match on ``line`` sets (the first line that says it wins)."""
    g = m.groups()
    if name in _READS:
        field, read = _READS[name]
        found.setdefault(field, read(g[0]))
    elif name == "concurrency":
        found.setdefault("concurrency_tokens", to_int(g[0]))
        found.setdefault("max_concurrency", to_float(g[1]))
    elif name == "no_memory":
        found["failed"] = True
        found.setdefault("failure", "No available memory for the cache blocks")
    elif name == "too_small":
        found["failed"] = True
        found.setdefault("max_model_len", to_int(g[0]))
        found.setdefault("kv_cache_bytes", gib_bytes(g[2]))
        found.setdefault(
            "failure",
            f"{g[1]} GiB of KV cache needed for one request of {g[0]} tokens, {g[2]} GiB available",
        )
    elif name == "v0_too_small":
        found["failed"] = True
        found.setdefault("failure", line.strip())


def _read_setting(name: str, value: str, found: dict[str, object]) -> None:
    """A setting the engine echoes or a flag sets (its first mention wins: callers skip a
    setting already found)."""
    if name in ("model", "quantization", "kv_cache_dtype", "dtype"):
        found[name] = None if value == "None" else value
    elif name == "enforce_eager":
        found[name] = value == "True"
    elif name == "enable_lora":
        found[name] = value != "False"  # the bare --enable-lora flag reads ""
    elif name == "gpu_memory_utilization":
        found[name] = to_float(value)
    elif name == "cpu_offload_bytes":
        found[name] = gib_bytes(value)
    else:
        found[name] = to_int(value)


def parse_startup_log(text: str, nvidia_smi: str | None = None) -> StartupLog:
    """Parse ``text``; raise SizingError (field ``log``) naming the expected lines when it holds
    none of them. A line is searched only with the patterns whose needed text it holds
    (_candidates), in _ORDER."""
    found: dict[str, object] = {}
    matched = 0
    w4a16_experts = False
    text = as_lines(text)
    candidates = _candidates(text)
    for start in sorted(candidates):  # in the log's order: the first line that says it wins
        end = text.find("\n", start)
        line = text[start:end] if end >= 0 else text[start:]
        if len(line) < SHORTEST_LINE_CHARS:  # too short for any line read here
            continue
        here = candidates[start]
        hit = False
        for key in sorted(here, key=_ORDER.__getitem__) if len(here) > 1 else here:
            kind = key[0]
            if kind == "x":
                if not _MISC_BY_KEY[key].search(line):
                    continue
                if key == "x:w4a16_experts":
                    w4a16_experts = True
                elif key == "x:punica":
                    found["enable_lora"] = True
                elif key == "x:v2_runner":
                    found["model_runner"] = "v2"
                elif key == "x:compile_warm":
                    found["compile_cache"] = "warm"
                else:  # a graph compiled: cold, unless this or an earlier line loaded one
                    found.setdefault("compile_cache", "cold")
                continue
            name, pattern = _BY_KEY[key]
            if kind != "p" and name in found:
                continue  # the first line that says it wins: later ones are not read
            m = pattern.search(line)
            if not m:
                continue
            if kind == "p":
                hit = True
                _read_line(name, m, line, found)
            else:
                _read_setting(name, m.group(1), found)
        matched += hit
    if w4a16_experts and found.get("quantization") == "compressed-tensors":
        found["quantization"] = "w4a16-experts"
    if matched == 0:
        raise SizingError(
            "log",
            "no vLLM start-up line found; expected at least one of: "
            + "; ".join(f'"{e}"' for e in EXPECTED_LINES),
        )
    smi = parse_nvidia_smi(nvidia_smi) if nvidia_smi else []
    if "kv_cache_bytes" in found and int(found["kv_cache_bytes"]) <= 0:  # type: ignore[call-overload]
        found["failed"] = True
        found.setdefault("failure", "No memory left for the KV cache")
    return msgspec.convert(
        {**found, "nvidia_smi": smi, "matched_lines": matched}, StartupLog, from_attributes=False
    )


def _candidates(text: str) -> dict[int, set[str]]:
    """Each line that holds a needed text, by the offset where it starts in ``text`` (lines
    broken by "\n" only): the keys of the patterns worth searching it with. No other line
    can match a pattern, so the parser visits only these."""
    return lines_holding(text, _NEEDLES, _MARKS)
