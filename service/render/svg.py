"""A plan's memory picture as SVG: one stacked bar per GPU, for chat messages and documents.

A pure function of the answer Struct (the same numbers the JSON answer carries): each band is
a ``<rect data-band="..." data-bytes="...">`` with its integer bytes, labelled in GB (10^9 B)
and GiB (2^30 B); a dashed line at the utilisation (capacity x utilisation) and a red one at
the card's capacity labelled OOM. A plan that does not fit draws what overflows its budget
(negative spare) in red above the utilisation line. Every text is escaped (model names come
from users); the picture has no script, no external reference and no font download.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from service.plans.evaluate import PlanAnswer
from service.sizing.units import to_gb, to_gib
from service.sizing.vllm.plan import VllmPlanAnswer

SVG = "image/svg+xml"
MAX_BARS = 8
"""Bars drawn at most: the per-GPU figures are the busiest GPU's, so more add nothing."""

STATUS_COLOURS = {
    "fits": "#2e7d32",  # green
    "tight": "#f9a825",  # yellow
    "amber": "#ef6c00",  # orange
    "does_not_fit": "#c62828",  # red
}
STATUS_WORDS = {"fits": "fits", "tight": "tight", "amber": "amber", "does_not_fit": "does not fit"}
BAND_COLOURS = {
    "weights": "#1565c0",
    "kv_cache": "#6a1b9a",
    "overhead": "#78909c",
    "activation_peak": "#00838f",
    "non_torch": "#8d6e63",
    "cuda_graphs": "#5d4037",
    "kv_pool": "#6a1b9a",
    "spare": "#a5d6a7",
}
OVERFLOW_COLOUR = "#c62828"
HEADROOM_COLOUR = "#eceff1"


@dataclass(frozen=True)
class Band:
    key: str
    label: str
    bytes: int


@dataclass(frozen=True)
class Picture:
    """What the SVG draws, in bytes: bands stacked from 0 up to ``usable`` (when it fits)."""

    model: str
    gpu: str
    gpu_count: int
    status: str
    capacity_bytes: int
    usable_bytes: int
    bands: tuple[Band, ...]
    overflow_bytes: int
    """How far the bands pass the utilisation line (0 when they stay under it)."""
    note: str


def _size(n_bytes: int) -> str:
    return f"{to_gb(n_bytes):,.2f} GB / {to_gib(n_bytes):,.2f} GiB"


def seed_picture(answer: PlanAnswer) -> Picture:
    """The seed method's busiest GPU: overhead + weights + KV cache + spare = usable."""
    g = answer.per_gpu
    spare = max(g.spare_bytes, 0)
    return Picture(
        model=answer.model,
        gpu=answer.gpu,
        gpu_count=answer.gpu_count,
        status=answer.status,
        capacity_bytes=g.capacity_bytes,
        usable_bytes=g.usable_bytes,
        bands=(
            Band("weights", "weights", g.weights_bytes),
            Band("kv_cache", "KV cache", g.kv_cache_bytes),
            Band("overhead", "overhead", g.overhead_bytes),
            Band("spare", "spare", spare),
        ),
        overflow_bytes=max(-g.spare_bytes, 0),
        note=f"{answer.weight_format} weights, {answer.kv_format} KV cache, "
        f"{answer.concurrency} x {answer.context_tokens:,} tokens, "
        f"capacity basis {answer.capacity_basis}",
    )


