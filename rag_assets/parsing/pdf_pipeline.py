"""Docling's standard PDF pipeline with local layout and table stages when no model hub is reachable.

Docling picks its layout, table and OCR engines through factories keyed by the
``kind`` of ``layout_options`` / ``table_structure_options`` / ``ocr_options``.
Our stages reach those factories through Docling's plugin entry point
(``[project.entry-points."docling"]`` -> ``rag_assets.parsing.docling_plugin``,
loaded because the options allow external plugins) and are selected by their
options, so StandardPdfPipeline still does parsing, layout postprocessing, page
assembly, reading order and heading levels.

Docling's own models are preferred when they can run: their weights are in
``artifacts_path`` (or the Hugging Face cache when no path is given) and
their Python dependencies are installed.

The OCR stage is ours too (``pdf_ocr.TextLayerOcrModel``): it drops text a
reader cannot see (``invisible_text``), leaves a good text layer alone,
repairs fonts with a shifted ToUnicode map and OCRs with Tesseract only the pages whose
text layer is missing or garbled. It runs before layout (Docling's order is layout, then
OCR of layout regions) so the layout stage sees the repaired or OCR'd cells.

The pipeline class is StandardPdfPipeline with that stage order and one stage
swapped: heading levels from Docling's HeadingHierarchyModel are refined with
French/English legal numbering (see ``text_repair.assign_heading_levels``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from typing import Any

from docling.datamodel.accelerator_options import AcceleratorOptions
from docling.datamodel.document import ConversionResult
from docling.datamodel.pipeline_options import (
    HeadingHierarchyOptions,
    LayoutObjectDetectionOptions,
    TableStructureOptions,
    ThreadedPdfPipelineOptions,
)
from docling.document_converter import PdfFormatOption
from docling.models.factories import get_table_structure_factory
from docling.models.factories.table_factory import TableStructureFactory
from docling.models.plugins import defaults as docling_default_plugins
from docling.models.stages.heading_hierarchy.heading_hierarchy_model import HeadingHierarchyModel
from docling.pipeline.standard_pdf_pipeline import RunContext, StandardPdfPipeline, ThreadedPipelineStage
from docling_core.types.doc import DoclingDocument

from rag_assets.hashing import sha256_file
from rag_assets.parsing import invisible_text, text_layer
from rag_assets.parsing.budget import PAGES_IN_FLIGHT
from rag_assets.parsing.layout.clusters import HEADER_BAND
from rag_assets.parsing.layout.detector import ACCEPT_SCORE, default_model_path
from rag_assets.parsing.layout.docling_stage import OnnxLayoutOptions
from rag_assets.parsing.layout.paragraphs import LINE_GAP
from rag_assets.parsing.layout.regions import TEXT_FIGURE_COVERAGE
from rag_assets.parsing.pdf_ocr import (
    EMPTY_PAGE_PICTURE_SHARE,
    OCR_LINE_GAP,
    OUTLINED_TEXT_SHAPES,
    SCAN_PICTURE_SHARE,
    TextLayerOcrOptions,
    tesseract_status,
)
from rag_assets.parsing.pdf_tables import (
    GAP_CROSSING_SHARE,
    MIN_COLUMN_GAP,
    RULE_MAX_THICKNESS,
    RulingTableOptions,
)
from rag_assets.parsing.text_repair import assign_heading_levels, repair_text

_DOCLING_LAYOUT_REPO = "docling-project/docling-layout-heron"
_DOCLING_TABLE_REPO = "docling-project/docling-models"
_DOCLING_TABLE_REVISION = "v2.3.0"  # the revision TableStructureModel downloads


class LegalHeadingHierarchyModel(HeadingHierarchyModel):
    """Docling's heading levels (bookmarks, numbering, style), then legal numbering ranks."""

    def __call__(self, conv_res: ConversionResult) -> DoclingDocument:
        document = super().__call__(conv_res)
        return assign_heading_levels(document) if self.options.enabled else document


