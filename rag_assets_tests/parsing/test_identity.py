"""A document's identity read from its cover, legal notice and PDF metadata, on documents built
here: each text item's box is sized for the type it is set in, as Docling records a PDF's."""

from __future__ import annotations

from docling_core.types.doc import BoundingBox, DocItemLabel, DoclingDocument, ProvenanceItem, Size

from rag_assets.index.records import SourceRecord
from rag_assets.ingest.stages import document_identity_of
from rag_assets.parsing.identity import DocumentIdentity, read_identity

BODY = (
    "Les garanties du présent contrat s'appliquent aux biens désignés aux conditions particulières, "
    "dans les limites et sous les exclusions prévues ci-après pour chacune des garanties souscrites."
)


class Pages:
    """A document written page by page, each line at a given size and height on its page."""

    def __init__(self, pages: int):
        self.document = DoclingDocument(name="policy")
        for page in range(1, pages + 1):
            self.document.add_page(page_no=page, size=Size(width=595, height=842))

    def line(self, page: int, text: str, size: float, top: float, label=DocItemLabel.TEXT, width: float | None = None):
        # one line of `size`-point type, or as many lines as a `width` column needs
        width = width or 0.55 * size * len(text)
        lines = max(1, round(0.55 * size * len(text) / width))
        box = BoundingBox(l=50, t=top, r=50 + width, b=top + 1.2 * size * lines)
        prov = ProvenanceItem(page_no=page, bbox=box, charspan=(0, len(text)))
        if label == DocItemLabel.SECTION_HEADER:
            return self.document.add_heading(text, prov=prov)
        return self.document.add_text(label=label, text=text, prov=prov)

    def body(self, pages: range) -> Pages:
        for page in pages:
            for k in range(4):
                self.line(page, BODY, 9, 300 + 60 * k, width=480)
        return self


def test_the_cover_title_block_in_the_largest_type_is_the_title():
    pages = Pages(4).body(range(2, 5))
    pages.line(1, "Santé", 11, 60)  # a category label above the name
    pages.line(1, "Allianz Prévoyance", 30, 100)
    pages.line(1, "Personne Clé", 30, 137)
    pages.line(1, "Notice d'information", 14, 230)
    pages.line(1, "Avec vous de A à Z", 18, 700)  # a slogan at the foot of the cover
    identity = read_identity(pages.document, {}, "Santé – Allianz Prévoyance")
    assert identity.title == "Allianz Prévoyance Personne Clé – Notice d'information"
    assert identity.product == "Allianz Prévoyance Personne Clé"
    assert identity.document_type == "Notice d'information"
    assert identity.branch == "prévoyance"


def test_a_form_code_is_never_the_title():
    pages = Pages(3).body(range(2, 4))
    pages.line(1, "17601FR - 2023-01 D", 24, 40)  # the form code, large, at the top
    pages.line(1, "Assurance Habitation", 28, 300)
    pages.line(1, "Conditions générales", 14, 350)
    pages.line(1, "Référence : CG_MRH_ACME_Mars_2023", 7, 400)
    metadata = {"Title": "Mod. 5751 - 01/2003"}
    identity = read_identity(pages.document, metadata, "17601FR - 2023-01 D – Assurance Habitation")
    assert identity.title == "Assurance Habitation – Conditions générales"
    assert identity.edition == "2023-01"  # the form code still dates the edition
    # nor the cover's reference code written with other separators
    coded = read_identity(pages.document, {"Title": "CG MRH ACME Mars 2023"})
    assert coded.title == "Assurance Habitation – Conditions générales"


def test_a_metadata_title_that_reads_like_one_and_is_printed_wins():
    pages = Pages(3).body(range(2, 4))
    pages.line(1, "Conditions générales", 20, 120)
    pages.line(1, "Contrat VAM", 26, 160)
    printed = read_identity(pages.document, {"Title": "Conditions générales contrat VAM"})
    assert printed.title == "Conditions générales contrat VAM" and printed.sources["title"] == "metadata"
    # a template's title the document never prints is not its title
    stale = read_identity(pages.document, {"Title": "Offre tarifaire flotte poids lourds"})
    assert stale.title == "Conditions générales – Contrat VAM"  # the cover's block, as printed