def vllm_picture(answer: VllmPlanAnswer) -> Picture:
    """vLLM's start-up profile of its busiest GPU: weights, activation peak, non-torch memory
    and CUDA graphs come off the budget (total x utilisation); the KV pool takes the rest."""
    g = answer.prediction.per_gpu
    used = g.weights_bytes + g.activation_bytes + g.non_torch_bytes + g.cuda_graph_bytes
    kv = max(g.kv_cache_bytes, 0)
    return Picture(
        model=answer.model,
        gpu=answer.gpu,
        gpu_count=answer.gpu_count,
        status="fits" if answer.fits else "does_not_fit",
        capacity_bytes=g.total_bytes,
        usable_bytes=g.usable_bytes,
        bands=(
            Band("weights", "weights", g.weights_bytes),
            Band("activation_peak", "activation peak", g.activation_bytes),
            Band("non_torch", "non-torch", g.non_torch_bytes),
            Band("cuda_graphs", "CUDA graphs", g.cuda_graph_bytes),
            Band("kv_pool", "KV pool", kv),
            Band("spare", "spare", max(g.usable_bytes - used - kv, 0)),
        ),
        overflow_bytes=max(used - g.usable_bytes, 0),
        note=f"vLLM {answer.prediction.version}, {answer.kv_cache_tokens:,} KV tokens, "
        f"max concurrency {answer.max_concurrency:g}",
    )


# Geometry, in SVG user units.
WIDTH, HEIGHT = 760, 460
TOP, BOTTOM, LEFT = 78, 410, 40
BAR_W, BAR_GAP = 44, 14
LABEL_GAP = 14
"""Least vertical distance between two band labels."""


def _spread(wanted: Sequence[float], low: float, high: float) -> list[float]:
    """Label heights near ``wanted`` (sorted bottom to top, i.e. falling y) and LABEL_GAP
    apart, kept inside [low, high] where there is room."""
    placed: list[float] = []
    for y in wanted:
        y = min(y, high)
        if placed and placed[-1] - y < LABEL_GAP:
            y = placed[-1] - LABEL_GAP
        placed.append(y)
    if placed and placed[-1] < low:  # pushed above the top: shift the whole column down
        shift = low - placed[-1]
        placed = [y + shift for y in placed]
    return placed


