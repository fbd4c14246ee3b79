"""Our PDF stages as a Docling plugin (entry point ``docling: rag_assets`` in pyproject.toml).

Docling's factories read every module of the ``docling`` entry-point group and call the
functions named after them, as ``docling/models/plugins/defaults.py`` does for Docling's
own engines; a pipeline built with ``allow_external_plugins=True`` can then select our
stages by the ``kind`` of their options (``pdf_pipeline.pdf_pipeline_options``).
"""

from __future__ import annotations


def layout_engines():
    from rag_assets.parsing.layout.docling_stage import OnnxLayoutModel

    return {"layout_engines": [OnnxLayoutModel]}


def table_structure_engines():
    from rag_assets.parsing.pdf_tables import RulingTableStructureModel

    return {"table_structure_engines": [RulingTableStructureModel]}


def ocr_engines():
    from rag_assets.parsing.pdf_ocr import TextLayerOcrModel

    return {"ocr_engines": [TextLayerOcrModel]}
