"""Look-alike pages for the golden-page tests, written by fpdf2 at test time.

Each imitates a hard layout of the insurers' policies (a ruled grid of guarantees, a two-column
body, a contents page with dotted leaders, a table continued on the next page) with text of our
own, so that the golden tests of the PDF stages run in a fresh clone, without ../shared.
"""

from __future__ import annotations

from pathlib import Path

from rag_assets_tests.parsing.test_text_layer import PAGE, _fpdf

MARGIN = 36
BODY_TOP = 85  # below the band where a line reads as a running header
WIDTH = PAGE[0] - 2 * MARGIN
LINE, PADDING = 13, 4
ROW_HEIGHT = LINE + 2 * PADDING  # a table row of one line

# 1. A ruled grid of guarantees, some cells on two lines
GRID_HEADING = "Article 3 - Tableau des garanties"
GRID_INTRO = (
    "Le tableau ci-dessous indique, pour chaque garantie, le plafond de notre intervention et la franchise "
    "qui reste à votre charge."
)
GRID_TABLE = [
    ("Garantie", "Plafond", "Franchise"),
    ("Incendie et explosion", "150 000 euros", "200 euros"),
    ("Dégâts des eaux et gel des canalisations", "40 000 euros", "250 euros"),
    ("Vol et vandalisme", "15 000 euros", "10 % du dommage, minimum 300 euros"),
    ("Bris de glace", "3 000 euros", "Aucune"),
    ("Catastrophes naturelles", "Valeur de reconstruction", "Franchise légale"),
]
GRID_AFTER_HEADING = "Article 4 - Règlement des sinistres"
GRID_AFTER = (
    "Nous versons l'indemnité dans les quinze jours qui suivent l'accord des parties ou la décision de justice "
    "devenue définitive."
)

# 2. Two columns under a heading across the page
COLUMNS_HEADING = "Chapitre 2 - La vie du contrat"
LEFT_HEADING = "Article 5 - Cotisation"
LEFT = [
    "La cotisation est payable d'avance chaque année à la date indiquée aux conditions particulières. "
    "Elle comprend les taxes et contributions prévues par la loi.",
    "À défaut de paiement dans les dix jours de son échéance, nous pouvons suspendre les garanties "
    "trente jours après l'envoi d'une lettre de mise en demeure.",
]
RIGHT_HEADING = "Article 6 - Résiliation"
RIGHT = [
    "Vous pouvez résilier le contrat chaque année à son échéance en nous adressant une lettre ou un "
    "courrier électronique deux mois au moins avant cette date.",
    "Nous pouvons résilier le contrat après un sinistre, et vous pouvez alors résilier vos autres "
    "contrats souscrits auprès de nous dans le délai d'un mois.",
]

# 3. A contents page, then the articles it lists (the pages its entries give)
CONTENTS_HEADING = "Sommaire"
CONTENTS = [
    ("Article 1 - Objet du contrat", 2),
    ("Article 2 - Personnes assurées", 2),
    ("Article 3 - Étendue territoriale", 2),
    ("Article 4 - Exclusions générales", 3),
    ("Article 5 - Déclaration du sinistre", 3),
    ("Article 6 - Prescription", 3),
]
CONTENTS_BODY = {
    "Article 1 - Objet du contrat": "Le contrat garantit les biens désignés aux conditions particulières.",
    "Article 2 - Personnes assurées": "Sont assurés le souscripteur, son conjoint et leurs enfants à charge.",
    "Article 3 - Étendue territoriale": "Les garanties s'exercent en France métropolitaine et dans les DROM.",
    "Article 4 - Exclusions générales": "Sont exclus les dommages causés intentionnellement par l'assuré.",
    "Article 5 - Déclaration du sinistre": "Vous déclarez le sinistre dans les cinq jours ouvrés qui suivent.",
    "Article 6 - Prescription": "Toute action dérivant du contrat est prescrite par deux ans.",
}

# 4. A table begun at the foot of page 1 and continued at the top of page 2, header repeated
ACROSS_HEADING = "Article 7 - Délais de carence"
ACROSS_INTRO = [
    "Les garanties prennent effet après un délai de carence qui dépend de la prestation. Ces délais "
    "courent à compter de la date d'effet de l'adhésion indiquée sur votre certificat.",
    "Aucun délai de carence ne s'applique lorsque l'hospitalisation fait suite à un accident survenu "
    "après la date d'effet, ni lorsque vous étiez couvert par un contrat équivalent.",
    "Les soins engagés pendant le délai de carence restent à votre charge, même si leur remboursement "
    "est demandé après la fin de ce délai.",
]
ACROSS_HEADER = ("Prestation", "Délai de carence", "Justificatif")
ACROSS_PAGE_1 = [
    ("Hospitalisation", "Aucun", "Bulletin de situation"),
    ("Consultations", "Aucun", "Feuille de soins"),
    ("Maternité", "Neuf mois", "Acte de naissance"),
    ("Optique", "Trois mois", "Facture détaillée"),
    ("Dentaire", "Six mois", "Devis signé"),
]
ACROSS_PAGE_2 = [
    ("Audioprothèses", "Six mois", "Prescription médicale"),
    ("Cures thermales", "Un an", "Accord de la caisse"),
    ("Médecines douces", "Trois mois", "Facture acquittée"),
]
ACROSS_AFTER_HEADING = "Article 8 - Renonciation"
ACROSS_AFTER = (
    "Vous pouvez renoncer à votre adhésion dans les trente jours qui suivent sa conclusion, par lettre "
    "recommandée avec avis de réception."
)