def run_ocr_before_layout(stages: list[ThreadedPipelineStage]) -> None:
    """Rewire preprocess -> layout -> ocr -> postprocess as preprocess -> ocr -> layout -> postprocess."""
    by_name = {stage.name: stage for stage in stages}
    preprocess, ocr, layout = by_name["preprocess"], by_name["ocr"], by_name["layout"]
    postprocess = by_name["layout_postprocess"]
    if preprocess._outputs == [ocr.input_queue] and ocr._outputs == [layout.input_queue]:
        return  # already OCR first
    if not (
        preprocess._outputs == [layout.input_queue]
        and layout._outputs == [ocr.input_queue]
        and ocr._outputs == [postprocess.input_queue]
    ):
        raise RuntimeError("Docling's PDF stage wiring changed: cannot put the OCR stage before layout")
    preprocess._outputs = [ocr.input_queue]
    ocr._outputs = [layout.input_queue]
    layout._outputs = [postprocess.input_queue]


class RagPdfPipeline(StandardPdfPipeline):
    """StandardPdfPipeline with OCR before layout and legal numbering in heading levels."""

    def _init_models(self) -> None:
        super()._init_models()
        self.heading_hierarchy_model = LegalHeadingHierarchyModel(self.pipeline_options.heading_hierarchy_options)

    def _create_run_ctx(self) -> RunContext:
        ctx = super()._create_run_ctx()
        run_ocr_before_layout(ctx.stages)
        return ctx


def _importable_table_engines() -> dict[str, list[type]]:
    """Docling's built-in table engines (``defaults.table_structure_engines``) minus those
    whose imports fail here."""
    engines: list[type] = []
    for module, name in [
        ("docling.models.stages.table_structure.table_structure_model", "TableStructureModel"),
        ("docling.models.stages.table_structure.table_structure_model_v2", "TableStructureModelV2"),
        (
            "docling.models.stages.table_structure.table_structure_model_granite_vision",
            "GraniteVisionTableStructureModel",
        ),
    ]:
        try:
            engines.append(getattr(importlib.import_module(module), name))
        except ImportError:
            continue
    return {"table_structure_engines": engines}


def _table_factory() -> TableStructureFactory:
    """Docling's table factory for our pipeline options, built once per process.

    Why a workaround is left here: Docling's built-in plugin imports all its table
    engines in one function, and TableFormer v2 imports ``torchvision``, which no
    docling-slim extra but ``models-local`` installs and whose PyPI wheel does not
    run beside our CPU torch. The factory then raises for everyone, our entry-point
    plugin included (``BaseFactory.load_from_plugins`` has no per-plugin error
    handling), and StandardPdfPipeline cannot be built. Docling caches the factory
    per ``allow_external_plugins`` value (``lru_cache``), so the one narrow fix is
    to build that cached factory once with the built-in plugin's importable engines:
    the built-in function is swapped for that single call (narrower than stubbing
    ``torchvision`` or replacing Docling's factory getter, and no extra installs it).
    With torchvision installed the first call succeeds and nothing is swapped.
    """
    try:
        return get_table_structure_factory(allow_external_plugins=True)
    except ImportError:
        builtin = docling_default_plugins.table_structure_engines
        docling_default_plugins.table_structure_engines = _importable_table_engines
        try:
            return get_table_structure_factory(allow_external_plugins=True)
        finally:
            docling_default_plugins.table_structure_engines = builtin


def _has_modules(*names: str) -> bool:
    return all(importlib.util.find_spec(name) is not None for name in names)


def _in_hf_cache(repo_id: str, revision: str | None = None) -> bool:
    if not _has_modules("huggingface_hub"):
        return False
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(repo_id=repo_id, revision=revision, local_files_only=True)
    except Exception:  # noqa: BLE001 - any miss means "not available offline"
        return False
    return True


