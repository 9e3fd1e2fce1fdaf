"""The vLLM method: what vLLM reports at start-up, without a GPU (the seeds' step 6).

One module per concept, named after vLLM's own where it has one:

- ``releases``: which release does what (the one table every rule reads);
- ``calibration``: the fitted and measured constants, each with its source;
- ``config`` (the engine's flags), ``flags`` (their bounds), ``defaults`` (what vLLM picks when
  a flag is unset) and ``runner`` (Model Runner V2 or the original one);
- the weights as loaded: ``weights``, with one module per checkpoint layout (``int4``,
  ``bitsandbytes``, ``mxfp4``) and ``mla``'s extra copies, over ``shapes`` (a layer's matrices);
- ``lora``: the adapter slots;
- ``activation``: the profile's peak;
- ``kv_cache``: KV cache specs and groups (full, sliding window, MLA, linear/hybrid);
- ``budget`` (each pipeline stage's KV budget and blocks), ``failure`` (whether the engine
  starts) and ``predict`` (``predict_vllm``, the steps in order);
- ``plan``: the fewest GPUs on which the engine starts and holds the users."""