def _new_pdf():
    pdf = _fpdf()
    pdf.set_margins(MARGIN, MARGIN)
    return pdf


def _heading(pdf, text: str) -> None:
    pdf.set_font("Helvetica", style="B", size=13)
    pdf.multi_cell(0, 17, text, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(6)


def _paragraph(pdf, text: str) -> None:
    pdf.set_font("Helvetica", size=10)
    pdf.multi_cell(0, 13, text, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(7)


def _grid(pdf, rows: list[tuple[str, ...]], widths: tuple[int, ...]) -> None:
    """A ruled table, the first row bold; a cell too long for its column wraps inside its box."""
    pdf.set_font("Helvetica", size=10)
    with pdf.table(
        col_widths=widths,
        width=sum(widths),
        align="LEFT",
        line_height=LINE,
        padding=PADDING,
        first_row_as_headings=False,
        text_align="LEFT",
    ) as table:
        for index, cells in enumerate(rows):
            pdf.set_font("Helvetica", style="B" if index == 0 else "", size=10)
            row = table.row()
            for text in cells:
                row.cell(text)
    pdf.ln(12)


def grid_table_pdf(path: Path) -> None:
    pdf = _new_pdf()
    pdf.add_page()
    pdf.set_y(BODY_TOP)
    _heading(pdf, GRID_HEADING)
    _paragraph(pdf, GRID_INTRO)
    _grid(pdf, GRID_TABLE, (130, 90, 128))
    _heading(pdf, GRID_AFTER_HEADING)
    _paragraph(pdf, GRID_AFTER)
    pdf.output(str(path))


def two_columns_pdf(path: Path) -> None:
    pdf = _new_pdf()
    pdf.add_page()
    pdf.set_y(BODY_TOP)
    _heading(pdf, COLUMNS_HEADING)
    top, gutter = pdf.get_y() + 4, 20
    column = (WIDTH - gutter) / 2
    for x, heading, paragraphs in (
        (MARGIN, LEFT_HEADING, LEFT),
        (MARGIN + column + gutter, RIGHT_HEADING, RIGHT),
    ):
        # the column's margins: each line, and each line break, stays inside it
        pdf.set_left_margin(x)
        pdf.set_right_margin(PAGE[0] - x - column)
        pdf.set_xy(x, top)
        _heading(pdf, heading)
        for paragraph in paragraphs:
            _paragraph(pdf, paragraph)
    pdf.output(str(path))


def contents_pdf(path: Path) -> None:
    pdf = _new_pdf()
    pdf.add_page()
    pdf.set_y(BODY_TOP)
    _heading(pdf, CONTENTS_HEADING)
    pdf.set_font("Helvetica", size=11)
    for title, page in CONTENTS:
        # dotted leaders from the title to the page number, flush right
        room = WIDTH - pdf.get_string_width(f"{title}  {page}")
        dots = "." * int(room / pdf.get_string_width("."))
        pdf.cell(WIDTH, 22, f"{title} {dots} {page}", new_x="LMARGIN", new_y="NEXT")
    for page in sorted({page for _, page in CONTENTS}):
        pdf.add_page()
        pdf.set_y(BODY_TOP)
        for title, on in CONTENTS:
            if on == page:
                _heading(pdf, title)
                _paragraph(pdf, CONTENTS_BODY[title])
    pdf.output(str(path))


def table_across_pages_pdf(path: Path) -> None:
    pdf = _new_pdf()
    pdf.add_page()
    pdf.set_y(BODY_TOP)
    _heading(pdf, ACROSS_HEADING)
    for paragraph in ACROSS_INTRO:
        _paragraph(pdf, paragraph)
    pdf.set_y(PAGE[1] - MARGIN - ROW_HEIGHT * (1 + len(ACROSS_PAGE_1)))  # the table ends at the foot of the page
    _grid(pdf, [ACROSS_HEADER, *ACROSS_PAGE_1], (120, 100, 128))
    pdf.add_page()
    pdf.set_y(MARGIN + 20)
    _grid(pdf, [ACROSS_HEADER, *ACROSS_PAGE_2], (120, 100, 128))
    _heading(pdf, ACROSS_AFTER_HEADING)
    _paragraph(pdf, ACROSS_AFTER)
    pdf.output(str(path))
