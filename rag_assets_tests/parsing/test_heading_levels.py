"""Heading levels from legal numbering (what heads the tree, what only heads itself), and
contents printed as headings."""

from docling_core.types.doc import BoundingBox, DocItemLabel, DoclingDocument, ProvenanceItem, SectionHeaderItem, Size

from rag_assets.parsing.structure import find_table_of_contents
from rag_assets.parsing.text_repair import LEAF_LEVEL, assign_heading_levels, heading_rank


def _document(headings: list[tuple[int, str]]) -> DoclingDocument:
    document = DoclingDocument(name="policy")
    for page in sorted({p for p, _ in headings}):
        document.add_page(page_no=page, size=Size(width=600, height=800))
    for page, text in headings:
        box = BoundingBox(l=50, t=100, r=500, b=120)
        document.add_heading(text, prov=ProvenanceItem(page_no=page, bbox=box, charspan=(0, len(text))))
    return assign_heading_levels(document)


def _levels(document: DoclingDocument) -> dict[str, int]:
    return {item.text: item.level for item, _ in document.iterate_items() if isinstance(item, SectionHeaderItem)}


def test_a_quoted_law_article_is_not_part_of_the_numbering():
    assert heading_rank("Article L 114-2 du Code des assurances") is None
    assert heading_rank("Article 2246 du Code civil") is None
    assert heading_rank("Article 7 - Résiliation") is not None
    levels = _levels(_document([(1, "Conditions générales"), (3, "I. Les garanties"),
                                (4, "Article 2246 du Code civil"), (5, "II. La résiliation")]))
    assert levels["I. Les garanties"] == levels["II. La résiliation"] == 2
    assert levels["Article 2246 du Code civil"] == LEAF_LEVEL


def test_only_the_title_page_heads_the_numbered_tree():
    # a box title of the preface (page 5) must not become the parent of every section
    levels = _levels(_document([(1, "Conditions générales protection juridique"),
                                (5, "Plafond d'intervention TTC protection juridique"),
                                (6, "1 - Le domaine d'application"), (6, "1.1 - L'objet du contrat"),
                                (7, "2 - Qui bénéficie des garanties ?")]))
    assert levels["Conditions générales protection juridique"] == 1
    assert levels["Plafond d'intervention TTC protection juridique"] == LEAF_LEVEL
    assert levels["1 - Le domaine d'application"] == levels["2 - Qui bénéficie des garanties ?"] == 2
    assert levels["1.1 - L'objet du contrat"] == 3


def test_contents_printed_as_headings_leave_the_body():
    # MAIF prints its contents as the section titles, sub-entries run together, page numbers apart
    document = DoclingDocument(name="policy")
    for page in (6, 8, 9, 10):
        document.add_page(page_no=page, size=Size(width=600, height=800))
    box = BoundingBox(l=50, t=100, r=500, b=120)

    def add(page, text, heading=False):
        prov = ProvenanceItem(page_no=page, bbox=box, charspan=(0, len(text)))
        if heading:
            return document.add_heading(text, prov=prov)
        return document.add_text(label=DocItemLabel.TEXT, text=text, prov=prov)

    contents = [add(6, "1 - Le domaine d'application du contrat", True),
                add(6, "1.1 - L'objet du contrat 1.2 - L'étendue géographique"), add(6, "8 8"),
                add(6, "2 - Qui bénéficie des garanties ?", True), add(6, "9"),
                add(6, "3 - Les garanties de la formule PJ1", True), add(6, "pages")]
    note = add(6, "Les montants en euros figurant dans le contrat sont ceux en vigueur au 1er janvier.")
    body = [add(8, "1 - Le domaine d'application du contrat", True), add(8, "Le contrat offre un accès au droit."),
            add(9, "2 - Qui bénéficie des garanties ?", True), add(10, "3 - Les garanties de la formule PJ1", True)]
    items, _ = find_table_of_contents(document)
    assert all(item in items for item in contents)
    assert note not in items and not any(item in items for item in body)
