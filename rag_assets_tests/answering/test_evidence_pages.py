"""`ask --show`: the cited PDF page written as a PNG, the quoted lines highlighted; a Markdown
source keeps its section path and says it has no page image (sample corpus, offline answers)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from rag_assets.answering.highlight import check

ZONE_A = "Quelle est la franchise pour une inondation en zone A ?"
CHAIN_LADDER = "Quelle méthode est retenue pour l'évaluation des provisions pour sinistres à payer ?"


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for name in ("RAG_ASSETS_LLM_BASE_URL", "RAG_ASSETS_LLM_ENDPOINTS", "RAG_ASSETS_LLM_GGUF"):
        monkeypatch.delenv(name, raising=False)


def test_ask_show_writes_the_cited_pdf_page_with_the_quote_highlighted(kb, capsys, tmp_path):
    from rag_assets.cli import main

    assert main(["--store", str(kb.store.root), "ask", ZONE_A, "--show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    shown = re.search(r"↳ .*Tableau 1 .*p\. 3 — page image: (\S+\.png)", out)
    assert shown, out
    image = Path(shown.group(1))
    assert image.parent == tmp_path and image.exists()
    with Image.open(image) as drawn:  # an A4 page at 2 pixels per point
        assert drawn.size == (1191, 1684)
    answer = kb.ask(ZONE_A)
    evidence = answer.paragraphs[0].evidence
    assert evidence["pages"][0]["page"] == 3 and [evidence["pages"][0]["width"], evidence["pages"][0]["height"]] == [
        595.3,
        841.9,
    ]
    assert check(Path(evidence["file"]), evidence["pages"], evidence["quote"])["ok"]


def test_ask_show_json_carries_pages_boxes_and_page_size(kb, capsys, tmp_path):
    from rag_assets.cli import main

    assert main(["--store", str(kb.store.root), "ask", ZONE_A, "--show", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    evidence = data["paragraphs"][0]["evidence"]
    page = evidence["pages"][0]
    assert {"page", "width", "height", "boxes"} <= set(page) and page["boxes"] and len(page["boxes"][0]) == 4
    assert data["evidence_images"][0]["path"].endswith(".png")


def test_a_markdown_source_keeps_its_section_path_and_has_no_page_image(kb, capsys, tmp_path):
    from rag_assets.cli import main

    assert main(["--store", str(kb.store.root), "ask", CHAIN_LADDER, "--show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no page image (Markdown source); section: " in out, out
    assert not list(tmp_path.glob("*.png"))
