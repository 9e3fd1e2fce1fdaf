"""The serving-speed model (issue 17, point 1): how fast a deployment answers a workload.

``step`` prices one engine step (prefill tokens plus decoding sequences) on one GPU of a replica;
``loop`` turns step times into a closed loop of N clients, a benchmark of P prompts, or an open
loop at R requests/s; ``efficiency`` holds the achieved fractions of peak and the per-step
overhead, per GPU generation and engine; ``deploy`` builds a step's costs from catalogue specs
and the vLLM method's memory terms, and ``kv_pools`` each engine's KV pool under its own rule.
"""
