"""Parents and children on real Docling documents converted from Markdown."""

import pytest
from docling.document_converter import DocumentConverter

from rag_assets.embedding import get_embedder
from rag_assets.ingest.chunking import ParentChunker
from rag_assets.ingest.sections import build_parents

ROWS = "\n".join(f"| Sinistre {i} | Zone {i % 3} | {1000 + i} 000 € |" for i in range(120))
LONG = " ".join(f"La garantie numéro {i} couvre un montant de 1 250 000 € par sinistre." for i in range(90))
MARKDOWN = f"""# Conditions générales

Préambule du contrat.

## 1. Garanties

### 1.1 Dommages

{LONG}

### 1.2 Tableau

Tableau 2 – Sinistres par zone

| Événement | Zone | Montant |
|---|---|---|
{ROWS}

## 2. Exclusions

Les dommages intentionnels sont exclus.
"""


@pytest.fixture(scope="module")
def parents(tmp_path_factory):
    path = tmp_path_factory.mktemp("md") / "cg.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    document = DocumentConverter().convert(str(path)).document
    return build_parents(document, "doc-1", get_embedder().count_tokens)


@pytest.fixture(scope="module")
def chunker():
    return ParentChunker(get_embedder().count_tokens, max_tokens=400)


def test_one_parent_per_section_with_heading_path(parents):
    paths = [p.heading_path for p in parents]
    assert ["Conditions générales", "1. Garanties", "1.1 Dommages"] in paths
    assert ["Conditions générales", "2. Exclusions"] == paths[-1]
    assert all(not p.text.startswith("#") for p in parents)


def test_table_is_one_block_in_one_parent_with_its_caption(parents):
    tables = [b for p in parents for b in p.blocks if b.kind == "table"]
    assert len(tables) == 1
    assert tables[0].caption == "Tableau 2 – Sinistres par zone"
    assert sum(p.table_count for p in parents) == 1


def test_parent_ids_are_stable(parents, tmp_path):
    path = tmp_path / "cg.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    again = build_parents(DocumentConverter().convert(str(path)).document, "doc-1", get_embedder().count_tokens)
    assert [p.parent_id for p in again] == [p.parent_id for p in parents]


def test_children_partition_each_parent_within_budget(parents, chunker):
    for parent in parents:
        children = chunker.chunk(parent, title="CG Habitation")
        assert "".join(c.text for c in children) == parent.text
        assert [c.start for c in children][0] == 0 and children[-1].end == len(parent.text)
        assert all(a.end == b.start for a, b in zip(children, children[1:]))
        assert all(c.token_count <= 400 for c in children)
        assert all(c.contextualized.startswith("CG Habitation\nConditions générales") for c in children)


def test_long_paragraph_split_at_sentences_never_inside_a_number(parents, chunker):
    parent = next(p for p in parents if p.heading_path[-1] == "1.1 Dommages")
    children = chunker.chunk(parent)
    assert len(children) > 1
    for child in children:
        assert child.text.strip().endswith("sinistre.")


def test_table_chunks_repeat_the_header_and_caption(parents, chunker):
    parent = next(p for p in parents if p.table_count)
    children = [c for c in chunker.chunk(parent) if c.kind == "table"]
    assert len(children) > 1
    for child in children:
        assert "| Événement | Zone | Montant |" in child.contextualized
        assert "Tableau 2 – Sinistres par zone" in child.contextualized
        for line in child.text.strip().splitlines():
            if not line or line.startswith("Tableau 2"):  # the caption opens the first chunk
                continue
            assert line.startswith("|") and line.endswith("|"), "rows are never cut"


SHORT_SECTIONS = """# Notice

## III. Les garanties en cas d'incapacité

### 1. Délai d'attente

Néant.

### 2. Franchise

La franchise est de 30 jours.

### 3. Montant

L'indemnité journalière est versée à partir du 31e jour, dans la limite de 300 € par jour.

## IV. Les exclusions

Les conséquences de la guerre sont exclues.
"""


