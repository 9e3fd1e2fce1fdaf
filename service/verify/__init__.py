"""Check a pasted vLLM start-up log against the vLLM-method plan for the same configuration."""
