"""Start vLLM once on a model directory with dummy weights; the start-up log is the product."""

import json
import os
import sys

from vllm import LLM

model_dir, extra = sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
llm = LLM(model=model_dir, load_format="dummy", skip_tokenizer_init=True, **extra)
print("ENGINE STARTED", flush=True)
os._exit(0)