def test_a_running_header_is_never_the_title():
    pages = Pages(6).body(range(1, 7))
    for page in range(1, 7):  # on every page, in large type
        pages.line(page, "Votre contrat", 24, 30, label=DocItemLabel.SECTION_HEADER)
    pages.line(1, "Protection Juridique Famille", 20, 120)
    identity = read_identity(pages.document, {}, "Votre contrat")
    assert identity.title == "Protection Juridique Famille"
    assert identity.branch == "protection juridique"
    # with nothing else on the cover, the running header recorded at conversion is not kept either
    bare = Pages(6).body(range(1, 7))
    for page in range(1, 7):
        bare.line(page, "Votre contrat", 24, 30)
    assert read_identity(bare.document, {}, "Votre contrat").title is None


def test_the_insurer_is_read_from_the_legal_notice_not_the_broker():
    pages = Pages(3).body(range(2, 4))
    pages.line(1, "Assurance Automobile", 24, 200)
    notice = (
        "« L'assureur » dans le texte qui suit désigne Acme IARD. Entreprise régie par le Code des assurances. "
        "Société anonyme au capital de 991 967 200 €."
    )
    pages.line(2, notice, 9, 700, width=480)
    broker = "COURTIERS REUNIS au capital de 100 000 euros - 895 323 525 RCS Paris - ORIAS 21003575"
    for page in (2, 3):
        pages.line(page, broker, 7, 800, width=480)
    identity = read_identity(pages.document, {"Author": "Jean Dupont"})
    assert identity.insurer == "Acme IARD"
    assert identity.distributor == "COURTIERS REUNIS"
    assert identity.branch == "auto"


def test_the_insurer_of_a_notice_is_the_company_named_on_the_line_above_it():
    pages = Pages(2).body(range(1, 3))
    pages.line(2, "Mutuelle Exemple", 9, 700)
    pages.line(
        2, "Société d'assurance mutuelle à cotisations variables, entreprise régie par le Code des assurances.", 7, 712
    )
    identity = read_identity(pages.document, {})
    assert identity.insurer == "Mutuelle Exemple"
    # an IPID names it after "Compagnie :", and its product after "Produit :"
    ipid = Pages(2).body(range(2, 3))
    ipid.line(1, "MULTIRISQUE HABITATION", 16, 30)
    ipid.line(
        1,
        "Document d'information sur le produit d'assurance Compagnie : ZETA SA - Entreprise d'assurance "
        "immatriculée en France Produit : Multirisque Habitation Locataire - contrat individuel",
        10,
        60,
        width=430,
    )
    read = read_identity(ipid.document, {})
    assert read.insurer == "ZETA"
    assert read.product == "Multirisque Habitation Locataire"
    assert read.title == "Multirisque Habitation Locataire – Document d'information (IPID)"


def test_the_sidecar_names_win_over_what_is_read():
    pages = Pages(2).body(range(2, 3))
    pages.line(1, "Assurance Habitation", 28, 200)
    record = SourceRecord(
        document_id="d",
        original_path="/x/policy.docx",
        file_name="policy.docx",
        stored_path="/x/policy.docx",
        sha256="0",
        size_bytes=1,
        media_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        title="Multirisque Habitation Famille",
        title_given=True,
        language="fr",
        document_type=None,
        effective_date=None,
        extra={"insurer": "Assureur Dit", "branch": "habitation"},
    )
    identity = document_identity_of(pages.document, record, None)
    assert identity.title == "Multirisque Habitation Famille" and identity.insurer == "Assureur Dit"
    assert identity.sources["title"] == identity.sources["insurer"] == "sidecar"
    assert identity.document_type is None  # neither read nor given
    assert DocumentIdentity(title="Lu").with_sidecar({}) == DocumentIdentity(title="Lu")