def test_short_sections_join_the_next_ones_under_their_heading(tmp_path):
    path = tmp_path / "notice.md"
    path.write_text(SHORT_SECTIONS, encoding="utf-8")
    document = DocumentConverter().convert(str(path)).document
    count = get_embedder().count_tokens
    separate = build_parents(document, "doc-2", count)
    joined = build_parents(document, "doc-2", count, min_tokens=40)
    assert len(joined) < len(separate)
    garanties = next(p for p in joined if "Néant." in p.text)
    # the common heading path, the sub-headings as lines of the text, in reading order
    assert garanties.heading_path == ["Notice", "III. Les garanties en cas d'incapacité"]
    assert (
        garanties.text.index("1. Délai d'attente")
        < garanties.text.index("Néant.")
        < garanties.text.index("2. Franchise")
        < garanties.text.index("30 jours")
    )
    # never across a heading of the same level as the joined sections' parent
    assert not any("Néant." in p.text and "guerre" in p.text for p in joined)
    # every body item still in exactly one parent
    assert sorted(r for p in joined for r in p.item_refs) == sorted(r for p in separate for r in p.item_refs)


def test_a_group_of_short_sections_stays_within_its_first_sections_heading():
    from rag_assets.ingest.sections import Block, _merge_short_sections

    contract = ["Contrat"]
    sections = [
        (contract + ["Article 4 – Durée"], 60),
        (contract + ["Article 5 – Prix"], 80),
        (contract + ["Article 6 – Obligations"], 80),
        (contract + ["Article 7 – Résiliation", "7.1 Préavis"], 70),
        (contract + ["Article 7 – Résiliation", "7.2 Manquement"], 80),
        (contract + ["Article 7 – Résiliation", "7.3 Réversibilité"], 50),
        (contract + ["Article 8 – Données", "8.1 Confidentialité"], 60),
        (contract + ["Article 9 – Litiges"], 90),
        (contract + ["Article 9 – Litiges", "9.1 Droit applicable"], 40),
        (contract + ["Article 10 – Divers"], 40),
    ]
    merged = _merge_short_sections(
        [(path, [Block("text", path[-1], [path[-1]], [1])], tokens) for path, tokens in sections], 350, 2000
    )
    heads = [(path, [b.text for b in blocks if b.kind == "text"]) for path, blocks, _ in merged]
    assert heads == [
        # sibling articles without subsections join under their common heading
        (contract, ["Article 4 – Durée", "Article 5 – Prix", "Article 6 – Obligations"]),
        # an article with subsections is a group of its own: its clauses keep its heading in their path
        (contract + ["Article 7 – Résiliation"], ["7.1 Préavis", "7.2 Manquement", "7.3 Réversibilité"]),
        (contract + ["Article 8 – Données", "8.1 Confidentialité"], ["8.1 Confidentialité"]),
        # a heading's own text takes its subsections, and no sibling after them
        (contract + ["Article 9 – Litiges"], ["Article 9 – Litiges", "9.1 Droit applicable"]),
        (contract + ["Article 10 – Divers"], ["Article 10 – Divers"]),
    ]


def test_text_set_inside_a_picture_is_indexed_with_it():
    """Docling makes the lines inside a picture its children, which reading order skips: a
    table the layout took for a picture (MAIF Vam p.38) would be lost from every parent."""
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    from rag_assets.ingest.stages import _body_items

    document = DoclingDocument(name="vam")
    document.add_heading("Véhicule de remplacement", level=1)
    picture = document.add_picture()
    for text in ("Vol du véhicule avec disparition", "20 jours", "Panne", "7 jours"):
        document.add_text(DocItemLabel.TEXT, text, parent=picture)
    logo = document.add_picture()  # no caption, no text: nothing to index, nothing lost
    [parent] = build_parents(document, "doc-3", lambda t: len(t.split()))
    [block] = [b for b in parent.blocks if b.kind == "picture"]
    assert block.text == "Vol du véhicule avec disparition 20 jours Panne 7 jours"
    assert picture.self_ref in _body_items(document) and logo.self_ref not in _body_items(document)
    assert picture.self_ref in parent.item_refs


