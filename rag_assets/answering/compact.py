"""A model's context made of the sentences that matter, not of whole parents.

Per source, the units the extractive stage scores for the sub-questions (a sentence, a table
row, a formula) that reach its sentence bar, best first and at most `PER_SOURCE` of them, with
what each needs to be read right (the list a sentence announces, the figure closing its
clause, a row's notes: `ExtractiveAnswerer.with_followers`), shown in reading order under
their headings; a table's rows keep its header row. Sources are filled in the retrieval's rank
order (the sub-questions' parents taken in turn) until the token budget is spent; a source
that does not fit whole gives up its lowest-scored units first.

Source ids are the registry's, so citations resolve as before, and verification still checks
each shown number against the full text of its cited source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from rag_assets.answering.extractive import ExtractiveAnswerer, Unit, rows_read_as_text, units_of
from rag_assets.answering.model import NO_SOURCE, SubQuestion

# a model prompt's size (system prompt, question and context) unless told otherwise: prefill
# dominates a small local model's time on a CPU (evaluations/README.md)
DEFAULT_PROMPT_TOKENS = 1500
PER_SOURCE = 6  # scored units a source shows at most, besides the units they need to be read
# without the model's tokenizer: BPE vocabularies spend about 4 characters of French a token;
# 3 overestimates the count, so a budget is never exceeded for want of a tokenizer
CHARS_PER_TOKEN = 3
GAP = "[…]"  # between two shown sentences of one paragraph that are not consecutive


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass
class CompactContext:
    text: str
    source_ids: list[str]  # the ids shown: sections, and the elements whose units are shown
    sections: dict[str, str] = field(default_factory=dict)  # section id -> its text as shown
    tokens: int = 0  # of the sources shown, as counted when filling the budget
    left_out: list[str] = field(default_factory=list)  # section ids the budget had no room for


def _headings(registry, parent_ids: list[str]) -> dict[tuple[str, int], str]:
    """(parent id, block index) -> the heading block above it in its parent (a parent joining
    short sections keeps their headings as blocks), '' under none."""
    found = {}
    for parent_id in parent_ids:
        heading = ""
        for index, block in enumerate(registry.kb.parent(parent_id).get("blocks") or []):
            if block["kind"] == "heading":
                heading = block["text"]
            found[(parent_id, index)] = heading
    return found


def _rank_order(subs: list[SubQuestion]) -> list[str]:
    """Parent ids by rank, the sub-questions taken in turn: each one's best before any second."""
    order: list[str] = []
    depth = max((len(s.parent_ids) for s in subs), default=0)
    for rank in range(depth):
        for sub in subs:
            if rank < len(sub.parent_ids) and sub.parent_ids[rank] not in order:
                order.append(sub.parent_ids[rank])
    return order


def render_source(
    registry, section_id: str, shown: list[Unit], position: dict[int, int], headings, blocks: dict[int, dict]
) -> str:
    """A source as the model sees it: `shown` in reading order, under the headings of a joined
    parent, each element marked with its id, a table's rows under its header row. `blocks`: its
    parent's blocks as the units were read from them (a table read as lines is one table block)."""
    parent_id = registry[section_id].parent_id
    body: list[str] = []
    heading = ""
    last: Unit | None = None
    for unit in sorted(shown, key=lambda u: position[id(u)]):
        index = unit.block[1]
        if headings.get(unit.block, "") != heading:
            heading = headings.get(unit.block, "")
            if heading:
                body.append(f"## {heading}")
        same_block = last is not None and last.block == unit.block
        if same_block and blocks[index]["kind"] == "table":
            body[-1] += "\n" + unit.text
        elif same_block:
            adjacent = position[id(unit)] == position[id(last)] + 1
            body[-1] += (" " if adjacent else f" {GAP} ") + unit.text
        else:
            element_id = registry.element_id(parent_id, index)
            if element_id:
                body.append(registry.element_marker(element_id))
            if blocks[index]["kind"] == "table":
                lines = [line.strip() for line in blocks[index]["text"].split("\n") if line.strip().startswith("|")]
                head = "\n".join(lines[:2]) if len(lines) >= 3 else ""
                body.append(f"{head}\n{unit.text}" if head else unit.text)
            else:
                body.append(unit.text)
        last = unit
    return registry.source_text(section_id, body)


def compact_context(
    registry,
    subs: list[SubQuestion],
    extractive: ExtractiveAnswerer,
    budget: int,
    count_tokens: Callable[[str], int] = estimate_tokens,
    targeted: bool = True,
) -> CompactContext:
    """The sources' sentences that matter for `subs`, in at most `budget` tokens of context."""
    units, _ = units_of(registry, registry.kb)  # a sentence that reads like an order is never shown
    position = {id(u): n for n, u in enumerate(units)}
    best: dict[int, float] = {}  # id(unit) -> its best score over the sub-questions
    passing: set[int] = set()  # ids of units that reach a sub-question's sentence bar
    asked = [s for s in subs if s.status != NO_SOURCE]
    for sub in asked:
        scored, raw = extractive.scored_units(sub, units, registry, targeted)
        bar = extractive.sentence_bar(sub)
        for score, unit in scored:
            best[id(unit)] = max(best.get(id(unit), 0.0), score)
            if raw[id(unit)] >= bar:
                passing.add(id(unit))
    headings = _headings(registry, registry.parent_ids)
    read = {p: dict(rows_read_as_text(registry.kb.parent(p).get("blocks") or [])) for p in registry.parent_ids}
    sections: dict[str, str] = {}
    shown_ids: list[str] = []
    left_out: list[str] = []
    used = 0
    for parent_id in _rank_order(asked):
        section_id = registry.section_id(parent_id)
        own = sorted((u for u in units if u.section_id == section_id and id(u) in best), key=lambda u: -best[id(u)])
        # the units that reach the bar; else the best one, the model may read what the scores miss
        chosen = [u for u in own if id(u) in passing][:PER_SOURCE] or own[:1]
        while chosen:
            shown = ExtractiveAnswerer.with_followers(chosen, units, registry)
            text = render_source(registry, section_id, shown, position, headings, read[parent_id])
            cost = count_tokens(text)
            if used + cost <= budget:
                break
            chosen = chosen[:-1]
        if not chosen:
            left_out.append(section_id)
            continue
        used += cost
        sections[section_id] = text
        shown_ids += [section_id] + [i for i in dict.fromkeys(u.source_id for u in shown) if i != section_id]
    body = "\n\n".join(sections.values())
    return CompactContext(
        text=f"<sources>\n{body}\n</sources>",
        source_ids=list(dict.fromkeys(shown_ids)),
        sections=sections,
        tokens=used,
        left_out=left_out,
    )
