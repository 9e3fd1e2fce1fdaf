"""service.render.svg as a pure function: geometry, overflow, labels and escaping by hand."""

import xml.etree.ElementTree as ET

import pytest

from service.render.svg import BOTTOM, LABEL_GAP, TOP, Band, Picture, _spread, picture_svg

NS = "{http://www.w3.org/2000/svg}"
GB = 10**9


def picture(model: str = "m", overflow_bytes: int = 0, spare: int = 0) -> Picture:
    return Picture(
        model=model,
        gpu="g",
        gpu_count=2,
        status="does_not_fit" if overflow_bytes else "fits",
        capacity_bytes=100 * GB,
        usable_bytes=90 * GB,
        bands=(
            Band("weights", "weights", 80 * GB),
            Band("kv_cache", "KV cache", 15 * GB),
            Band("overhead", "overhead", 4 * GB),
            Band("spare", "spare", spare),
        ),
        overflow_bytes=overflow_bytes,
        note="n",
    )


def rects(svg: ET.Element, band: str) -> list[ET.Element]:
    return [r for r in svg.iter(f"{NS}rect") if r.attrib.get("data-band") == band]


def test_overflow_is_drawn_from_the_utilisation_line_up_in_red() -> None:
    # 80 + 15 + 4 = 99 GB on 90 GB usable: 9 GB over. The scale tops at
    # max(capacity 100, stack 99, 90 + 9) x 1.08 = 108 GB over the 332 units from y=78 to 410.
    svg = ET.fromstring(picture_svg(picture(overflow_bytes=9 * GB)))
    over = rects(svg, "overflow")
    assert len(over) == 2 and {r.attrib["data-bytes"] for r in over} == {str(9 * GB)}
    r = over[0]
    assert r.attrib["fill"] == "#c62828"
    assert float(r.attrib["y"]) == pytest.approx(410 - 99 / 108 * 332, abs=0.01)  # 105.67
    assert float(r.attrib["height"]) == pytest.approx(9 / 108 * 332, abs=0.02)  # 27.67
    oom = next(x for x in svg.iter(f"{NS}line") if x.attrib.get("data-line") == "oom")
    assert float(oom.attrib["y1"]) == pytest.approx(410 - 100 / 108 * 332, abs=0.01)


def test_a_plan_that_fits_has_no_overflow_band() -> None:
    svg = ET.fromstring(picture_svg(picture()))
    assert rects(svg, "overflow") == []
    assert [r.attrib["data-bytes"] for r in rects(svg, "weights")] == [str(80 * GB)] * 2


def test_every_text_is_escaped() -> None:
    name = "a<b>&\"c'</text><script>x</script>"
    text = picture_svg(picture(model=name))
    svg = ET.fromstring(text)  # well-formed: nothing the name holds became markup
    assert not list(svg.iter(f"{NS}script"))
    assert svg.findtext(f"{NS}title") == f"{name} on 2 x g: fits"
    assert name in (svg.findtext(f"{NS}desc") or "")


def test_labels_keep_apart_and_inside_the_plot() -> None:
    # Three bands drawn 2 units apart get labels LABEL_GAP apart, pushed upwards (falling y).
    placed = _spread([300.0, 298.0, 296.0], TOP, BOTTOM)
    assert placed == [300.0, 300.0 - LABEL_GAP, 300.0 - 2 * LABEL_GAP]
    # Pushed past the top: the column shifts down so the highest sits at TOP.
    crowded = _spread([TOP + 5.0] * 3, TOP, BOTTOM)
    assert crowded[-1] == TOP and crowded[0] == TOP + 2 * LABEL_GAP
