"""(Re)generate the binary sample documents of the embedded corpus.

Writes, next to this script:

* ``police-habitation-multirisque.pdf``  (fpdf2)
* ``contrat-maintenance-MX-200.docx``    (python-docx)

The HTML, Markdown and ``*.meta.yaml`` files of the corpus are written by hand
and are not touched by this script.

Output is deterministic: creation dates and metadata are fixed and the DOCX
zip entries get a fixed timestamp, so re-running with the same library
versions produces byte-identical files.

Usage::

    python data/samples/generate.py
"""

from __future__ import annotations

import io
import zipfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
PDF_NAME = "police-habitation-multirisque.pdf"
DOCX_NAME = "contrat-maintenance-MX-200.docx"

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONT_REGULAR = FONT_DIR / "DejaVuSans.ttf"
FONT_BOLD = FONT_DIR / "DejaVuSans-Bold.ttf"

# --------------------------------------------------------------------------
# PDF: conditions générales Habitation (Assurances du Littoral)
# --------------------------------------------------------------------------

PDF_DATE = datetime(2023, 1, 1, 9, 0, 0, tzinfo=timezone.utc)
HEADER_TEXT = "Conditions générales Habitation — Page {page} sur {nb}"

# Each block is (kind, payload):
#   ("h1", "1. Objet du contrat")        numbered section heading
#   ("h2", "3.1 Tableau des franchises") sub-heading
#   ("p", "text")                        paragraph (may contain an explicit
#                                        hyphenated line break "assu-\nrance")
#   ("li", "text")                       dash list item
#   ("table", None)                      the deductibles table (section 3.1)
#   ("keep", "75")                       new page unless 75 mm remain
POLICY_BLOCKS: list[tuple[str, str | None]] = [
    ("p",
     "Le présent document constitue les conditions générales du contrat "
     "Habitation Multirisque proposé par Assurances du Littoral. Il est "
     "complété par les conditions particulières, qui précisent l'adresse du "
     "bien assuré, sa zone de risque, les garanties souscrites et le montant "
     "de la cotisation. En cas de contradiction, les conditions particulières "
     "prévalent sur les conditions générales."),
    ("h1", "1. Objet du contrat"),
    ("p",
     "Le contrat a pour objet de garantir, dans les limites et sous les "
     "réserves prévues ci-après, les dommages matériels subis par les biens "
     "immobiliers et mobiliers de l'assuré situés à l'adresse indiquée aux "
     "conditions particulières, ainsi que la responsabilité civile de l'assuré "
     "et des membres de sa famille vivant sous son toit. Il s'applique à la "
     "résidence principale comme à la résidence secondaire, que l'assuré en "
     "soit propriétaire occupant, propriétaire non occupant ou locataire. Le "
     "contrat est régi par le Code des assurances."),
    ("h2", "1.1 Définitions"),
    ("p",
     "Assuré : le souscripteur désigné aux conditions particulières, son "
     "conjoint ou partenaire, ainsi que les personnes vivant habituellement "
     "à son foyer. Sinistre : la survenance d'un événement de nature à "
     "entraîner la garantie du contrat. Franchise : la part du dommage qui "
     "reste, dans tous les cas, à la charge de l'assuré ; elle est déduite de "
     "l'indemnité due au titre de chaque sinistre."),
    ("p",
     "Zone de risque : la zone dans laquelle se situe le bien assuré, "
     "déterminée lors de la souscription d'après le plan de prévention du "
     "risque inondation (PPRI) de la commune. La Zone A regroupe les communes "
     "ou quartiers classés en aléa fort ; la Zone B regroupe ceux classés en "
     "aléa modéré ou faible. La zone retenue figure aux conditions "
     "particulières."),
    ("h1", "2. Garanties"),
    ("p",
     "Les garanties ci-dessous sont accordées lorsqu'elles sont mentionnées "
     "aux conditions particulières. Pour chaque garantie, la franchise "
     "applicable est indiquée au tableau des franchises (section 3.1). Les "
     "plafonds d'indemnisation sont fixés aux conditions particulières."),
    ("h2", "2.1 Incendie et événements assimilés"),
    ("p",
     "Sont garantis les dommages causés par l'incendie, l'explosion, "
     "l'implosion, la chute de la foudre, ainsi que par le choc d'un véhicule "
     "terrestre dont ni l'assuré ni une personne dont il est civilement "
     "responsable n'a la garde. Les frais de démolition, de déblais et de "
     "mise en conformité rendus nécessaires par le sinistre sont pris en "
     "charge dans la limite indiquée aux conditions particulières."),
    ("h2", "2.2 Dégâts des eaux"),
    ("p",
     "Sont garantis les dommages causés par les fuites, ruptures ou "
     "débordements de conduites non enterrées, d'appareils à effet d'eau, de "
     "chéneaux et de gouttières, ainsi que les infiltrations accidentelles "
     "au travers des toitures et des joints d'étanchéité aux pourtours des "
     "installations sanitaires. Les frais de recherche de fuite sont pris en "
     "charge lorsqu'ils ont été engagés avec l'accord préalable de l'assureur."),
    ("h2", "2.3 Événements climatiques"),
    ("p",
     "Sont garantis les dommages causés par la tempête, la grêle et le poids "
     "de la neige sur les toitures, lorsque ces phénomènes ont une intensité "
     "telle qu'ils détruisent ou endommagent un certain nombre de bâtiments de "
     "bonne construction dans la commune du bien sinistré ou dans les communes "
     "avoisinantes. Sont également garantis les dommages causés par "
     "l'inondation, c'est-à-dire le débordement d'un cours d'eau, la "
     "submersion marine ou le ruissellement des eaux de pluie, lorsque "
     "l'événement ne fait pas l'objet d'un arrêté de catastrophe naturelle. "
     "Pour chacun de ces événements, la franchise applicable est indiquée au "
     "tableau des franchises ; elle dépend de la nature de l'événement et, "
     "pour l'inondation, de la zone de risque du bien assuré."),
    ("p",
     "Est considérée comme tempête nommée toute tempête ou tout ouragan ayant "
     "reçu un nom de la part d'un service météorologique national ou "
     "international reconnu. Lorsqu'une tempête nommée est à l'origine du "
     "sinistre, la franchise « Tempête nommée (ouragan) » s'applique en lieu "
     "et place de la franchise « Tempête (vent) »."),
    ("h2", "2.4 Catastrophes naturelles"),
    ("p",
     "Conformément aux articles L125-1 et suivants du Code des assurances, "
     "sont garantis les dommages matériels directs ayant eu pour cause "
     "déterminante l'intensité anormale d'un agent naturel, lorsque l'état de "
     "catastrophe naturelle a été constaté par un arrêté interministériel "
     "publié au Journal officiel. La franchise applicable est alors la "
     "franchise légale fixée par la réglementation en vigueur."),
    ("h2", "2.5 Vol et vandalisme"),
    ("p",
     "Sont garantis la disparition, la destruction ou la détérioration des "
     "biens assurés à la suite d'un vol ou d'une tentative de vol commis à "
     "l'intérieur des locaux, avec effraction, escalade, usage de fausses "
     "clés ou violences, ainsi que les actes de vandalisme commis à "
     "l'occasion d'un vol. Les mesures de protection exigées figurent aux "
     "conditions particulières ; leur non-respect entraîne une réduction de "
     "l'indemnité."),
    ("h2", "2.6 Responsabilité civile vie privée"),
    ("p",
     "L'assureur garantit les conséquences pécuniaires de la responsabilité "
     "civile que l'assuré peut encourir en raison des dommages corporels, "
     "matériels et immatériels consécutifs causés à des tiers au cours de sa "
     "vie privée, y compris du fait de ses animaux domestiques et des biens "
     "immobiliers désignés aux conditions particulières."),
    ("h1", "3. Franchises"),
    ("p",
     "Une franchise est appliquée à chaque sinistre. Son montant dépend de "
     "l'événement à l'origine du sinistre et, le cas échéant, de la zone de "
     "risque dans laquelle se trouve le bien assuré. Les montants sont "
     "exprimés par sinistre et restent à la charge de l'assuré ; ils ne "
     "peuvent faire l'objet d'aucune assurance complémentaire."),
    ("keep", "75"),  # keep 3.1 heading, intro and table on one page
    ("h2", "3.1 Tableau des franchises"),
    ("p",
     "Le tableau ci-dessous fixe la franchise applicable selon l'événement et "
     "la zone de risque mentionnée aux conditions particulières."),
    ("table", None),
    ("h2", "3.2 Modalités d'application"),
    ("p",
     "Lorsqu'un même sinistre relève de plusieurs événements, seule la "
     "franchise la plus élevée est appliquée. Lorsque l'événement fait "
     "l'objet d'un arrêté de catastrophe naturelle, la franchise légale se "
     "substitue à celle du tableau. La franchise est déduite du montant de "
     "l'indemnité après application, le cas échéant, de la règle "
     "proportionnelle et de la vétusté."),
    ("h1", "4. Exclusions"),
    ("p",
     "Outre les exclusions propres à chaque garantie, ne sont jamais "
     "garantis :"),
    ("li",
     "les dommages causés intentionnellement par l'assuré ou avec sa "
     "complicité ;"),
    ("li",
     "les dommages résultant de la guerre étrangère ou de la guerre civile, "
     "d'émeutes ou de mouvements populaires, sauf disposition contraire des "
     "conditions particulières ;"),
    ("li",
     "les dommages d'origine nucléaire ou causés par toute source de "
     "rayonnements ionisants ;"),
    ("li",
     "les dommages résultant d'un défaut d'entretien ou de réparation "
     "caractérisé et connu de l'assuré, notamment de la toiture, des "
     "canalisations et des gouttières ;"),
    ("li",
     "les dommages causés par les remontées de nappe phréatique, sauf "
     "lorsqu'ils sont couverts au titre de la garantie Catastrophes "
     "naturelles ;"),
    ("li",
     "les amendes et les sanctions pénales infligées personnellement à "
     "l'assuré."),
    ("h1", "5. Déclaration de sinistre"),
    ("p",
     "Sauf cas fortuit ou de force majeure, l'assuré doit déclarer le "
     "sinistre dès qu'il en a connaissance et au plus tard dans les cinq (5) "
     "jours ouvrés, par écrit ou par téléphone auprès de son conseiller "
     "habituel ou directement auprès du service sinistres de sa compagnie "
     "d'assu-\nrance. Ce délai est "
     "ramené à deux (2) jours ouvrés en cas de vol ; il est porté à trente "
     "(30) jours après la publication de l'arrêté interministériel en cas de "
     "catastrophe naturelle."),
    ("p",
     "La déclaration indique la date, le lieu, les circonstances et les "
     "causes connues ou présumées du sinistre, la nature et le montant "
     "approximatif des dommages, ainsi que les coordonnées des éventuels "
     "tiers impliqués et témoins. En cas de vol ou de vandalisme, l'assuré "
     "dépose plainte auprès des autorités de police ou de gendarmerie et en "
     "transmet le récépissé à l'assureur."),
    ("p",
     "L'assuré doit prendre toutes les mesures nécessaires pour limiter "
     "l'importance des dommages et conserver les biens endommagés jusqu'au "
     "passage de l'expert. Si l'assuré ne respecte pas ces obligations, sauf "
     "cas fortuit ou de force majeure, l'assureur peut lui opposer la "
     "déchéance de garantie lorsque ce manquement lui a causé un préjudice."),
    ("h1", "6. Règlement des sinistres"),
    ("p",
     "Les dommages sont évalués de gré à gré ou, à défaut, par voie "
     "d'expertise amiable. Chaque partie désigne son expert ; si les experts "
     "ne sont pas d'accord, ils s'adjoignent un troisième expert. L'indemnité "
     "est versée dans les trente (30) jours suivant l'accord des parties ou "
     "la décision judiciaire exécutoire. Pour les catastrophes naturelles, "
     "l'indemnité est versée dans les délais prévus par le Code des "
     "assurances."),
    ("h1", "7. Vie du contrat"),
    ("p",
     "Le contrat est conclu pour une durée d'un an et se renouvelle par "
     "tacite reconduction à chaque échéance annuelle. Après la première "
     "année, l'assuré peut le résilier à tout moment, sans frais ni "
     "pénalités ; la résiliation prend effet un mois après réception de la "
     "notification par l'assureur. Toutes les actions dérivant du contrat "
     "sont prescrites par deux ans à compter de l'événement qui y donne "
     "naissance, dans les conditions prévues aux articles L114-1 et suivants "
     "du Code des assurances."),
    ("p",
     "Pour toute réclamation, l'assuré s'adresse d'abord à son conseiller, "
     "puis au service Réclamations d'Assurances du Littoral. Si le désaccord "
     "persiste, il peut saisir gratuitement le Médiateur de l'assurance. Les "
     "données personnelles recueillies sont traitées conformément au "
     "règlement général sur la protection des données."),
]