def picture_svg(picture: Picture) -> str:
    p = picture
    stacked = sum(b.bytes for b in p.bands)
    top_bytes = max(p.capacity_bytes, stacked, p.usable_bytes + p.overflow_bytes, 1) * 1.08

    def y(n_bytes: float) -> float:
        return BOTTOM - n_bytes / top_bytes * (BOTTOM - TOP)

    bars = min(p.gpu_count, MAX_BARS)
    bars_right = LEFT + bars * (BAR_W + BAR_GAP)
    status_word = STATUS_WORDS.get(p.status, p.status)
    colour = STATUS_COLOURS.get(p.status, "#000000")
    title = f"{p.model} on {p.gpu_count} x {p.gpu}: {status_word}"
    desc = (
        f"Memory of each GPU of {p.gpu_count} x {p.gpu} for {p.model} ({status_word}): "
        + "; ".join(f"{b.label} {_size(b.bytes)}" for b in p.bands)
        + f"; utilisation line {_size(p.usable_bytes)}; capacity (OOM) {_size(p.capacity_bytes)}"
        + (f"; over budget by {_size(p.overflow_bytes)}" if p.overflow_bytes else "")
        + "."
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="plan-title plan-desc" '
        f'data-status={quoteattr(p.status)} font-family="sans-serif" font-size="12">',
        f'<title id="plan-title">{escape(title)}</title>',
        f'<desc id="plan-desc">{escape(desc)}</desc>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="26" font-size="16" font-weight="bold">'
        f"{escape(f'{p.model} on {p.gpu_count} x {p.gpu}')}</text>",
        f'<rect x="{LEFT}" y="36" width="96" height="20" rx="4" fill="{colour}"/>',
        f'<text x="{LEFT + 48}" y="50" text-anchor="middle" fill="#ffffff" font-weight="bold" '
        f"data-status-word={quoteattr(p.status)}>{escape(status_word)}</text>",
        f'<text x="{LEFT + 108}" y="50" fill="#455a64">{escape(p.note)}</text>',
    ]
    if p.gpu_count > bars:
        out.append(
            f'<text x="{LEFT}" y="{HEIGHT - 14}" fill="#455a64">{bars} of {p.gpu_count} GPUs '
            "drawn: each holds the busiest GPU's figures or less</text>"
        )
    else:
        out.append(
            f'<text x="{LEFT}" y="{HEIGHT - 14}" fill="#455a64">per GPU: the busiest GPU '
            "of the split</text>"
        )
    for i in range(bars):
        x = LEFT + i * (BAR_W + BAR_GAP)
        # What the utilisation keeps back, up to the card's capacity.
        headroom = p.capacity_bytes - p.usable_bytes
        out.append(
            f'<rect x="{x}" y="{y(p.capacity_bytes):.2f}" width="{BAR_W}" '
            f'height="{y(p.usable_bytes) - y(p.capacity_bytes):.2f}" fill="{HEADROOM_COLOUR}" '
            f'stroke="#b0bec5" data-band="headroom" data-bytes="{headroom}" data-gpu="{i}"/>'
        )
        base = 0
        for band in p.bands:
            out.append(
                f'<rect x="{x}" y="{y(base + band.bytes):.2f}" width="{BAR_W}" '
                f'height="{y(base) - y(base + band.bytes):.2f}" '
                f'fill="{BAND_COLOURS.get(band.key, "#9e9e9e")}" data-band="{band.key}" '
                f'data-bytes="{band.bytes}" data-gpu="{i}"/>'
            )
            base += band.bytes
        if p.overflow_bytes:
            out.append(
                f'<rect x="{x}" y="{y(p.usable_bytes + p.overflow_bytes):.2f}" width="{BAR_W}" '
                f'height="{y(p.usable_bytes) - y(p.usable_bytes + p.overflow_bytes):.2f}" '
                f'fill="{OVERFLOW_COLOUR}" fill-opacity="0.75" stroke="{OVERFLOW_COLOUR}" '
                f'stroke-width="2" data-band="overflow" data-bytes="{p.overflow_bytes}" '
                f'data-gpu="{i}"/>'
            )
        out.append(
            f'<text x="{x + BAR_W / 2}" y="{BOTTOM + 16}" text-anchor="middle">GPU {i}</text>'
        )
    line_right = bars_right + 8
    for key, n_bytes, stroke, dash in (
        ("utilisation", p.usable_bytes, "#37474f", ' stroke-dasharray="6 4"'),
        ("oom", p.capacity_bytes, OVERFLOW_COLOUR, ""),
    ):
        out.append(
            f'<line x1="{LEFT - 8}" x2="{line_right}" y1="{y(n_bytes):.2f}" '
            f'y2="{y(n_bytes):.2f}" stroke="{stroke}" stroke-width="2"{dash} '
            f'data-line="{key}" data-bytes="{n_bytes}"/>'
        )
    out.append(
        f'<line x1="{LEFT - 8}" x2="{line_right}" y1="{BOTTOM}" y2="{BOTTOM}" stroke="#263238"/>'
    )
    # Labels in a column right of the bars, each near the middle of its band or line.
    wanted: list[tuple[float, str, str]] = []
    base = 0
    for band in p.bands:
        wanted.append((y(base + band.bytes / 2), f"{band.label}: {_size(band.bytes)}", "#263238"))
        base += band.bytes
    wanted.append((y(p.usable_bytes), f"utilisation: {_size(p.usable_bytes)}", "#37474f"))
    if p.overflow_bytes:
        over = f"over budget: {_size(p.overflow_bytes)}"
        wanted.append((y(p.usable_bytes + p.overflow_bytes // 2), over, OVERFLOW_COLOUR))
    wanted.append((y(p.capacity_bytes), f"OOM (capacity): {_size(p.capacity_bytes)}", "#c62828"))
    wanted.sort(key=lambda w: -w[0])
    heights = _spread([w[0] + 4 for w in wanted], TOP, BOTTOM)
    for (_, text, fill), label_y in zip(wanted, heights, strict=True):
        out.append(
            f'<text x="{line_right + 10}" y="{label_y:.2f}" fill="{fill}">{escape(text)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def plan_svg(answer: PlanAnswer | VllmPlanAnswer) -> str:
    """The memory picture of an inference plan (the best one, for ranked options) or of a vLLM
    start-up prediction."""
    if isinstance(answer, VllmPlanAnswer):
        return picture_svg(vllm_picture(answer))
    return picture_svg(seed_picture(answer))
