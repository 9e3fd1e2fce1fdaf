"""The accuracy reports (``python -m service accuracy [--serving]``): the vLLM method against
real start-up logs (``vllm``) and the serving model against public benchmark runs
(``serving``). Their cases ship with the package (``cases/``), so the commands run from an
installed service (the Docker image has no tests/)."""
