"""The compact context a model is given (sample corpus, real store; the model path against a
real HTTP server with scripted replies): the sentences the extractive stage scores, under
their headings, a table's rows under its header row, sources filled in rank order within a
token budget, the registry's ids; numbers still checked against the full sources."""

from __future__ import annotations

import pytest

from rag_assets.answering import AskOptions, ask
from rag_assets.answering.citations import build_registry
from rag_assets.answering.compact import compact_context, estimate_tokens
from rag_assets.answering.extractive import ExtractiveAnswerer, units_of
from rag_assets.answering.generation import SYSTEM_PROMPT, TEMPLATE_TOKENS
from rag_assets.answering.model import Paragraph
from rag_assets.answering.retrieval import Retriever
from rag_assets.answering.verification import verify
from rag_assets_tests.answering.openai_stub import ScriptedOpenAI, allowed_ids
from rag_assets_tests.answering.test_llm_path import ZONE_A, answer_citing_table, endpoint, route, verify_supported
from rag_assets_tests.support.stores import knowledge_base_of

HEADER = "| Événement | Zone | Franchise |"


@pytest.fixture
def zone_a(kb):
    """(registry, sub-question, extractive answerer) of the zone A question, five parents."""
    retrieved = Retriever(kb).retrieve(ZONE_A, 5)
    registry = build_registry(kb, retrieved.sub.parent_ids)
    return registry, retrieved.sub, ExtractiveAnswerer(kb)


def test_the_sources_show_the_scored_sentences_not_the_whole_parents(zone_a):
    registry, sub, extractive = zone_a
    context = compact_context(registry, [sub], extractive, budget=1000)
    units, _ = units_of(registry, registry.kb)
    scored, raw = extractive.scored_units(sub, units, registry, True)
    best = scored[0][1]
    assert best.text in context.text  # the row that answers
    whole = registry.context_text()
    assert len(context.text) < len(whole) / 2
    # a sentence no sub-question reaches the bar with, in a source that has some that do, is left out
    bar = extractive.sentence_bar(sub)
    shown_sections = set(context.sections)
    passing_sections = {u.section_id for u in units if raw[id(u)] >= bar}
    below = [
        u
        for u in units
        if u.section_id in shown_sections & passing_sections and raw[id(u)] < 0.5 * bar and len(u.text) > 40
    ]
    assert below and any(u.text not in context.text for u in below)
    # the registry's ids: a shown table is cited by its own id, named in a marker
    table = next(i for i in context.source_ids if "-T" in i)
    assert f"[{table} — Tableau 1 « Franchises par événement et par zone »]" in context.text
    assert all(i in registry for i in context.source_ids)


def test_a_table_row_is_shown_under_its_header_row(zone_a):
    registry, sub, extractive = zone_a
    context = compact_context(registry, [sub], extractive, budget=1000)
    table = context.text[context.text.index(HEADER) :]
    lines = table.split("\n")
    assert lines[1].startswith("|---") or set(lines[1]) <= set("|-: ")
    assert "| Inondation | Zone A | 5 000 € |" in lines[2:6]


def test_sources_fill_the_budget_in_rank_order(zone_a):
    registry, sub, extractive = zone_a
    roomy = compact_context(registry, [sub], extractive, budget=5000)
    assert roomy.tokens <= 5000 and not roomy.left_out
    assert list(roomy.sections) == [
        registry.section_id(p) for p in sub.parent_ids if registry.section_id(p) in roomy.sections
    ]
    first = estimate_tokens(next(iter(roomy.sections.values())))
    tight = compact_context(registry, [sub], extractive, budget=first + 10)
    assert tight.tokens <= first + 10
    assert list(tight.sections)[0] == list(roomy.sections)[0] and tight.left_out
    nothing = compact_context(registry, [sub], extractive, budget=10)
    assert not nothing.sections and nothing.source_ids == [] and len(nothing.left_out) == len(roomy.sections)


