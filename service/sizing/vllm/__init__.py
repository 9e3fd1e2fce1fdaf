"""The vLLM method: what vLLM reports at start-up, without a GPU (the seeds' step 6).

One module per concept, named after vLLM's own where it has one: ``releases`` (which release
does what), ``calibration`` (the fitted and measured constants, each with its source),
``config`` (the engine's flags and their defaults), the weights as loaded (``weights`` and one
module per checkpoint layout), ``lora``, ``activation`` (the profile's peak), ``kv_cache``
(KV cache specs and groups), ``predict`` (the budget and the failure) and ``plan`` (the
fewest GPUs on which the engine starts and holds the users)."""