def test_a_table_title_heading_no_table_adopts_stays_a_heading():
    """The layout calls a table's caption a heading; a "Tableau …" heading followed by a
    sentence is the chapter it says (Allianz's "Tableau de synthèse des garanties et
    options"), a "Formule PJ 2" column label followed by text stays text, and a caption
    heading followed by its table names the table."""
    from docling_core.types.doc import DocItemLabel, DoclingDocument, TableCell, TableData

    document = DoclingDocument(name="notice")
    document.add_heading("3 Quels services propose votre espace client ?", level=2)
    document.add_text(DocItemLabel.TEXT, "Vous trouverez dans votre espace client le détail des garanties.")
    document.add_heading("Tableau de synthèse des garanties et options", level=2)
    document.add_text(DocItemLabel.TEXT, "Voici la synthèse des garanties et options.")
    document.add_heading("Formule PJ 2", level=2)
    document.add_text(DocItemLabel.TEXT, "Plafond d'intervention : 50 000 €.")
    document.add_heading("Tableau 2 – Rentes", level=2)
    cells = [
        TableCell(
            text=t,
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=c,
            end_col_offset_idx=c + 1,
            column_header=r == 0,
        )
        for r, row in enumerate([["Garantie", "Montant"], ["Rente éducation", "900 € à 50 000 €"]])
        for c, t in enumerate(row)
    ]
    document.add_table(data=TableData(num_rows=2, num_cols=2, table_cells=cells))
    parents = build_parents(document, "doc-4", lambda t: len(t.split()))
    paths = {p.heading_path[-1] for p in parents}
    assert "Tableau de synthèse des garanties et options" in paths
    assert "Formule PJ 2" not in paths and any("Formule PJ 2" in p.text for p in parents)
    [table] = [b for p in parents for b in p.blocks if b.kind == "table"]
    assert table.caption == "Tableau 2 – Rentes"


def test_a_paragraph_the_layout_cut_mid_sentence_is_joined_again():
    from rag_assets.ingest.sections import Block, _joined_continuations

    def block(kind, text, lines=()):
        return ("block", Block(kind, text, [f"#/texts/{text[:3]}"], [1], lines=[list(line) for line in lines]))

    events = [
        block("list", "● de l'usage de drogues non médi-", [(0, 33, 1, 0, 0, 9, 1)]),
        block("text", "calement prescrits,", [(0, 19, 1, 0, 2, 9, 3)]),
        block("text", "ou de l'ivresse.", [(0, 16, 2, 0, 0, 9, 1)]),
        block("text", "Nous ne garantissons pas"),
        ("heading", 2, "Article 3"),
        block("text", "les dommages intentionnels."),
        block("text", "Une phrase finie."),
        block("text", "une autre qui commence en minuscule."),
    ]
    out = list(_joined_continuations(iter(events)))
    kinds = [(e[0], e[1].text if e[0] == "block" else e[2]) for e in out]
    assert kinds == [
        # a hyphenated word made whole, the next line joined with a space, pages and refs kept
        ("block", "● de l'usage de drogues non médicalement prescrits, ou de l'ivresse."),
        # a heading between them: not the same paragraph
        ("block", "Nous ne garantissons pas"),
        ("heading", "Article 3"),
        ("block", "les dommages intentionnels."),
        # a sentence that closed is not continued, whatever the case of the next
        ("block", "Une phrase finie."),
        ("block", "une autre qui commence en minuscule."),
    ]
    joined = out[0][1]
    assert joined.kind == "list" and joined.pages == [1] and len(joined.refs) == 3
    # each line's offsets point at its words in the joined text
    starts = [joined.text[start:end] for start, end, *_ in joined.lines]
    assert starts == ["● de l'usage de drogues non médi", "calement prescrits,", "ou de l'ivresse."]