def docling_layout_available(artifacts_path: str | Path | None) -> bool:
    """Whether Docling's Heron layout model can run here without a download."""
    if not _has_modules("torch", "transformers"):
        return False
    if artifacts_path is not None:
        return (Path(artifacts_path) / _DOCLING_LAYOUT_REPO.replace("/", "--")).is_dir()
    return _in_hf_cache(_DOCLING_LAYOUT_REPO)


def docling_tables_available(artifacts_path: str | Path | None) -> bool:
    """Whether TableFormer can run here without a download."""
    if not _has_modules("torch", "docling_ibm_models"):
        return False
    if artifacts_path is not None:
        root = Path(artifacts_path)
        return any(
            (base / "model_artifacts" / "tableformer").is_dir()
            for base in (root / _DOCLING_TABLE_REPO.replace("/", "--"), root)
        )
    return _in_hf_cache(_DOCLING_TABLE_REPO, _DOCLING_TABLE_REVISION)


def accelerator_options() -> AcceleratorOptions:
    """Docling's models' threads: DOCLING_NUM_THREADS or OMP_NUM_THREADS when set, else Docling's
    default (4) but never more than the cores this process may use. Four threads on two cores
    ran the layout model at 215 ms a page against 70 ms with two (docs/speed.md)."""
    if os.environ.get("DOCLING_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"):
        return AcceleratorOptions()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return AcceleratorOptions(num_threads=max(1, min(AcceleratorOptions().num_threads, cores)))


def pdf_pipeline_options(artifacts_path: str | None = None) -> ThreadedPdfPipelineOptions:
    """Pipeline options: Docling's models where they can run, ours otherwise (our stages
    come from the ``docling`` entry point, hence ``allow_external_plugins``)."""
    if RulingTableOptions not in _table_factory().classes:
        raise RuntimeError(
            "Docling did not load the rag_assets plugin (entry point 'docling: rag_assets' in "
            "pyproject.toml): reinstall the project with `pip install -e .`"
        )
    use_docling_layout = docling_layout_available(artifacts_path)
    use_docling_tables = docling_tables_available(artifacts_path)
    return ThreadedPdfPipelineOptions(
        artifacts_path=artifacts_path,
        allow_external_plugins=True,
        # Our OCR stage: checks every page's text layer, Tesseract only where it cannot be trusted.
        do_ocr=True,
        ocr_options=TextLayerOcrOptions(),
        do_table_structure=True,
        layout_options=LayoutObjectDetectionOptions() if use_docling_layout else OnnxLayoutOptions(),
        table_structure_options=TableStructureOptions() if use_docling_tables else RulingTableOptions(),
        heading_hierarchy_options=HeadingHierarchyOptions(enabled=True),
        queue_max_size=PAGES_IN_FLIGHT,  # memory bounded by a batch, not by the page count
        accelerator_options=accelerator_options(),
    )


def pdf_format_option(artifacts_path: str | None = None) -> PdfFormatOption:
    """A ready format option for ``DocumentConverter(format_options={InputFormat.PDF: ...})``."""
    return PdfFormatOption(pipeline_cls=RagPdfPipeline, pipeline_options=pdf_pipeline_options(artifacts_path))


