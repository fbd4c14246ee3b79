"""Heading levels from legal numbering (what heads the tree, what only heads itself),
contents printed as headings, and chapter headings the layout took for page headers."""

from docling_core.types.doc import BoundingBox, DocItemLabel, DoclingDocument, ProvenanceItem, SectionHeaderItem, Size
from docling_core.types.doc.document import ContentLayer

from rag_assets.parsing.structure import apply_structure, find_table_of_contents
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
    levels = _levels(
        _document(
            [
                (1, "Conditions générales"),
                (3, "I. Les garanties"),
                (4, "Article 2246 du Code civil"),
                (5, "II. La résiliation"),
            ]
        )
    )
    assert levels["I. Les garanties"] == levels["II. La résiliation"] == 2
    assert levels["Article 2246 du Code civil"] == LEAF_LEVEL


def test_only_the_title_page_heads_the_numbered_tree():
    # a box title of the preface (page 5) must not become the parent of every section
    levels = _levels(
        _document(
            [
                (1, "Conditions générales protection juridique"),
                (5, "Plafond d'intervention TTC protection juridique"),
                (6, "1 - Le domaine d'application"),
                (6, "1.1 - L'objet du contrat"),
                (7, "2 - Qui bénéficie des garanties ?"),
            ]
        )
    )
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

    contents = [
        add(6, "1 - Le domaine d'application du contrat", True),
        add(6, "1.1 - L'objet du contrat 1.2 - L'étendue géographique"),
        add(6, "8 8"),
        add(6, "2 - Qui bénéficie des garanties ?", True),
        add(6, "9"),
        add(6, "3 - Les garanties de la formule PJ1", True),
        add(6, "pages"),
    ]
    note = add(6, "Les montants en euros figurant dans le contrat sont ceux en vigueur au 1er janvier.")
    body = [
        add(8, "1 - Le domaine d'application du contrat", True),
        add(8, "Le contrat offre un accès au droit."),
        add(9, "2 - Qui bénéficie des garanties ?", True),
        add(10, "3 - Les garanties de la formule PJ1", True),
    ]
    items, _ = find_table_of_contents(document)
    assert all(item in items for item in contents)
    assert note not in items and not any(item in items for item in body)


def test_contents_set_as_title_and_page_number_lines_leave_the_body():
    # RAQVAM's sommaire: each title, then its page number on a line of its own
    document = DoclingDocument(name="policy")
    for page in range(1, 41):
        document.add_page(page_no=page, size=Size(width=600, height=800))
    box = BoundingBox(l=50, t=100, r=500, b=120)

    def add(page, text):
        return document.add_text(
            label=DocItemLabel.TEXT, text=text, prov=ProvenanceItem(page_no=page, bbox=box, charspan=(0, len(text)))
        )

    titles = [
        "La protection de vos biens",
        "Les garanties dommages aux biens",
        "La garantie incendie-explosion",
        "La garantie dégâts des eaux",
        "La garantie gel",
        "La garantie vol",
        "La garantie autres dommages accidentels (sauf formule Arbitrage)",
        "La garantie bris de glace",
        "La vie du contrat",
    ]
    contents = [add(4, "pages")]
    for number, title in enumerate(titles, start=28):
        contents += [add(4, title), add(4, str(number))]
    body = [
        add(30, "La garantie gel"),
        add(30, "Le gel des canalisations est couvert."),
        add(30, "12"),
        add(31, "Seuils : 1"),
        add(31, "2"),
    ]  # a page of prose and numbers is no contents

    items, entries = find_table_of_contents(document)

    assert all(item in items for item in contents) and not any(item in items for item in body)
    assert [e.page for e in entries] == list(range(28, 37)) and entries[6].title == titles[6]


def _pages(count: int):
    """A notice of `count` pages, and `add(page, text, label, top)` placing a line on one."""
    document = DoclingDocument(name="notice")
    for page in range(1, count + 1):
        document.add_page(page_no=page, size=Size(width=600, height=800))

    def add(page, text, label=DocItemLabel.TEXT, top=300):
        prov = ProvenanceItem(page_no=page, bbox=BoundingBox(l=50, t=top, r=500, b=top + 20), charspan=(0, len(text)))
        if label == DocItemLabel.SECTION_HEADER:
            return document.add_heading(text, prov=prov)
        layer = ContentLayer.FURNITURE if label == DocItemLabel.PAGE_HEADER else ContentLayer.BODY
        return document.add_text(label=label, text=text, prov=prov, content_layer=layer)

    return document, add


