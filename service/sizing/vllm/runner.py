"""Which runner serves a model: Model Runner V2 or the original one (vLLM 0.23 on)."""

from service.sizing.models import ModelSpec
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.releases import release_rules, resolved_release

V2_RUNNER_CLASSES: dict[int, frozenset[str]] = {
    23: frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),
    24: frozenset(
        {
            "Qwen3ForCausalLM",
            "DeepseekV2ForCausalLM",
            "Qwen2MoeForCausalLM",
            "GraniteMoeForCausalLM",
            "LlamaForCausalLM",
            "MistralForCausalLM",
        }
    ),
}
"""``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` in vllm/config/vllm.py of the 0.23.0 and 0.24.0
wheels: the only classes those releases serve with Model Runner V2."""
V2_RUNNER_MOE_CLASSES: tuple[tuple[int, str], ...] = (
    (24, "DeepseekV2ForCausalLM"),
    (24, "Qwen2MoeForCausalLM"),
    (24, "GraniteMoeForCausalLM"),
    (26, "InklingForCausalLM"),
    (26, "InklingForConditionalGeneration"),
    (26, "LongcatFlashNgramForCausalLM"),
    (27, "KimiK3ForConditionalGeneration"),
    (28, "DeepseekV4ForCausalLM"),
)
"""From 0.25 the same list names the MoE classes V2 takes besides every non-MoE model (the
0.25.0-0.28.0 wheels), each from the release (minor) that first lists it."""


def runs_on_model_runner_v2(model: ModelSpec, config: EngineConfig) -> bool:
    """Whether vLLM serves this model with Model Runner V2 (``VllmConfig.use_v2_model_runner``,
    read in the 0.23.0-0.28.0 wheels; flags that force the original runner, such as LoRA or
    n-gram speculation, are not modelled):

    - 0.23 and 0.24: only the classes of ``V2_RUNNER_CLASSES`` (the 0.24 H200 runs: Qwen3,
      Llama and DeepSeek-V2-Lite on V2, Qwen3-MoE and Gemma 3 on the original runner);
    - 0.25-0.28: every model that is neither MoE nor a linear-attention hybrid
      (``is_hybrid``; sliding windows do not count), and the MoE classes listed in
      ``V2_RUNNER_MOE_CLASSES``;
    - 0.29 on: every model (vLLM PR #53183; the 0.29 gpt-oss-20b XPU log prints "Using V2
      Model Runner").

    A model of unknown class (``ModelSpec.architecture`` empty) counts as listed in 0.23-0.24
    when it is a dense full-attention model, the shape those lists hold."""
    rule = release_rules(config.era, config.release).model_runner_v2
    if rule in ("all", "original"):
        return rule == "all"
    if config.model_runner != "auto":
        return config.model_runner == "v2"
    minor = resolved_release(config.era, config.release)[1]
    if rule == "listed":
        if model.architecture:
            return model.architecture in V2_RUNNER_CLASSES[minor]
        return not model.is_moe and all(t == "full" for t in model.resolved_layer_types)
    if "linear" in model.resolved_layer_types:
        return False
    listed = any(
        model.architecture == name and minor >= since for since, name in V2_RUNNER_MOE_CLASSES
    )
    return not model.is_moe or listed
