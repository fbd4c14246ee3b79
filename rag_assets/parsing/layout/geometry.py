"""Box geometry of the layout stage: words inside boxes, unions of boxes, overlaps and nearness."""

from __future__ import annotations

from collections.abc import Sequence

from docling_core.types.doc import BoundingBox

from rag_assets.parsing.layout.detector import Detection
from rag_assets.parsing.pdf_tables import Word


def is_inside(w: Word, box: Detection | BoundingBox | Word, share: float = 0.5) -> bool:
    iw = min(w.r, box.r) - max(w.l, box.l)
    ih = min(w.b, box.b) - max(w.t, box.t)
    return iw > 0 and ih > 0 and iw * ih >= share * max((w.r - w.l) * (w.b - w.t), 1e-6)


def union_bbox(words: Sequence[Word]) -> BoundingBox:
    return BoundingBox(
        l=min(w.l for w in words),
        t=min(w.t for w in words),
        r=max(w.r for w in words),
        b=max(w.b for w in words),
    )


def overlap_share(a: Detection, b: Detection) -> float:
    """Share of the smaller box covered by the other."""
    iw = min(a.r, b.r) - max(a.l, b.l)
    ih = min(a.b, b.b) - max(a.t, b.t)
    if iw <= 0 or ih <= 0:
        return 0.0
    return iw * ih / max(min(a.area, b.area), 1e-6)


def near(caption: Detection, region: Detection, max_gap: float) -> bool:
    h_overlap = min(caption.r, region.r) - max(caption.l, region.l) > 0
    v_gap = max(caption.t - region.b, region.t - caption.b)
    return h_overlap and v_gap <= max_gap


__all__ = [
    "is_inside",
    "near",
    "overlap_share",
    "union_bbox",
]