DEDUCTIBLES_CAPTION = "Tableau 1 – Franchises par événement et par zone"
DEDUCTIBLES_HEADER = ("Événement", "Zone", "Franchise")
DEDUCTIBLES_ROWS = (
    ("Inondation", "Zone A", "5 000 €"),
    ("Inondation", "Zone B", "2 500 €"),
    ("Tempête (vent)", "Toutes zones", "500 €"),
    ("Tempête nommée (ouragan)", "Toutes zones", "1 000 €"),
)

# Replacements used only when the DejaVu fonts are missing (core Helvetica
# is limited to latin-1).
_LATIN1_FALLBACK = {
    "€": "EUR",
    "—": "-",
    "–": "-",
    "’": "'",
    "œ": "oe",
    "Œ": "OE",
    "…": "...",
}


def _build_pdf(path: Path) -> int:
    """Write the policy PDF; return the page number of the deductibles table."""
    from fpdf import FPDF
    from fpdf.fonts import FontFace

    unicode_font = FONT_REGULAR.is_file() and FONT_BOLD.is_file()

    def t(text: str) -> str:
        if unicode_font:
            return text
        for src, dst in _LATIN1_FALLBACK.items():
            text = text.replace(src, dst)
        return text

    class PolicyPDF(FPDF):
        def header(self) -> None:
            self.set_font(family, "", 8)
            self.set_text_color(90, 90, 90)
            self.cell(
                0, 5,
                t(HEADER_TEXT.format(page=self.page_no(), nb=self.str_alias_nb_pages)),
                align="R",
            )
            self.ln(5)
            self.set_draw_color(150, 150, 150)
            self.line(self.l_margin, self.get_y(), self.w - self.r_margin, self.get_y())
            self.ln(6)
            self.set_text_color(0, 0, 0)
            self.set_draw_color(0, 0, 0)

        def footer(self) -> None:
            self.set_y(-14)
            self.set_font(family, "", 7)
            self.set_text_color(110, 110, 110)
            self.cell(
                0, 4,
                t("Assurances du Littoral – Entreprise régie par le Code des "
                  "assurances – Document fictif établi à des fins de démonstration"),
                align="C",
            )
            self.set_text_color(0, 0, 0)

    pdf = PolicyPDF(orientation="P", unit="mm", format="A4")
    if unicode_font:
        pdf.add_font("DejaVu", "", str(FONT_REGULAR))
        pdf.add_font("DejaVu", "B", str(FONT_BOLD))
        family = "DejaVu"
    else:
        family = "Helvetica"

    pdf.set_creation_date(PDF_DATE)
    pdf.set_title(t("Contrat Habitation Multirisque – Conditions générales"))
    pdf.set_author("Assurances du Littoral")
    pdf.set_subject(t("Conditions générales Habitation – édition janvier 2023"))
    pdf.set_keywords(t("assurance habitation, franchises, conditions générales"))
    pdf.set_creator("rag_assets data/samples/generate.py")
    pdf.set_lang("fr-FR")
    pdf.set_margins(20, 15, 20)
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_page()

    # Title block
    pdf.set_font(family, "B", 16)
    pdf.cell(0, 8, "Assurances du Littoral", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(family, "B", 13)
    pdf.cell(0, 7, "Contrat Habitation Multirisque", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(family, "", 11)
    pdf.cell(0, 6, t("Conditions générales – Édition janvier 2023 – Réf. CG-HAB-2023"),
             new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)

    table_page = -1
    line_h = 5.0
    for kind, payload in POLICY_BLOCKS:
        if kind == "h1":
            if pdf.get_y() > pdf.h - 45:  # keep heading with its first lines
                pdf.add_page()
            pdf.ln(2)
            pdf.set_font(family, "B", 12)
            pdf.cell(0, 7, t(payload), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
        elif kind == "h2":
            if pdf.get_y() > pdf.h - 40:
                pdf.add_page()
            pdf.ln(1)
            pdf.set_font(family, "B", 10.5)
            pdf.cell(0, 6, t(payload), new_x="LMARGIN", new_y="NEXT")
        elif kind == "p":
            pdf.set_font(family, "", 10)
            pdf.multi_cell(0, line_h, t(payload), align="L",
                           new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif kind == "li":
            pdf.set_font(family, "", 10)
            pdf.set_x(pdf.l_margin + 4)
            pdf.multi_cell(0, line_h, t("– " + payload), align="L",
                           new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
        elif kind == "keep":
            if pdf.get_y() + float(payload) > pdf.h - pdf.b_margin:
                pdf.add_page()
        elif kind == "table":
            needed = 8 + 7 * (len(DEDUCTIBLES_ROWS) + 1) + 6
            if pdf.get_y() + needed > pdf.h - pdf.b_margin:
                pdf.add_page()
            table_page = pdf.page_no()
            pdf.set_font(family, "B", 9.5)
            pdf.cell(0, 6, t(DEDUCTIBLES_CAPTION), align="C",
                     new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
            pdf.set_font(family, "", 10)
            pdf.set_draw_color(0, 0, 0)
            pdf.set_line_width(0.3)
            with pdf.table(
                width=140,
                col_widths=(70, 35, 35),
                align="CENTER",
                text_align=("LEFT", "LEFT", "RIGHT"),
                borders_layout="ALL",
                first_row_as_headings=True,
                headings_style=FontFace(emphasis="BOLD", fill_color=(225, 225, 225)),
                line_height=7,
                padding=(0, 2),
            ) as table:
                for row in (DEDUCTIBLES_HEADER, *DEDUCTIBLES_ROWS):
                    r = table.row()
                    for value in row:
                        r.cell(t(value))
            pdf.set_line_width(0.2)
            pdf.ln(4)
        else:  # pragma: no cover - programming error
            raise ValueError(kind)

    pdf.output(str(path))
    return table_page


# --------------------------------------------------------------------------
# DOCX: contrat de maintenance MX-200
# --------------------------------------------------------------------------

DOCX_DATE = datetime(2022, 3, 1, 10, 0, 0)
ZIP_DATE = (2022, 3, 1, 10, 0, 0)

SLA_HEADER = ("Priorité", "Délai d'intervention", "Délai de rétablissement")
SLA_ROWS = (
    ("P1 – Critique", "1 heure", "4 heures ouvrées"),
    ("P2 – Majeure", "4 heures ouvrées", "1 jour ouvré"),
    ("P3 – Mineure", "1 jour ouvré", "5 jours ouvrés"),
)

# ("title"|"h1"|"h2"|"p"|"li"|"table"|"center", text)
CONTRACT_BLOCKS: list[tuple[str, str | None]] = [
    ("title", "Contrat de maintenance MX-200"),
    ("center", "Maintenance de la plateforme de gestion des sinistres « MX-200 »"),
    ("h1", "Entre les soussignés"),
    ("p",
     "Assurances du Littoral, société anonyme régie par le Code des "
     "assurances, dont le siège social est situé 12 quai des Marins, 17000 La "
     "Rochelle, représentée par sa directrice des systèmes d'information, "
     "ci-après dénommée « le Client »,"),
    ("p", "d'une part,"),
    ("p",
     "et Nexalis Informatique, société par actions simplifiée dont le siège "
     "social est situé 8 rue des Tanneurs, 44000 Nantes, représentée par son "
     "président, ci-après dénommée « le Prestataire »,"),
    ("p", "d'autre part."),
    ("p", "Il a été convenu ce qui suit."),
    ("h1", "Article 1 – Objet"),
    ("p",
     "Le présent contrat a pour objet de définir les conditions dans "
     "lesquelles le Prestataire assure la maintenance préventive, corrective "
     "et évolutive de la plateforme de gestion des sinistres MX-200 exploitée "
     "par le Client, comprenant les serveurs applicatifs, les bases de "
     "données associées et les interfaces avec les outils de gestion des "
     "contrats."),
    ("h1", "Article 2 – Périmètre des prestations"),
    ("h2", "2.1 Maintenance préventive"),
    ("p",
     "Le Prestataire réalise chaque trimestre une visite de maintenance "
     "préventive comprenant l'application des correctifs de sécurité, la "
     "vérification des sauvegardes et un rapport d'état de la plateforme "
     "remis au Client."),
    ("h2", "2.2 Maintenance corrective"),
    ("p",
     "Le Prestataire prend en charge les incidents signalés par le Client "
     "via le centre de services, du lundi au vendredi de 8 h à 19 h, hors "
     "jours fériés. Chaque incident est qualifié selon l'un des niveaux de "
     "priorité définis à l'article 3."),
    ("h1", "Article 3 – Niveaux de service"),
    ("p",
     "Le Prestataire s'engage à respecter les délais suivants, décomptés à "
     "partir de l'enregistrement de l'incident par le centre de services :"),
    ("table", None),
    ("p",
     "En cas de dépassement de ces délais, des pénalités sont appliquées "
     "dans les conditions prévues à l'annexe 2 du présent contrat."),
    ("h1", "Article 4 – Durée"),
    ("p",
     "Le présent contrat prend effet le 1er mars 2022 pour une durée initiale "
     "de trois (3) ans. Il est ensuite renouvelé par tacite reconduction pour "
     "des périodes successives d'un (1) an, sauf résiliation dans les "
     "conditions prévues à l'article 7."),
    ("h1", "Article 5 – Conditions financières"),
    ("p",
     "En contrepartie des prestations, le Client verse au Prestataire une "
     "redevance annuelle forfaitaire de quarante-huit mille euros hors taxes "
     "(48 000 € HT), payable trimestriellement à terme échu, à trente (30) "
     "jours date de facture. La redevance est révisée chaque année à la date "
     "anniversaire du contrat selon l'indice Syntec."),
    ("h1", "Article 6 – Obligations des parties"),
    ("p",
     "Le Prestataire est tenu à une obligation de moyens renforcée. Il "
     "affecte aux prestations un personnel qualifié et informe le Client "
     "sans délai de toute difficulté susceptible d'affecter la continuité du "
     "service. Le Client s'engage à donner au Prestataire l'accès aux "
     "environnements nécessaires et à désigner un interlocuteur référent."),
    ("h1", "Article 7 – Résiliation"),
    ("h2", "7.1 Résiliation à l'initiative de l'une des parties"),
    ("p",
     "Chacune des parties peut résilier le présent contrat à tout moment, "
     "par lettre recommandée avec accusé de réception adressée à l'autre "
     "partie, moyennant le respect d'un préavis de trois (3) mois. Le préavis "
     "court à compter de la date de première présentation de la lettre "
     "recommandée."),
    ("h2", "7.2 Résiliation pour manquement"),
    ("p",
     "En cas de manquement grave de l'une des parties à ses obligations, "
     "l'autre partie peut résilier le contrat de plein droit, par lettre "
     "recommandée avec accusé de réception, à l'expiration d'un délai de "
     "trente (30) jours suivant une mise en demeure restée sans effet, sans "
     "préjudice de tous dommages et intérêts."),
    ("h2", "7.3 Réversibilité"),
    ("p",
     "Quelle que soit la cause de la résiliation, le Prestataire restitue au "
     "Client l'ensemble des données et de la documentation et l'assiste dans "
     "le transfert des prestations vers un nouveau prestataire."),
    ("h1", "Article 8 – Confidentialité et protection des données"),
    ("p",
     "Le Prestataire s'engage à garder strictement confidentielles les "
     "informations auxquelles il a accès, notamment les données personnelles "
     "des assurés, qu'il traite en qualité de sous-traitant au sens du "
     "règlement général sur la protection des données, uniquement sur "
     "instruction documentée du Client."),
    ("h1", "Article 9 – Droit applicable et litiges"),
    ("p",
     "Le présent contrat est soumis au droit français. Tout litige relatif à "
     "son interprétation ou à son exécution qui n'aurait pu être résolu à "
     "l'amiable sera porté devant le tribunal de commerce de Poitiers."),
    ("p",
     "Fait à La Rochelle, le 1er mars 2022, en deux exemplaires originaux."),
    ("p", "Pour Assurances du Littoral                    Pour Nexalis Informatique"),
]


def _normalize_zip(raw: bytes) -> bytes:
    """Rewrite a zip archive with fixed entry timestamps (reproducible output)."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            fixed.create_system = 3
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def _build_docx(path: Path) -> None:
    from docx import Document
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.oxml import OxmlElement
    from docx.shared import Pt

    doc = Document()
    style = doc.styles["Normal"]
    style.font.name = "Calibri"
    style.font.size = Pt(11)

    props = doc.core_properties
    props.title = "Contrat de maintenance MX-200"
    props.subject = "Maintenance de la plateforme de gestion des sinistres MX-200"
    props.author = "Assurances du Littoral"
    props.last_modified_by = "Assurances du Littoral"
    props.keywords = "contrat, maintenance, MX-200, résiliation, préavis"
    props.language = "fr-FR"
    props.comments = "Document fictif établi à des fins de démonstration."
    props.created = DOCX_DATE
    props.modified = DOCX_DATE
    props.last_printed = DOCX_DATE
    props.revision = 1

    for kind, text in CONTRACT_BLOCKS:
        if kind == "title":
            doc.add_heading(text, level=0)
        elif kind == "h1":
            doc.add_heading(text, level=1)
        elif kind == "h2":
            doc.add_heading(text, level=2)
        elif kind == "center":
            para = doc.add_paragraph(text)
            para.alignment = WD_ALIGN_PARAGRAPH.CENTER
        elif kind == "p":
            doc.add_paragraph(text)
        elif kind == "table":
            table = doc.add_table(rows=1, cols=len(SLA_HEADER))
            table.style = "Table Grid"
            # Header row: plain text (no bold runs, which would leak "**" into
            # Markdown exports) flagged as a repeating Word header row.
            header = table.rows[0]
            tr_pr = header._tr.get_or_add_trPr()
            tr_pr.append(OxmlElement("w:tblHeader"))
            for cell, value in zip(header.cells, SLA_HEADER):
                cell.text = value
            for row in SLA_ROWS:
                cells = table.add_row().cells
                for cell, value in zip(cells, row):
                    cell.text = value
            doc.add_paragraph()
        else:  # pragma: no cover - programming error
            raise ValueError(kind)

    buf = io.BytesIO()
    doc.save(buf)
    path.write_bytes(_normalize_zip(buf.getvalue()))


def main() -> None:
    pdf_path = HERE / PDF_NAME
    docx_path = HERE / DOCX_NAME
    table_page = _build_pdf(pdf_path)
    _build_docx(docx_path)
    print(f"wrote {pdf_path} (deductibles table on page {table_page})")
    print(f"wrote {docx_path}")


if __name__ == "__main__":
    main()
