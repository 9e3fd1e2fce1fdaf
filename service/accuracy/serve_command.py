"""What a public run's serve command sets, read as the engines read their flags: the harness's
(service/accuracy/serving.py) only reader of the commands it records."""

import re


def flag(command: str, *names: str) -> str | None:
    """The number the first of ``names`` is given (``--name N`` or ``--name=N``), or None; a
    shell variable (``--name $VAR``) is not a number, so it reads as unset."""
    for name in names:
        found = re.search(rf"{re.escape(name)}[ =]+([0-9.]+)", command)
        if found:
            return found.group(1)
    return None


def option(command: str, name: str) -> str | None:
    """The word ``--name`` is given (``--name word`` or ``--name=word``), or None; a shell
    variable reads as unset."""
    found = re.search(rf"{re.escape(name)}[ =]+([A-Za-z0-9_.-]+)", command)
    return found.group(1) if found else None


def expert_parallel_of(engine: str, command: str, tensor_parallel: int) -> int:
    """The expert-parallel size a serve command sets (1: none, each engine's default), read as
    the engines read their flags:

    - TensorRT-LLM: ``--ep_size N`` (trtllm-serve; unset, ``Mapping`` takes moe_ep_size 1 and
      moe_tp_size = tp_size: ``tensorrt_llm/mapping.py``);
    - SGLang: ``--ep-size N`` (default 1), ``--enable-ep-moe`` (e = t, the older flag), or an
      all-to-all backend, ``--moe-a2a-backend deepep`` or ``mooncake``, which sets e = t
      (``server_args.py``: ``self.ep_size = self.tp_size``);
    - vLLM: ``--enable-expert-parallel`` (``-ep``) runs e = t x data-parallel size, of which the
      tensor-parallel group is the part modelled (e = t; off by default).

    A flag whose value is a shell variable (``--ep-size $EP_SIZE``) is not read: the default.
    The size is at most the tensor-parallel group (TensorRT-LLM's MoE world is its tp_size)."""
    size = 1
    if engine == "vllm":
        if re.search(r"(?:^|\s)(?:--enable-expert-parallel|-ep)(?=\s|$)", command):
            size = tensor_parallel
    else:
        found = re.search(r"--(?:ep_size|ep-size|expert-parallel-size)[ =]+([0-9]+)\b", command)
        if found:
            size = int(found.group(1))
        if engine == "sglang" and (
            "--enable-ep-moe" in command
            or re.search(r"--moe-a2a-backend[ =]+(?:deepep|mooncake)\b", command)
        ):
            size = tensor_parallel
    return max(1, min(size, tensor_parallel))
