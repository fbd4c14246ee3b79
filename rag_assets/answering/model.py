"""The answer object: route, sub-questions, paragraphs with their citations, the source
registry, verdicts and alerts; `to_dict()` for JSON and `render()` for the terminal."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SUPPORTED, PARTIAL, UNSUPPORTED = "supported", "partial", "unsupported"
VERDICTS = (SUPPORTED, PARTIAL, UNSUPPORTED)
FOUND, NO_SOURCE = "found", "no_source_found"


@dataclass
class SourceEntry:
    """One citable thing of the context: a parent (section) or a table / figure / formula
    inside it. `name` is built from the document's metadata, never by a model."""

    source_id: str  # "S1" (section), "S1-T1" (table), "S1-F1" (figure), "S1-E1" (formula)
    kind: str  # section | table | figure | formula
    name: str  # "Document, section, Tableau 1 « … », p. 3"
    label: str | None  # "Tableau 1 « … »" for elements, None for sections
    document_id: str
    document_title: str
    section: str
    heading_path: list[str]
    pages: list[int]
    parent_id: str
    text: str  # the element's own text (a section: the parent's full text)
    document_type: str | None = None
    effective_date: str | None = None
    amends: list[str] = field(default_factory=list)  # document ids this document amends
    amended_by: list[str] = field(default_factory=list)  # document ids amending this one
    picture_path: str | None = None  # figures: image file, when kept
    caption: str | None = None
    number: int | None = None  # element number in its document (Tableau 2 …)
    suspicious: list[str] = field(default_factory=list)  # sentences that look like instructions

    @property
    def evidence(self) -> str:
        """What a citation of this entry vouches for: its text plus what names it."""
        return "\n".join(
            x for x in (self.document_title, " > ".join(self.heading_path), self.caption or "", self.text) if x
        )

    def brief(self) -> dict:
        return {
            "source_id": self.source_id,
            "kind": self.kind,
            "name": self.name,
            "document_id": self.document_id,
            "parent_id": self.parent_id,
            "pages": self.pages,
        }


@dataclass
class Route:
    kind: str  # "direct" | "retrieve"
    intent: str  # greeting | thanks | targeted | explanation | comparison
    question: str  # as asked
    standalone_question: str  # rewritten with the thread memory when a follow-up
    sub_questions: list[str]
    budget: int  # parents of context: 3 / 5 / 7
    rewritten: bool = False
    method: str = "rules"  # rules | llm
    direct_reply: str | None = None


@dataclass
class SubQuestion:
    text: str
    status: str = FOUND  # found | no_source_found
    queries: list[str] = field(default_factory=list)  # what was searched, in order
    reformulated: bool = False
    best_score: float = 0.0
    parent_ids: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)  # parent_id -> relevance
    gate: dict = field(default_factory=dict)  # the evidence the relevance gate decided on
    # question terms that chose the documents searched ("maif", "raqvam"): they say which
    # document, not which passage of it answers
    scope_terms: list[str] = field(default_factory=list)


@dataclass
class Paragraph:
    text: str
    source_ids: list[str]
    sub_question: int | None = None  # index into Answer.sub_questions
    role: str = "answer"  # answer | superseded (an earlier provision replaced by a later source)
    lead: str | None = None  # framing written by the system (no claim, not verified), shown before the text
    verdict: str | None = None  # supported | partial | unsupported
    quote: str | None = None  # verbatim from `quote_source_id`
    quote_source_id: str | None = None
    quote_found: bool | None = None
    unsupported_numbers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # where the quote is printed (answering/highlight.py): source, file, pages with boxes and page
    # size, or why there is no page image
    evidence: dict | None = None

    @property
    def display(self) -> str:
        return f"{self.lead} {self.text}" if self.lead else self.text