def test_a_chapter_title_taken_for_a_page_header_heads_its_chapter_again():
    # Allianz prints each chapter's title at the top of its first page; the layout calls it a
    # page header, and the synthesis table then sat under the previous chapter's heading
    document, add = _pages(8)

    add(1, "Allianz Prévoyance", DocItemLabel.SECTION_HEADER)
    add(2, "3 Quels services propose votre espace client ?", DocItemLabel.SECTION_HEADER)
    add(2, "Vous trouverez dans votre espace client le détail des garanties.")
    for line in (
        "Tableau de synthèse des garanties et options ------ 3",
        "Les conditions d'adhésion ------ 5",
        "I. Le Contrat ------ 5",
        "Lexique ------ 8",
    ):
        add(3, line)
    add(4, "Tableau de synthèse des garanties et options", DocItemLabel.PAGE_HEADER, top=20)
    add(4, "Rente éducation : entre 900 € et 50 000 €/an/enfant.")
    for page in (5, 6, 7):  # a running title on every page of its chapter stays furniture
        add(page, "Les conditions d'adhésion", DocItemLabel.PAGE_HEADER, top=20)
    add(5, "I. Le Contrat", DocItemLabel.SECTION_HEADER)
    add(5, "Le contrat est souscrit par l'association.")
    add(8, "Lexique", DocItemLabel.PAGE_HEADER, top=20)
    add(8, "Lexique", DocItemLabel.SECTION_HEADER)  # already a heading: not doubled
    assign_heading_levels(document)

    structure = apply_structure(document)

    assert structure["headings_restored_from_page_headers"] == [4]
    headings = [(h.text, h.level) for h, _ in document.iterate_items() if isinstance(h, SectionHeaderItem)]
    assert ("Tableau de synthèse des garanties et options", 2) in headings  # beside "I. Le Contrat"
    assert ("I. Le Contrat", 2) in headings
    assert [t for t, _ in headings].count("Lexique") == 1
    assert "Les conditions d'adhésion" not in [t for t, _ in headings]
    order = [getattr(i, "text", "") for i, _ in document.iterate_items()]
    assert order.index("Tableau de synthèse des garanties et options") < order.index(
        "Rente éducation : entre 900 € et 50 000 €/an/enfant."
    )


def test_the_top_line_of_a_page_taken_for_a_page_header_goes_back_into_the_body():
    # no contents: the layout model calls a page's first line a header (a close call that
    # differs between CPUs); a line on one page only is body, a running title repeats
    document, add = _pages(5)

    for page in range(1, 6):  # a running title with the page number: furniture
        add(page, f"Conditions générales - page {page} sur 5", DocItemLabel.PAGE_HEADER, top=10)
    add(1, "Qu'est-ce qui est assuré ?", DocItemLabel.SECTION_HEADER)
    add(1, "L'incendie et le dégât des eaux.")
    add(2, "Où suis-je couvert ?", DocItemLabel.PAGE_HEADER, top=20)
    add(2, "En France métropolitaine.")
    add(
        3,
        "Vous êtes reconnu en état d'incapacité temporaire totale lorsque, temporairement,",
        DocItemLabel.PAGE_HEADER,
        top=20,
    )
    add(3, "vous ne pouvez exercer aucune activité.")
    assign_heading_levels(document)

    structure = apply_structure(document)

    assert structure["headings_restored_from_page_headers"] == [2]
    assert structure["paragraphs_restored_from_page_headers"] == [3]
    body = [(type(i).__name__, i.text) for i, _ in document.iterate_items() if getattr(i, "text", None)]
    assert ("SectionHeaderItem", "Où suis-je couvert ?") in body
    assert body.index(("SectionHeaderItem", "Où suis-je couvert ?")) < body.index(
        ("TextItem", "En France métropolitaine.")
    )
    assert ("TextItem", "Vous êtes reconnu en état d'incapacité temporaire totale lorsque, temporairement,") in body
    assert not any(text.startswith("Conditions générales - page") for _, text in body)


def test_a_line_in_the_middle_of_a_sentence_is_no_heading():
    # MAIF's clothing rule came out as text / "heading" / text, the heading in lowercase
    document = DoclingDocument(name="policy")
    document.add_page(page_no=24, size=Size(width=600, height=800))

    def add(text, heading=False, top=100):
        prov = ProvenanceItem(page_no=24, bbox=BoundingBox(l=50, t=top, r=500, b=top + 12), charspan=(0, len(text)))
        return (
            document.add_heading(text, prov=prov) if heading else document.add_text(DocItemLabel.TEXT, text, prov=prov)
        )

    add("3.2 - L'indemnisation de vos biens", heading=True, top=80)
    add(
        "Les vêtements, accessoires d'habillement, linge de maison sont indemnisés à concurrence de leur valeur",
        top=100,
    )
    add(
        "résiduelle au jour du sinistre, c'est-à-dire en appliquant à leur valeur de remplacement à neuf "
        "un abattement de",
        heading=True,
        top=112,
    )
    add("20 % par année d'âge ou fraction d'année.", top=124)
    add("Valeur d'achat 2", top=200)  # a grid's label read as text: its next "heading" stays where it is
    add("de 6 à 12 mois 1", heading=True, top=212)

    structure = apply_structure(document)

    assert structure["headings_joined_to_their_paragraph"] == 1
    texts = [i.text for i, _ in document.iterate_items() if not isinstance(i, SectionHeaderItem)]
    assert (
        "Les vêtements, accessoires d'habillement, linge de maison sont indemnisés à concurrence de leur valeur "
        "résiduelle au jour du sinistre, c'est-à-dire en appliquant à leur valeur de remplacement à neuf un "
        "abattement de 20 % par année d'âge ou fraction d'année."
    ) in texts
    headings = [i.text for i, _ in document.iterate_items() if isinstance(i, SectionHeaderItem)]
    assert headings == ["3.2 - L'indemnisation de vos biens", "de 6 à 12 mois 1"]
