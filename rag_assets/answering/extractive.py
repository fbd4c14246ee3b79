"""Offline answerer: no model, the answer is made of the best supporting sentences of the
selected parents (a table row counts as a sentence, shown with its column headers), with
the same citation structure and the same refusal rule as the model path.

When sources conflict and the sidecar metadata says one amends the other (`amends`, where that
holds: index/amendments.py), the amending source answers and the amended clause is mentioned
after it as superseded, both documents named with their effective dates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.answering.bands import band_match, quantities
from rag_assets.answering.citations import dated_name
from rag_assets.answering.figures import NUMBER, figures, same_figure, wanted_kinds
from rag_assets.answering.model import NO_SOURCE, Paragraph, SubQuestion
from rag_assets.answering.safety import looks_like_instruction
from rag_assets.answering.terms import TermWeights
from rag_assets.retrieve.query import analyze, codes, content_terms, qualified_ids
from rag_assets.text.amounts import BARE_AMOUNT
from rag_assets.text.language import detect_language as language_of

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[«\"(\[A-ZÀ-ÖØ-Þ0-9])|\n+")
_NUMBER = re.compile(r"\d")
_CODE_PREFIX = re.compile(r"([A-Z]*)")
_WORD = re.compile(r"\w+")
_CALL = re.compile(r"\((\d{1,2})\)")  # a note's call in a table cell: "maternité (3)"
_ADDRESS = re.compile(r"\S+@\S+|https?://\S+|www\.\S+")  # e-mail and web addresses
# A company's legal notice ("SA au capital de 10 000 000 €, RCS Paris 123 456 789, entreprise
# régie par le Code des assurances"): letterhead and back-cover print, the answer to no question
# but one about the company itself (`_ASKS_COMPANY`).
_LEGAL_NOTICE = re.compile(
    r"\bau capital(?: social)? de\b|\bR\.?\s?C\.?\s?S\.?\b|\bSIRE[NT]\b|\bORIAS\b|\bsiège social\b"
    r"|\bimmatricul\w+ au registre\b|\brégie? par le code des assurances\b|\bTVA intracommunautaire\b",
    re.IGNORECASE,
)
_ASKS_COMPANY = re.compile(
    r"\b(?:capital social|au capital|RCS|SIRE[NT]|ORIAS|siège|adresse|immatricul\w+"
    r"|forme juridique|qui est l['’]assureur"
    r"|quel(?:le)? (?:est l['’])?(?:assureur|société|compagnie))",
    re.IGNORECASE,
)
LEGAL_NOTICE_FACTOR = 0.2  # set a priori (evaluations/tuning.md)
# said before a provision an amending source replaces: both documents, both dates
SUPERSEDED_LEAD = {
    "fr": "Disposition antérieure de {old}, remplacée par {new} :",
    "en": "Earlier provision of {old}, replaced by {new}:",
}


@dataclass
class Unit:
    source_id: str  # the table / formula / figure id, or the section id
    section_id: str
    document_id: str
    text: str  # verbatim from the source
    display: str  # as written in the answer
    context: str  # title, headings, caption, table header
    language: str
    labels: str = ""  # a table row's column headers over its filled cells: "Arbitrage : non" is the row's own word
    block: tuple[str, int] = ("", -1)  # (parent id, block index): the paragraph, list item or table it comes from


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)]


def _markdown_row(cells: list[str]) -> str:
    """A table row as the parents write it (the inverse of `_cells`)."""
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


_NEXT_SENTENCE = re.compile(r"[^\W\d]\s?[.!?]\s+[A-ZÀ-Þ«\"]")  # "… plafonds. Les …", "document ? Il …"
# set a priori (evaluations/tuning.md): past HEADER_WORDS words a cell is a paragraph; from
# SENTENCE_WORDS words, one that opens in lower case or closes a sentence or a lead-in is one too
HEADER_WORDS, SENTENCE_WORDS = 25, 8


def _labels_a_column(header: str) -> bool:
    """A column label, even a long one ("Montant de prise en charge des frais et honoraires
    d'avocat par litige (en euros et TTC)") or a question ("Qui peut résilier le contrat ?"),
    against a paragraph or a list item the layout set in the header row ("les frais de
    déplacement … ;", "Voici la synthèse des garanties … :") or a bullet ("●")."""
    text = header.strip()
    words = len(_WORD.findall(text))
    if not words or words > HEADER_WORDS or _NEXT_SENTENCE.search(text) or text.endswith(";"):
        return False
    return words < SENTENCE_WORDS or not (text[:1].islower() or text.endswith((".", ":")))


def _table_units(block_text: str, caption: str | None) -> list[tuple[str, str, str, str]]:
    """(row line, row shown with its headers, header line, headers of its filled cells) per
    data row. A row with no label continues the row above it: the layout stage cut a cell
    wrapped over two lines into two rows ("Valeur à dire d'expert ou" / "Option
    Indemnisation Plus"), and the second half alone answers nothing."""
    lines = [line for line in block_text.split("\n") if line.strip().startswith("|")]
    if len(lines) < 3:
        return [(line, line, "", "") for line in lines]
    # a first row shaped as the rows under it, a label and bare amounts ("Assistance à garde à
    # vue | (hors taxes) 311 €" over "Tribunal de police | 482 €"), is their first row that the
    # layout left unmarked: read as labels, its amount was written before every row's own
    first_is_row = _amount_row(lines[0], lines[2:])
    body = lines[:1] + lines[2:] if first_is_row else lines[2:]
    # a header cell that is a sentence (a paragraph the layout set as the table's first row)
    # labels no column: written before every cell, it buried the row and lent it its words
    header = [h if _labels_a_column(h) and not first_is_row else "" for h in _cells(lines[0])]
    header_line = "" if first_is_row else lines[0]
    # a row's column headers are its own words when they tell its cells apart ("Arbitrage :
    # non ; Équilibre : oui"); a word every value column's header writes ("RAQVAM arbitrage,
    # RAQVAM équilibre", "Niveau 1 … Niveau 6"), or a single one, names the table
    named = [set(_WORD.findall(h.lower())) for h in header[1:] if h]
    shared = set.intersection(*named) if len(named) > 1 else set().union(*named)
    rows = []
    merged: list[list[str]] = []
    for line in body:
        cells = _cells(line)
        if merged and not cells[0] and any(cells) and len(cells) == len(merged[-1]):
            merged[-1] = [f"{a} {b}".strip() for a, b in zip(merged[-1], cells)]
        else:
            merged.append(cells)
    for cells in merged:
        line = _markdown_row(cells)
        pairs = [f"{h} : {c}" if h else c for h, c in zip(header, cells) if c]
        labels = " ".join(
            w for h, c in zip(header, cells) if c and h for w in _WORD.findall(h) if w.lower() not in shared
        )
        shown = " ; ".join(pairs)
        rows.append((line.strip(), shown if shown.endswith((".", "!", "?")) else shown + ".", header_line, labels))
    return rows


def _amount_row(first: str, rows: list[str]) -> bool:
    """Whether a table's first row is a row of data: a label, then only bare amounts, as most
    rows under it with values."""
    cells = _cells(first)
    if len(cells) < 2 or not cells[0] or not all(BARE_AMOUNT.match(c) for c in cells[1:] if c) or not any(cells[1:]):
        return False
    valued = [_cells(row)[1:] for row in rows]
    valued = [values for values in valued if any(values)]
    bare = [all(BARE_AMOUNT.match(c) for c in values if c) for values in valued]
    return len(bare) >= 2 and 2 * sum(bare) > len(bare)


def band_column(unit: Unit, asked, asked_terms: frozenset[str] = frozenset()) -> str:
    """A band table's row as the answer shows it: when its columns are bands ("moins de 25
    ans ; de 25 à 60 ans ; plus de 60 ans") and the question states a figure one of them holds,
    or are levels and the question names one of them ("Équilibre 2 … Équilibre 6", asked
    about "Équilibre 4"), the row's label and that column's cell only, each under its header.
    `asked_terms`: the question's analysed terms."""
    if not (asked or asked_terms) or not unit.text.lstrip().startswith("|"):
        return unit.display
    header = _cells(unit.context.split("\n")[-1]) if unit.context else []
    cells = _cells(unit.text)
    if len(header) != len(cells) or len(cells) < 3:
        return unit.display
    verdicts = [band_match(h, asked) for h in header[1:]] if asked else []
    if True not in verdicts and asked_terms:
        levels = [set(analyze(h, unit.language)) for h in header[1:]]
        named = [bool(terms) and terms <= asked_terms for terms in levels]
        if named.count(True) == 1:
            chosen = levels[named.index(True)]
            # siblings of one scale ("Équilibre 2", "Équilibre 3"…), not a table's other columns
            if all(terms & chosen for terms in levels if terms):
                verdicts = named
    if True not in verdicts or verdicts.count(False) == 0:
        return unit.display
    kept = [(header[0], cells[0])] + [(h, c) for h, c, v in zip(header[1:], cells[1:], verdicts) if v is True and c]
    if len(kept) < 2:
        return unit.display
    return " ; ".join(f"{h} : {c}" if h else c for h, c in kept) + "."


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and len(s.strip()) > 2]


def _clean_display(sentence: str) -> str:
    if sentence.count("«") > sentence.count("»"):
        sentence = sentence.replace("« ", "", 1).replace("«", "", 1)
    if sentence.count("»") > sentence.count("«"):
        sentence = sentence[::-1].replace(" »", "", 1)[::-1]
    return sentence.strip()


# a block holding only values besides these words ("80 €", "1 050 € TTC", "néant")
_VALUE_WORDS = re.compile(r"(?i)\b(?:ttc|ht|néant|neant)\b|[-–—/;,.()*\s]")
MIN_TEXT_ROWS = 3  # label-and-values rows in a run before they are read as a table
LABEL_WORDS = 25  # a longer block is prose, not a row's label


def _values_only(text: str) -> bool:
    found = figures(text)
    rest = text
    for figure in sorted(found, key=lambda f: -f.start):
        rest = rest[: figure.start] + " " + rest[figure.end :]
    return bool(found or text.strip() in ("-", "–", "—")) and not _VALUE_WORDS.sub("", rest)


def _column_names(block: dict, count: int) -> list[str] | None:
    """A table block of `count` columns or one more, holding no figure, read as the column
    headers of the rows under it: each column's cells joined top to bottom ("Formule Vie" /
    "Quotidienne" / "Plus")."""
    lines = [_cells(line) for line in block["text"].split("\n") if line.strip().startswith("|")]
    rows = [cells for cells in lines if not set("".join(cells)) <= set("-: ")]
    if block["kind"] != "table" or not rows or figures(block["text"]):
        return None
    width = len(rows[0])
    if width not in (count, count + 1) or any(len(cells) != width for cells in rows):
        return None
    columns = [" ".join(dict.fromkeys(c for c in column if c)) for column in zip(*rows)]
    return columns[-count:]


def rows_read_as_text(blocks: list[dict]) -> list[tuple[int, dict]]:
    """(index, block) of a parent's blocks, where a table the layout stage read as text lines
    (a label, then its values each in a block of its own: "Démarches amiables" / "350 €" /
    "525 €"; a short label set in bold is often read as a heading) is one table block again,
    under the column headers of a header-only table just above it when there is one. Its rows
    then answer as rows do, each value under its header; read line by line, a label came
    without its amount."""
    out: list[tuple[int, dict]] = []
    i = 0
    while i < len(blocks):
        rows, j, count = [], i, None
        while j < len(blocks) and blocks[j]["kind"] in ("text", "heading") and not _values_only(blocks[j]["text"]):
            label = blocks[j]["text"].strip()
            k = j + 1
            while k < len(blocks) and blocks[k]["kind"] == "text" and _values_only(blocks[k]["text"]):
                k += 1
            values = [b["text"].strip() for b in blocks[j + 1 : k]]
            if not values or len(label.split()) > LABEL_WORDS or label.endswith((".", ":")):
                break
            if count is not None and len(values) != count:
                break
            count = len(values)
            rows.append([label, *values])
            j = k
        if len(rows) < MIN_TEXT_ROWS or count is None:
            out.append((i, blocks[i]))
            i += 1
            continue
        names = _column_names(out[-1][1], count) if out else None
        first = out.pop()[0] if names else i
        header = ["", *(names or [""] * count)]
        lines = [header, ["---"] * len(header), *rows]
        table = {
            "kind": "table",
            "text": "\n".join(_markdown_row(cells) for cells in lines),
        }
        out.append((first, table))
        i = j
    return out


def units_of(registry, kb) -> tuple[list[Unit], list[str]]:
    """Sentence units of the context, and the source ids where a sentence was skipped
    because it reads like an instruction to the assistant."""
    units, skipped = [], []
    for parent_id in registry.parent_ids:
        section_id = registry.section_id(parent_id)
        section = registry[section_id]
        parent = kb.parent(parent_id)
        language = kb.document(section.document_id).get("language") or language_of(parent["text"])
        path_context = "\n".join([section.document_title, *section.heading_path])
        base_context = path_context
        for index, block in rows_read_as_text(parent.get("blocks") or []):
            if block["kind"] == "heading":  # a joined section's heading: context, not an answer
                base_context = "\n".join([path_context, block["text"]])
                continue
            element_id = registry.element_id(parent_id, index) or section_id
            element = registry[element_id]
            if block["kind"] == "table":
                if contents_table(block["text"]):
                    continue  # a table of contents read as a table names sections, it answers nothing
                caption = element.caption or ""
                for raw, shown, header, labels in _table_units(block["text"], caption):
                    if looks_like_instruction(raw):  # a table cell is no place for orders either
                        skipped.append(section_id)
                        continue
                    units.append(
                        Unit(
                            element_id,
                            section_id,
                            section.document_id,
                            raw,
                            shown,
                            "\n".join([base_context, caption, header]),
                            language,
                            labels,
                            (parent_id, index),
                        )
                    )
                continue
            if block["kind"] in ("formula", "picture"):
                if block["text"].strip() and looks_like_instruction(block["text"]):
                    skipped.append(section_id)
                elif block["text"].strip():
                    units.append(
                        Unit(
                            element_id,
                            section_id,
                            section.document_id,
                            block["text"].strip(),
                            block["text"].strip(),
                            "\n".join([base_context, element.caption or ""]),
                            language,
                            block=(parent_id, index),
                        )
                    )
                continue
            for sentence in _sentences(block["text"]):
                if looks_like_instruction(sentence):
                    skipped.append(section_id)
                    continue
                units.append(
                    Unit(
                        section_id,
                        section_id,
                        section.document_id,
                        sentence,
                        _clean_display(sentence),
                        base_context,
                        language,
                        block=(parent_id, index),
                    )
                )
    return units, list(dict.fromkeys(skipped))


def contents_table(block_text: str) -> bool:
    """A table of contents set as a table: at least three rows ending in a page number (a bare
    whole number), the numbers never going back, under no header but "Page" (or none: the
    first row ends in a page number too). A tariff's "100" under "Niveau 2" is no page."""
    rows = [[c.strip(" .") for c in _cells(line)] for line in block_text.split("\n") if line.strip().startswith("|")]
    rows = [cells for cells in rows if any(cells) and not set("".join(cells)) <= set("-: ")]
    if rows and not rows[0][-1].isdigit():
        if not re.fullmatch(r"(?i)(?:pages?|p)?", rows[0][-1]):
            return False
        rows = rows[1:]
    pages = [cells[-1] for cells in rows]
    if len(pages) < 3 or not all(p.isdigit() and len(p) <= 3 for p in pages):
        return False
    numbers = [int(p) for p in pages]
    return all(b >= a for a, b in zip(numbers, numbers[1:]))


def _is_value(figure) -> bool:
    """An amount, rate, duration, date or a number that is no small ordinal ("1,1660", not
    the "2" of "Niveau 2")."""
    return figure.kind != NUMBER or any(not v.isdigit() or int(v) >= 100 for v in figure.values)


def _row_of_figures(text: str) -> bool:
    """A table row whose every filled cell after the first holds a value (`_is_value`)."""
    if not text.lstrip().startswith("|"):
        return False
    cells = [c for c in _cells(text)[1:] if c.strip("-– ")]
    return bool(cells) and all(any(_is_value(f) for f in figures(c)) for c in cells)


SENTENCE_SHARE = 0.4  # of the best section's coverage, the least a sentence must cover
LABEL_NOVEL_TERMS = 2  # a unit with fewer terms than this beyond the question's is a label
LABEL_FACTOR = 0.5
WANTED_FIGURE_BONUS = 0.1  # a unit holding a figure of the kind the question asks for
SIBLING_CODES = 2  # a unit naming the asked "niveau 3" and this many other levels lists them, it answers none
NEAR_DUPLICATE = 0.85  # share of analysed terms two sentences share to be the same clause twice
# the last sentence slot discounts passages already quoted by this share (evaluations/tuning.md)
OTHER_PASSAGE = 0.1
FIGURES_ROW_FACTOR = 0.8  # a row of amounts when none is asked (evaluations/tuning.md)
# a table row whose label's band holds the question's own figure, and one whose band does not
# (set a priori: evaluations/tuning.md)
BAND_BONUS = 0.15
BAND_MISS = 0.5
# a unit's score shrinks by this share per rank of its parent (evaluations/tuning.md)
RANK_DISCOUNT = 0.025
# the passages retrieval ranks first that always speak, their best sentence clearing the bar
# (evaluations/tuning.md)
SPEAKING_PASSAGES = 3
# a sentence announcing a list ("le montant est fixé comme suit :") is shown with at most this
# many of the units that follow it (evaluations/tuning.md)
ANNOUNCED_UNITS = 4


class ExtractiveAnswerer:
    # at most 4 sentences, each further one within keep_ratio of the best (evaluations/tuning.md)
    def __init__(
        self,
        kb,
        weights: TermWeights | None = None,
        min_score: float = 0.45,
        keep_ratio: float = 0.7,
        max_units: int = 5,
    ):
        self.kb = kb
        self.weights = weights or TermWeights(kb)
        self.min_score = min_score
        self.keep_ratio = keep_ratio
        self.max_units = max_units
        self._terms: dict[tuple[str, str], set[str]] = {}

    def _analyzed(self, text: str, language: str) -> set[str]:
        key = (text, language)
        if key not in self._terms:
            self._terms[key] = set(analyze(text, language))
        return self._terms[key]

    def score(
        self,
        question: str,
        unit: Unit,
        targeted: bool = True,
        present: set[str] | None = None,
        naming: set[str] | frozenset[str] = frozenset(),
    ) -> float:
        """`present`: the codes the candidate passages name (text or headings); `naming`: the
        question's terms that chose the documents searched, counted as found in every unit:
        "Mila" written in a sentence of Mila's policy does not make it the answer (its
        letterhead would win), and crediting them keeps the sentence bar's scale."""
        terms = content_terms(question, unit.language)
        text = _ADDRESS.sub(" ", unit.text)  # "reclamation.sam.loisirs@…" names a mailbox, not the subject
        own = self._analyzed(text, unit.language)
        # a row's distinguishing column headers count as its words: a comparison row
        # ("arbitrage : non") says what it compares only through them
        labelled = own | self._analyzed(unit.labels, unit.language) if unit.labels else own
        score = self.weights.coverage(
            terms, labelled | set(naming), unit.language, self._analyzed(unit.context, unit.language)
        )
        found = figures(text)
        if (
            not text.rstrip().endswith((".", "!", "?"))
            and not any(_is_value(f) for f in found)
            and len({t for t in own - set(terms) if not t.isdigit()}) < LABEL_NOVEL_TERMS
        ):
            # a label, heading or header row that repeats the question ("Garantie Décès",
            # "Niveau 1 Niveau 2 … Niveau 6") answers nothing; a sentence or a value does
            score *= LABEL_FACTOR
        wanted = wanted_kinds(question)
        if wanted and any(
            f.kind in wanted and not any(same_figure(f, given) for given in figures(question)) for f in found
        ):
            # "combien", "quel délai": a sentence with the amount or duration asked, not the one the
            # question gives ("quitter au 31 décembre : jusqu'à quelle date…" asks for another date)
            score += WANTED_FIGURE_BONUS
        qualified = qualified_ids(question)
        if qualified:
            named = qualified_ids(text)
            # in the question's order (`qualified_ids`): a bonus and a factor do not commute
            for noun, code in qualified:
                siblings = {c for n, c in named if n == noun} - {c for n, c in qualified if n == noun}
                if (noun, code) in named and len(siblings) >= SIBLING_CODES:
                    continue  # "Niveau 1 Niveau 2 … Niveau 6": a list of every level picks none
                if (noun, code) in named:
                    score += 0.25
                elif any(n == noun and c != code for n, c in named):
                    score *= 0.3  # "Zone B" when the question asks about zone A
        for code in sorted(codes(question) & (present or set())):
            # "formule PJ2": the passage under the PJ2 heading answers, not the PJ1 one (a
            # code no passage names is a premise to flag, not a reason to answer nothing)
            where = codes(text) | codes(unit.context)
            prefix = _CODE_PREFIX.match(code).group(1)
            if code in where:
                score += 0.1
            elif any(_CODE_PREFIX.match(c).group(1) == prefix for c in where):
                score *= 0.5
        asked = quantities(question)
        if asked and text.lstrip().startswith("|"):
            # a band table's row: the reader's own figure (a 35 000 € car, 85 000 km) picks the
            # row whose label's band holds it
            verdict = band_match(_cells(text)[0], asked)
            if verdict is True:
                score += BAND_BONUS
            elif verdict is False:
                score *= BAND_MISS
        if _LEGAL_NOTICE.search(text) and not _ASKS_COMPANY.search(question):
            score *= LEGAL_NOTICE_FACTOR
        if targeted and _NUMBER.search(text):
            score += 0.05
        if not wanted and _row_of_figures(text):
            # a row of amounts or rates answers "combien", not "puis-je prendre le niveau 6 et
            # le niveau 2 ?" (a row of "oui" / "non" still answers "est-ce couvert ?")
            score *= FIGURES_ROW_FACTOR
        return score

    def _repeats(self, unit: Unit, other: Unit) -> bool:
        """The same clause twice (a notice repeating its list of documents to send, a comma
        or an agreement apart): shown once, the next sentence gets the slot."""
        a, b = self._analyzed(unit.text, unit.language), self._analyzed(other.text, other.language)
        return unit.text == other.text or (bool(a | b) and len(a & b) / len(a | b) >= NEAR_DUPLICATE)

    @staticmethod
    def _with_followers(kept: list[Unit], followers_of, next_to_each: bool) -> list[Unit]:
        """`kept` with the units `followers_of` gives for each kept unit, each shown once (a kept
        unit is never added again): right after their unit (`next_to_each`), or after all of `kept`."""
        out, shown = ([] if next_to_each else list(kept)), {id(u) for u in kept}
        for unit in kept:
            if next_to_each:
                out.append(unit)
            for follower in followers_of(unit):
                if id(follower) not in shown:
                    out.append(follower)
                    shown.add(id(follower))
        return out

    @staticmethod
    def _with_announced(kept: list[Unit], units: list[Unit], position: dict[int, int], registry) -> list[Unit]:
        """Each kept sentence that ends in a colon followed by what it announces: the list items
        or table rows after it, in the same passage and under the same heading, up to the item
        that closes the list. "Fixé comme suit :" alone withholds the figures it introduces."""

        def announced(unit: Unit):
            if not unit.display.rstrip().endswith(":"):
                return
            parent = registry[unit.section_id].parent_id
            lead = unit.context
            for follower in units[position[id(unit)] + 1 : position[id(unit)] + 1 + ANNOUNCED_UNITS]:
                if registry[follower.section_id].parent_id != parent or not follower.context.startswith(lead):
                    break  # another passage, or a heading between them
                yield follower
                if follower.display.rstrip().endswith(".") and not follower.text.lstrip().startswith("|"):
                    break  # the item that closes the list

        return ExtractiveAnswerer._with_followers(kept, announced, next_to_each=True)

    @staticmethod
    def _with_figure_after(kept: list[Unit], units: list[Unit], position: dict[int, int]) -> list[Unit]:
        """Each kept sentence with the next one of its paragraph when that one holds a figure:
        a clause's amount or its condition often closes it in a sentence of its own ("… dans
        la limite de 500 €. Le véhicule doit être loué pour 72 h au plus.")."""

        def figure_after(unit: Unit):
            at = position[id(unit)] + 1
            if unit.text.lstrip().startswith("|") or at >= len(units):
                return
            after = units[at]
            if after.block == unit.block and _NUMBER.search(after.text):
                yield after

        return ExtractiveAnswerer._with_followers(kept, figure_after, next_to_each=False)

    @staticmethod
    def _with_footnotes(kept: list[Unit], units: list[Unit], position: dict[int, int]) -> list[Unit]:
        """Each kept table row with the notes its calls refer to ("… y compris maternité (3)"):
        the paragraph opening with "(3)" after its table, before the next table of the passage
        (each table numbers its own notes). A guarantee table's limits are often only there
        ("(3) Limite : 180 jours par an, 30 jours en psychiatrie")."""

        def footnotes(unit: Unit):
            if not unit.text.lstrip().startswith("|"):
                return
            for call in dict.fromkeys(_CALL.findall(unit.text)):
                at = position[id(unit)] + 1
                while at < len(units) and units[at].block == unit.block:
                    at += 1  # past the table's other rows
                note = None
                for follower in units[at:]:
                    if follower.block[0] != unit.block[0] or follower.text.lstrip().startswith("|"):
                        break  # another passage, or the next table
                    if note is None and follower.text.lstrip().startswith(f"({call})"):
                        note = follower.block
                    if note is not None:
                        if follower.block != note:
                            break
                        yield follower

        return ExtractiveAnswerer._with_followers(kept, footnotes, next_to_each=False)

    @classmethod
    def with_followers(cls, kept: list[Unit], units: list[Unit], registry) -> list[Unit]:
        """`kept` with what each of its units needs to be read right: the list a sentence
        announces, the sentence holding its clause's figure, a table row's notes."""
        position = {id(u): n for n, u in enumerate(units)}
        kept = cls._with_announced(kept, units, position, registry)
        kept = cls._with_figure_after(kept, units, position)
        return cls._with_footnotes(kept, units, position)

    def sentence_bar(self, sub: SubQuestion) -> float:
        """The least a sentence's own score must be to answer `sub`."""
        return min(self.min_score, SENTENCE_SHARE * sub.best_score) if sub.best_score else self.min_score

    def scored_units(
        self, sub: SubQuestion, units: list[Unit], registry, targeted: bool
    ) -> tuple[list[tuple[float, Unit]], dict[int, float]]:
        """(score with the rank prior, unit) of the units of `sub`'s parents, best first, and
        each unit's own score by `id`: what the answer quotes, and what a model is shown."""
        allowed = set(sub.parent_ids)
        candidates = [u for u in units if registry[u.section_id].parent_id in allowed]
        # the retrieval's order of the parents (hybrid, or reranked) is a prior: of two
        # sentences covering the question alike, the one from the better-ranked parent
        rank = {parent_id: n for n, parent_id in enumerate(sub.parent_ids)}
        present = {c for u in candidates for c in codes(u.text) | codes(u.context)}
        raw = {id(u): self.score(sub.text, u, targeted, present, set(sub.scope_terms)) for u in candidates}
        # the same sentence in two documents (a notice and its sister product's) answers alike:
        # the retrieval's order, which knows the document the question names, chooses, not
        # the headings around each copy
        best_copy: dict[str, float] = {}
        for u in candidates:
            best_copy[u.text] = max(best_copy.get(u.text, 0.0), raw[id(u)])
        raw = {id(u): best_copy[u.text] for u in candidates}
        scored = sorted(
            ((raw[id(u)] * (1 - RANK_DISCOUNT * rank.get(registry[u.section_id].parent_id, 0)), u) for u in candidates),
            key=lambda x: -x[0],
        )
        return scored, raw

    def answer_sub_question(
        self, index: int, sub: SubQuestion, units: list[Unit], registry, targeted: bool, max_units: int | None = None
    ) -> list[Paragraph]:
        max_units = max_units or self.max_units
        keep_ratio = self.keep_ratio if max_units <= self.max_units else self.keep_ratio - 0.15
        scored, raw = self.scored_units(sub, units, registry, targeted)
        # a sentence covers less of a long question than its section does: the bar follows
        # what the retrieval gate found (the section's coverage), never above min_score; it
        # is a sentence's own coverage, before the rank prior
        min_score = self.sentence_bar(sub)
        if not scored or max(raw.values()) < min_score:
            return []
        top = scored[0][0]
        chosen = [(s, u) for s, u in scored if raw[id(u)] >= min_score and s >= 0.7 * top]
        documents = {u.document_id for _, u in chosen}
        amended = {d for d in documents for other in documents if other in registry.amended_by.get(d, [])}
        primary = [(s, u) for s, u in chosen if u.document_id not in amended]
        superseded = [(s, u) for s, u in chosen if u.document_id in amended]
        primary_top = primary[0][0]
        kept = [primary[0][1]]
        pool = [(s, u) for s, u in primary[1:] if s >= keep_ratio * primary_top]
        while pool and len(kept) < max_units:
            if len(kept) == max_units - 1:
                # the last slot: a passage not quoted yet, when about as good, so that a wrong
                # best passage still leaves the next one's best sentence in the answer
                quoted = {registry[k.section_id].parent_id for k in kept}
                pool.sort(key=lambda x: -x[0] * (1 - OTHER_PASSAGE * (registry[x[1].section_id].parent_id in quoted)))
            s, u = pool.pop(0)
            if not any(self._repeats(u, k) for k in kept):
                kept.append(u)
        # the passages retrieval ranks first always speak when a sentence of theirs clears the
        # bar: on policies nobody tuned for they hold the evidence more often than any other,
        # and a sentence of another passage scoring higher by shared words does not make them
        # wrong (a passage carrying an instruction to the assistant earns no such favour); a
        # sentence already shown (a heading each passage under it repeats) is not said twice
        for leading in sub.parent_ids[:SPEAKING_PASSAGES]:
            if registry[registry.section_id(leading)].suspicious or any(
                registry[k.section_id].parent_id == leading for k in kept
            ):
                continue
            own = next(
                (
                    u
                    for _, u in scored
                    if registry[u.section_id].parent_id == leading
                    and raw[id(u)] >= min_score
                    and u.document_id not in amended
                    and not any(self._repeats(u, k) for k in kept)
                ),
                None,
            )
            if own is not None:
                kept.append(own)
        kept = self.with_followers(kept, units, registry)
        position = {id(u): n for n, u in enumerate(units)}
        asked = quantities(sub.text)
        asked_terms = frozenset(analyze(sub.text, language_of(sub.text)))
        # one paragraph a passage, the best one's first, each in reading order: sentences of two
        # passages are never run together as if one text said them
        passages: dict[str, list[Unit]] = {}
        for u in kept:
            passages.setdefault(registry[u.section_id].parent_id, []).append(u)
        for group in passages.values():
            group.sort(key=lambda u: position[id(u)])
        paragraphs = [
            Paragraph(
                text=" ".join(band_column(u, asked, asked_terms) for u in group),
                source_ids=list(dict.fromkeys(u.source_id for u in group)),
                sub_question=index,
            )
            for group in passages.values()
        ]
        # false premises are checked in `ask` for every mode (answering/premises.py)
        if superseded:
            old = superseded[0][1]
            language = language_of(sub.text)
            newer = [d for d in registry.amended_by.get(old.document_id, []) if d in documents]
            lead = SUPERSEDED_LEAD.get(language, SUPERSEDED_LEAD["en"]).format(
                old=dated_name(self.kb.document(old.document_id), language),
                new=(" ; " if language == "fr" else "; ").join(
                    dated_name(self.kb.document(d), language) for d in newer
                ),
            )
            paragraphs.append(
                Paragraph(
                    text=old.display, source_ids=[old.source_id], sub_question=index, role="superseded", lead=lead
                )
            )
        return paragraphs

    def answer(
        self, subs: list[SubQuestion], registry, intent: str = "targeted"
    ) -> tuple[list[Paragraph], list[str], list[str]]:
        """(paragraphs, missing information, alerts)."""
        units, skipped = units_of(registry, self.kb)
        alerts = [
            f"Un passage de « {registry[s].name} » ressemble à une consigne adressée à l'assistant : "
            "il a été ignoré (les documents sont des données, jamais des instructions)."
            for s in skipped
        ]
        paragraphs: list[Paragraph] = []
        missing: list[str] = []
        for index, sub in enumerate(subs):
            if sub.status == NO_SOURCE:
                missing.append(sub.text)
                continue
            found = self.answer_sub_question(
                index,
                sub,
                units,
                registry,
                targeted=intent != "explanation",
                max_units=self.max_units + (2 if intent == "explanation" else 0),
            )
            if not found:
                sub.status = NO_SOURCE
                missing.append(sub.text)
            paragraphs.extend(found)
        return paragraphs, missing, alerts