@dataclass
class Answer:
    answer_id: str
    question: str
    thread_id: str | None
    route: Route
    mode: str  # direct | extractive | llm
    paragraphs: list[Paragraph] = field(default_factory=list)
    sub_questions: list[SubQuestion] = field(default_factory=list)
    sources: list[SourceEntry] = field(default_factory=list)  # the whole context registry
    missing_information: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    # false premises of the question (said first, citing the source) and paragraphs
    # withheld by the kill switch (shown as withheld, never as the answer)
    premises: list[dict] = field(default_factory=list)
    withheld: list[dict] = field(default_factory=list)
    model: str | None = None
    endpoint: str | None = None
    attempts: list[dict] = field(default_factory=list)  # endpoint errors before the one that answered
    usage: dict = field(default_factory=dict)
    # seconds of each stage (routing, retrieval, context, answer, verification) and, over the
    # model calls, prefill and generation seconds and tokens (`ask.model_times`)
    stages: dict = field(default_factory=dict)
    latency_s: float = 0.0
    created_at: str = ""
    memory: bool = False  # the thread's history was read and this exchange kept in it (a user was named)

    # ------------------------------------------------------------------ views
    def source(self, source_id: str) -> SourceEntry | None:
        return next((s for s in self.sources if s.source_id == source_id), None)

    @property
    def cited(self) -> list[SourceEntry]:
        """The sources the answer shows, as `render` does: each premise's, then each paragraph's."""
        ids = [p["source_id"] for p in self.premises if p.get("source_id")] + [
            i for p in self.paragraphs for i in p.source_ids
        ]
        return [s for s in self.sources if s.source_id in ids]

    @property
    def refused(self) -> bool:
        """True when nothing was answered because no source was found."""
        return self.mode != "direct" and not self.paragraphs

    @property
    def text(self) -> str:
        if self.mode == "direct":
            return self.route.direct_reply or ""
        return "\n\n".join(p.display for p in self.paragraphs)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["text"] = self.text
        data["refused"] = self.refused
        data["citations"] = [s.brief() for s in self.cited]
        for entry in data["sources"]:
            entry.pop("text", None)  # the registry without the (long) context text
        return data

    def evidence_images(self, folder, prefix: str | None = None) -> list[dict]:
        """One PNG per quoting paragraph whose source is a PDF: its page with the quoted lines
        highlighted, written in ``folder`` (names start with ``prefix``, default the answer id);
        ``[{"paragraph", "source_id", "path", "note"}]`` (``path`` None and a ``note`` for a
        source without pages)."""
        from rag_assets.answering.highlight import evidence_images

        return evidence_images(self, folder, prefix)

    def _shown(self, number: int, paragraph: Paragraph, source_id: str, images: dict[int, dict] | None) -> str:
        """What follows a citation's name when page images were asked for."""
        evidence = paragraph.evidence or {}
        if images is None or evidence.get("source_id") != source_id:
            return ""
        image = images.get(number) or {}
        if image.get("path"):
            return f" — page image: {image['path']}"
        section = evidence.get("section")
        return f" — no page image ({image.get('note') or evidence.get('no_page_image')})" + (
            f"; section: {section}" if section else ""
        )

    def render(self, images: dict[int, dict] | None = None) -> str:
        """The answer for a terminal; with ``images`` (paragraph number -> ``evidence_images``
        item), each quoted citation is followed by its page image or why there is none."""
        if self.mode == "direct":
            return self.route.direct_reply or ""
        lines: list[str] = []
        for premise in self.premises:  # a false premise is said first, with its source
            lines.append(f"⚠ {premise['message']}")
            entry = self.source(premise["source_id"]) if premise.get("source_id") else None
            if entry is not None:
                lines.append(f"   ↳ {entry.name}")
            lines.append("")
        for number, paragraph in enumerate(self.paragraphs, start=1):
            lines.append(paragraph.display)
            for source_id in paragraph.source_ids:
                entry = self.source(source_id)
                if entry is not None:
                    lines.append(f"   ↳ {entry.name}{self._shown(number, paragraph, source_id, images)}")
            lines.append("")
        for sub in self.sub_questions:
            if sub.status == NO_SOURCE:
                lines.append(
                    f"Aucune source trouvée (no source found) pour : « {sub.text} » — pas de réponse sans source."
                )
        for item in self.missing_information:
            if not any(item == s.text for s in self.sub_questions) or any(
                item == s.text and s.status != NO_SOURCE for s in self.sub_questions
            ):
                lines.append(f"Information manquante : {item}")
        for record in self.withheld:  # shown as withheld, never as the answer
            lines.append(
                f"Paragraphe retenu (non présenté comme réponse) : {record['reason']}"
                + (
                    " ; remplacé par l'extrait des sources ci-dessus."
                    if record.get("replacement") not in (None, "Non trouvé dans les documents")
                    else " ; non trouvé dans les documents."
                    if record.get("replacement")
                    else "."
                )
            )
        if self.alerts:
            if lines and lines[-1] != "":
                lines.append("")
            lines.append("Alertes :")
            lines.extend(f"  ⚠ {alert}" for alert in self.alerts)
        return "\n".join(lines).rstrip()
