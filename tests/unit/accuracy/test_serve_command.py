"""The harness reads what a serve command sets as the engines read their flags."""

import pytest

from service.accuracy.serve_command import expert_parallel_of, flag


def test_a_flag_is_read_with_a_space_or_an_equals_sign_and_a_variable_is_unset() -> None:
    assert flag("vllm serve m --max-num-seqs 256", "--max-num-seqs") == "256"
    assert flag("trtllm-serve m --max_batch_size=64", "--max-num-seqs", "--max_batch_size") == "64"
    sglang = "python3 -m sglang.launch_server --max-running-requests $N"
    assert flag(sglang, "--max-running-requests") is None


@pytest.mark.parametrize(
    ("engine", "command", "size"),
    [
        ("tensorrt-llm", "trtllm-serve /m --tp_size 8 --ep_size 8", 8),
        ("tensorrt-llm", "trtllm-serve $MODEL --tp_size=$TP --ep_size=$EP_SIZE", 1),
        ("tensorrt-llm", "trtllm-serve /m --tp_size 8", 1),
        ("sglang", "python3 -m sglang.launch_server --tp 8 --ep-size $EP_SIZE", 1),
        ("sglang", "python3 -m sglang.launch_server --tp 8 --ep-size 4", 4),
        ("sglang", "python3 -m sglang.launch_server --tp 8 --enable-ep-moe", 8),
        ("sglang", "python3 -m sglang.launch_server --tp 8 --moe-a2a-backend deepep", 8),
        ("sglang", "python3 -m sglang.launch_server --tp 8 --moe-a2a-backend none", 1),
        ("vllm", "vllm serve m -tp 8 --enable-expert-parallel", 8),
        ("vllm", "vllm serve m -tp 8", 1),
        ("tensorrt-llm", "trtllm-serve /m --tp_size 4 --ep_size 8", 4),
    ],
)
def test_the_expert_parallel_size_is_read_from_the_serve_command(
    engine: str, command: str, size: int
) -> None:
    # Unset: every engine splits each expert over the group (TensorRT-LLM's Mapping takes
    # moe_ep_size 1, SGLang's --ep-size defaults to 1, vLLM's expert parallelism is opt-in); a
    # shell variable is not a value; the size is at most the tensor-parallel group.
    assert expert_parallel_of(engine, command, 8 if "--tp_size 4" not in command else 4) == size