def test_numbers_are_checked_against_the_full_source_not_what_the_model_was_shown(zone_a):
    registry, sub, extractive = zone_a
    context = compact_context(registry, [sub], extractive, budget=1000)
    table = next(i for i in context.source_ids if "-T" in i)
    section = table.split("-")[0]
    # zone B's row is in the table but not among the rows shown for a flood in zone A
    assert "2 500 €" in registry[table].text and "2 500 €" not in context.sections[section]
    held = Paragraph(text="La franchise inondation en zone B est de 2 500 €.", source_ids=[table])
    invented = Paragraph(text="La franchise inondation en zone A est de 7 000 €.", source_ids=[table])
    verify([held, invented], registry, shown=context.sections)
    assert not held.unsupported_numbers
    assert invented.unsupported_numbers == ["7 000 €"]


def test_the_model_gets_a_compact_prompt_within_its_budget_and_the_stages_are_timed(kb):
    timings = {"cache_n": 420, "prompt_n": 600, "prompt_ms": 9000.0, "predicted_n": 40, "predicted_ms": 3000.0}
    answer_reply = answer_citing_table()
    script = {
        "route": [route(ZONE_A)],
        "answer": [lambda body: {**answer_reply(body), "timings": timings}],
        "verify": [verify_supported()],
    }
    with ScriptedOpenAI(script) as server:
        answer = ask(kb, ZONE_A, endpoints=[endpoint(server, "primary")], options=AskOptions(prompt_tokens=900))
        [request] = server.requests_for("answer")
        [check] = server.requests_for("verify")
    system, user = (m["content"] for m in request["messages"])
    assert system == SYSTEM_PROMPT
    # no tokenizer behind this endpoint: the estimate, which overcounts, keeps the prompt within budget
    assert estimate_tokens(system) + estimate_tokens(user) + TEMPLATE_TOKENS <= 900
    assert "| Inondation | Zone A | 5 000 € |" in user and HEADER in user
    ids = allowed_ids(request)
    assert all(f'id="{i}"' in user or f"[{i} —" in user for i in ids)
    # the check sees what the model saw, and the number is verified against the full table
    assert "| Zone B |" not in check["messages"][1]["content"]
    [paragraph] = answer.paragraphs
    assert paragraph.verdict == "supported" and not paragraph.unsupported_numbers
    stages = answer.stages
    assert {"routing_s", "retrieval_s", "context_s", "answer_s", "verification_s"} <= set(stages)
    assert 0 < stages["context_tokens"] <= 900
    assert stages["prefill_tokens"] == 600 and stages["cached_tokens"] == 420 and stages["prefill_s"] == 9.0
    assert stages["generation_tokens"] == 40 and stages["generation_s"] == 3.0


def test_whole_parents_when_no_prompt_budget_is_set(kb):
    script = {"route": [route(ZONE_A)], "answer": [answer_citing_table()], "verify": [verify_supported()]}
    with ScriptedOpenAI(script) as server:
        ask(kb, ZONE_A, endpoints=[endpoint(server, "primary")], options=AskOptions(prompt_tokens=None))
        [request] = server.requests_for("answer")
    user = request["messages"][1]["content"]
    assert "Identifiants de source autorisés" in user and "Tempête nommée (ouragan)" in user


FEES = """# Protection juridique Vie Quotidienne

## Montants des honoraires

Nous réglons les honoraires de votre avocat selon les montants ci-après, par formule.

| | Formule Essentielle | Formule Essentielle Plus |
|---|---|---|

Démarches amiables

350 €

525 €

Commissions administratives

400 €

600 €

Cour d'appel

1 200 €

1 800 €

Ces montants comprennent les frais de dossier.
"""


@pytest.mark.slow
@pytest.mark.dagster_run
def test_a_table_read_as_lines_is_shown_as_rows_under_its_column_headers(tmp_path):
    """A fee grid the layout read as lines (a label, then each amount in a block of its own) is
    one table for the extractive stage; the model is shown it the same way: each row on its
    own line under the header row that names the formulas."""
    kb = knowledge_base_of(tmp_path, {"protection-juridique.md": FEES})
    retrieved = Retriever(kb).retrieve("Quels honoraires d'avocat pour une cour d'appel ?", 3)
    registry = build_registry(kb, retrieved.sub.parent_ids)

    context = compact_context(registry, [retrieved.sub], ExtractiveAnswerer(kb), budget=1000)

    lines = context.text.split("\n")
    heads = [n for n, line in enumerate(lines) if "Formule Essentielle Plus" in line]
    assert heads, context.text
    assert "| Cour d'appel | 1 200 € | 1 800 € |" in lines[heads[0] + 2 :]