def pdf_pipeline_description(artifacts_path: str | None = None) -> dict[str, Any]:
    """JSON-able description of the engines a conversion uses, for manifests."""
    options = pdf_pipeline_options(artifacts_path)
    layout: dict[str, Any]
    if isinstance(options.layout_options, OnnxLayoutOptions):
        model = Path(options.layout_options.model_path or default_model_path())
        layout = {
            "engine": OnnxLayoutOptions.kind,
            "model_file": model.name,
            "model_sha256": sha256_file(model),
            "runtime": "onnxruntime",
            "labels": "CDLA",
            "score_threshold": options.layout_options.score_threshold,
            "nms_iou": options.layout_options.nms_iou,
            "accept_score": ACCEPT_SCORE,
            "header_band": HEADER_BAND,
            "line_gap": LINE_GAP,
            "text_figure_coverage": TEXT_FIGURE_COVERAGE,
        }
    else:
        layout = {
            "engine": options.layout_options.kind,
            "model_repo": _DOCLING_LAYOUT_REPO,
            "artifacts_path": artifacts_path,
        }
    table: dict[str, Any]
    if isinstance(options.table_structure_options, RulingTableOptions):
        table = {
            "engine": RulingTableOptions.kind,
            "rule_max_thickness": RULE_MAX_THICKNESS,
            "min_column_gap": MIN_COLUMN_GAP,
            "gap_crossing_share": GAP_CROSSING_SHARE,
        }
    else:
        table = {
            "engine": options.table_structure_options.kind,
            "model_repo": _DOCLING_TABLE_REPO,
            "revision": _DOCLING_TABLE_REVISION,
            "mode": str(options.table_structure_options.mode.value),  # type: ignore[attr-defined]
            "artifacts_path": artifacts_path,
        }
    ocr_options = options.ocr_options
    assert isinstance(ocr_options, TextLayerOcrOptions)
    tesseract_version, unavailable = tesseract_status(ocr_options)
    ocr = {
        "engine": ocr_options.kind,
        "order": "before layout",
        "text_layer_check": {
            "module": text_layer.__name__,
            "shifts": list(text_layer.SHIFTS),
            "min_words": text_layer.MIN_WORDS,
            "ok_score": text_layer.OK_SCORE,
            "shift_score": text_layer.SHIFT_SCORE,
            "shift_gain": text_layer.SHIFT_GAIN,
            "shift_distinct": text_layer.SHIFT_DISTINCT,
            "garbled_min_words": text_layer.GARBLED_MIN_WORDS,
            "garbled_score": text_layer.GARBLED_SCORE,
            "vowel_range": list(text_layer.VOWEL_RANGE),
            "long_word": text_layer.LONG_WORD,
            "long_word_share": text_layer.LONG_WORD_SHARE,
            "unmapped_share": text_layer.UNMAPPED_SHARE,
            "empty_page_picture_share": EMPTY_PAGE_PICTURE_SHARE,
            "scan_picture_share": SCAN_PICTURE_SHARE,
            "outlined_text_shapes": OUTLINED_TEXT_SHAPES,
        },
        "invisible_text": {  # dropped before the check: what a reader cannot see is no evidence
            "module": invisible_text.__name__,
            "min_size": invisible_text.MIN_SIZE,
            "render_scale": invisible_text.RENDER_SCALE,
            "flat_tolerance": invisible_text.FLAT_TOLERANCE,
            "margin": invisible_text.MARGIN,
        },
        "ocr_engine": "tesseract (docling TesseractOcrCliModel, full page)",
        "tesseract_version": tesseract_version,
        "languages": list(ocr_options.lang),
        "scale": ocr_options.scale,
        "ocr_line_gap": OCR_LINE_GAP,
        "available": unavailable is None,
    }
    if unavailable is not None:
        ocr["unavailable"] = unavailable
    return {
        "pipeline": "docling.StandardPdfPipeline (rag_assets.RagPdfPipeline: OCR before layout, legal heading levels)",
        "backend": "docling-parse",
        "ocr": ocr,
        "layout": layout,
        "table_structure": table,
        "heading_hierarchy": "docling HeadingHierarchyModel, then legal numbering ranks",
        "text_repair": "rag_assets.parsing.text_repair.repair_text (applied after conversion)",
    }


__all__ = [
    "LegalHeadingHierarchyModel",
    "RagPdfPipeline",
    "docling_layout_available",
    "docling_tables_available",
    "pdf_format_option",
    "pdf_pipeline_description",
    "pdf_pipeline_options",
    "repair_text",
    "run_ocr_before_layout",
]
