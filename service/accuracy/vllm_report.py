"""The vLLM method's accuracy report rendered: a plain table for the terminal and the markdown
page docs/accuracy.md holds (``python -m service accuracy [--markdown]``)."""

from service.accuracy.vllm import Report


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _table(rep: Report) -> list[str]:
    head = (
        "| case | role | GPU | TP | vLLM | logged tokens | predicted | error | "
        "logged weights GiB | predicted | error | failed (logged/predicted) |"
    )
    rows = [head, "|" + "---|" * 12]
    for r in rep.cases:
        rows.append(
            f"| {r.case} | {r.role} | {r.gpu} | {r.tensor_parallel} | {r.version.split(' ')[0]} "
            f"| {'-' if r.logged_tokens is None else f'{r.logged_tokens:,}'} "
            f"| {r.predicted_tokens:,} | {_pct(r.tokens_error)} "
            f"| {'-' if r.logged_weights_gib is None else r.logged_weights_gib} "
            f"| {r.predicted_weights_gib} | {_pct(r.weights_error)} "
            f"| {'yes' if r.logged_failed else 'no'}/{'yes' if r.predicted_failed else 'no'} |"
        )
    return rows


def _shares(rep: Report) -> str:
    return "; ".join(
        f"{name} {within}/{cases} ({within / cases * 100:.1f}%)" if cases else f"{name} -"
        for name, (within, cases) in rep.tokens_by_counting.items()
    )


def render(rep: Report) -> str:
    rows = _table(rep)
    rows.append("")
    rows += [f"Unsupported: {r.case}: {r.unsupported}" for r in rep.cases if r.unsupported]
    rows += [f"Outside the bar: {r.case}: {r.inconsistent}" for r in rep.cases if r.inconsistent]
    rows.append(
        f"KV tokens within 5%: {rep.tokens_within}/{rep.tokens_cases}; weights within 1%: "
        f"{rep.weights_within}/{rep.weights_cases}; failures predicted: "
        f"{rep.failures_ok}/{rep.failure_cases}; started but predicted to fail: "
        f"{rep.false_failures}; bar (90% / all / all) met: "
        f"{'yes' if rep.meets_bar else 'no'}; page arithmetic on the logged KV memory: "
        f"{rep.page_ok}/{rep.page_cases}"
    )
    rows.append(f"KV tokens within 5%, by counting: {_shares(rep)}")
    return "\n".join(rows)


MARKDOWN_HEAD = """\
# Accuracy of the vLLM method on real start-up logs

This page is the output of `.venv/bin/python -m service accuracy --markdown`, written here
as it prints; a test fails when the two differ. How the cases were collected, what `fit` and
`held-out` mean and why each miss misses: [vllm-method.md](vllm-method.md#accuracy).
"""


def render_markdown(rep: Report) -> str:
    """The report as one markdown page (docs/accuracy.md): the counts, then every case."""
    roles = {
        role: sum(1 for r in rep.cases if r.role == role)
        for role in ("fit", "held-out", "unsupported")
    }
    lines = [
        MARKDOWN_HEAD,
        "## Counts",
        "",
        f"- Cases: {len(rep.cases)} ("
        + ", ".join(f"{role} {n}" for role, n in roles.items())
        + ").",
        f"- KV tokens within 5%: {rep.tokens_within} of {rep.tokens_cases}.",
        f"- KV tokens within 5%, by counting: {_shares(rep)}.",
        f"- Weights within 1%: {rep.weights_within} of {rep.weights_cases}.",
        f"- Logged failures predicted: {rep.failures_ok} of {rep.failure_cases}; "
        f"started but predicted to fail: {rep.false_failures}.",
        f"- Page arithmetic on the logged KV memory (no fitted constant): "
        f"{rep.page_ok} of {rep.page_cases}.",
        f"- The bar (KV tokens within 5% in 90% of the cases, every weight within 1%, every "
        f"logged failure predicted): {'met' if rep.meets_bar else 'not met'}.",
        "",
        "## Every case",
        "",
        "GPU: the catalogue GPU, or the total the log states for a GPU outside the catalogue. "
        "Tokens: the KV cache's size in tokens; weights: as loaded on one GPU; failed: whether "
        "the engine stopped at start-up, as logged and as predicted.",
        "",
        *_table(rep),
    ]
    apart = [(r.case, r.unsupported) for r in rep.cases if r.unsupported]
    if apart:
        lines += ["", "## Unsupported (counted as misses)", ""]
        lines += [f"- {case}: {why}" for case, why in apart]
    apart = [(r.case, r.inconsistent) for r in rep.cases if r.inconsistent]
    if apart:
        lines += ["", "## Outside the bar (listed, not measured)", ""]
        lines += [f"- {case}: {why}" for case, why in apart]
    return "\n".join(lines) + "\n"
