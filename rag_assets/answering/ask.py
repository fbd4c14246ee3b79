"""`ask`: route → retrieve per sub-question → context and source registry → generate
(model, or the offline extractive answerer) → verify → log and remember."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import time
import uuid
from dataclasses import dataclass, field

from rag_assets.answering.citations import build_registry
from rag_assets.answering.compact import DEFAULT_PROMPT_TOKENS
from rag_assets.answering.config import endpoints_from_settings, model_checks
from rag_assets.answering.extractive import ExtractiveAnswerer
from rag_assets.answering.generation import Endpoint, EndpointsExhausted, LLMClient, generate_answer, model_context
from rag_assets.answering.highlight import attach as attach_evidence
from rag_assets.answering.log import AnswerLog, log_path_for
from rag_assets.answering.memory import identifier, thread_owner, thread_store_for
from rag_assets.answering.model import NO_SOURCE, Answer, Paragraph
from rag_assets.answering.premises import check_premises, none_such_first, premise_passage, premise_reasons, prompt_note
from rag_assets.answering.retrieval import RetrievalOptions, Retriever
from rag_assets.answering.router import route as route_message
from rag_assets.answering.router import route_by_rules
from rag_assets.answering.verification import verify
from rag_assets.answering.withholding import not_an_answer, withhold
from rag_assets.index.records import PUBLIC_GROUP
from rag_assets.retrieve.limits import checked_question
from rag_assets.settings import load_settings
from rag_assets.text.language import detect_language as language_of


@dataclass
class AskOptions:
    retrieval: RetrievalOptions = field(default_factory=RetrievalOptions)
    # when a model answers, it also routes (follow-up rewrite, comparison split) and checks the
    # answer's support; else rules route and the answer's terms are checked in its sources.
    # None: RAG_ASSETS_LLM_CHECKS (answering/config.py)
    route_with_llm: bool | None = None
    verify_with_llm: bool | None = None
    log: bool = True
    memory: bool = True
    max_tokens: int = 1200
    # the answer prompt's size: the sources' sentences that matter (answering/compact.py);
    # None gives the model whole parents
    prompt_tokens: int | None = DEFAULT_PROMPT_TOKENS


def _endpoint_error_alert(exc: EndpointsExhausted, what: str) -> str:
    return f"Aucun point d'accès au modèle n'a répondu ({exc}) : {what}."


def ask(
    kb,
    question: str,
    thread_id: str | None = None,
    user_groups=None,
    *,
    user: str | None = None,
    endpoints: list[Endpoint] | None = None,
    llm: LLMClient | None = None,
    offline: bool = False,
    options: AskOptions | None = None,
    settings=None,
) -> Answer:
    """Answer `question` from the knowledge base, citing its sources.

    `endpoints`: OpenAI-compatible endpoints tried in order (default: from the settings);
    none, or `offline=True`: the extractive answerer. `user_groups`: the reader's groups
    (public is always included). `thread_id`: conversation memory for follow-ups, kept for
    `user` (who asks) with these groups; without a user, nothing is read or kept
    (`Answer.memory` False, and an alert says so)."""
    options = options or AskOptions()
    started = time.perf_counter()
    question = checked_question(question, settings)  # length, words, empty, cleaned (QueryRefused)
    thread_id = identifier(thread_id, "thread id") if thread_id else None
    remember = options.memory and thread_id is not None and user is not None
    owner = thread_owner(user, user_groups) if user is not None else None
    if llm is None and not offline:
        if endpoints is None:
            settings = settings or load_settings()
            endpoints = endpoints_from_settings(settings)
        llm = LLMClient(endpoints) if endpoints else None
    if offline:
        llm = None
    if llm is not None:
        by_model = model_checks((settings or load_settings()).llm_checks, llm.endpoints)
        options = dataclasses.replace(
            options,
            route_with_llm=by_model if options.route_with_llm is None else options.route_with_llm,
            verify_with_llm=by_model if options.verify_with_llm is None else options.verify_with_llm,
        )
    store_root = kb.store.root
    threads = thread_store_for(store_root)
    # the thread of this user with these groups, with only what the reader may see
    history = threads.last(thread_id, owner, 3, visible=lambda d: _visible(kb, d, owner["groups"])) if remember else []
    alerts: list[str] = []
    if options.memory and thread_id is not None and user is None:  # an anonymous thread could be anyone's
        alerts.append(
            f"Fil « {thread_id} » sans mémoire : aucun utilisateur n'est nommé (user), rien n'est lu ni gardé."
        )

    stage = time.perf_counter()
    try:
        route, _ = route_message(question, history, llm if options.route_with_llm else None)
    except EndpointsExhausted as exc:
        alerts.append(_endpoint_error_alert(exc, "routage par règles et réponse extractive hors ligne"))
        llm = None
        route, _ = route_by_rules(question, history), None
    routing_s = time.perf_counter() - stage

    answer = Answer(
        answer_id=uuid.uuid4().hex[:16],
        question=question,
        thread_id=thread_id,
        memory=remember,
        route=route,
        mode="direct" if route.kind == "direct" else ("llm" if llm else "extractive"),
    )
    answer.stages["routing_s"] = round(routing_s, 3)
    if route.kind != "direct":
        _answer_from_sources(kb, answer, route, user_groups, llm, options, alerts)
        attach_evidence(answer, kb)  # where each quote is printed, for page images
    answer.alerts = list(dict.fromkeys(alerts + answer.alerts))
    if llm is not None:
        answer.attempts = list(llm.attempts)
        answer.usage = llm.usage()
        answer.stages.update(model_times(llm.calls))
        answering = [c for c in llm.calls if c["schema"] == "answer"] or llm.calls
        if answering:
            answer.endpoint, answer.model = answering[-1]["endpoint"], answering[-1]["model"]
    if answer.mode == "extractive":
        answer.model, answer.endpoint = "extractive (offline)", None
    answer.latency_s = round(time.perf_counter() - started, 3)
    answer.created_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    if options.log:
        AnswerLog(log_path_for(store_root)).write(answer)
    if remember:
        reply = answer.render() if answer.mode == "direct" else (answer.text or "Aucune source trouvée.")
        threads.append(
            thread_id,
            owner,
            {"role": "user", "content": question},
            {"role": "assistant", "content": reply, "document_ids": sorted({s.document_id for s in answer.sources})},
        )
    return answer


def model_times(calls: list[dict]) -> dict:
    """Prefill and generation of the model calls, in tokens and seconds, as the server timed
    them (a llama.cpp server does; others give nothing): `cached_tokens` of the prompts were
    reused from its prompt cache, not computed."""
    timed = [c["timings"] for c in calls if c.get("timings")]
    if not timed:
        return {}
    keys = ("cache_n", "prompt_n", "prompt_ms", "predicted_n", "predicted_ms")
    total = {k: sum(t.get(k, 0) for t in timed) for k in keys}
    return {
        "prefill_tokens": int(total["prompt_n"]),
        "cached_tokens": int(total["cache_n"]),
        "prefill_s": round(total["prompt_ms"] / 1000, 3),
        "generation_tokens": int(total["predicted_n"]),
        "generation_s": round(total["predicted_ms"] / 1000, 3),
    }


def _visible(kb, document_id: str, groups: list[str]) -> bool:
    """A published document sharing one of the reader's groups (a withdrawn one is not)."""
    record = kb.document(document_id)
    return bool(record) and bool(set(record.get("allowed_groups") or [PUBLIC_GROUP]) & set(groups))


def _answer_from_sources(kb, answer: Answer, route, user_groups, llm, options: AskOptions, alerts: list[str]) -> None:
    retriever = Retriever(
        kb,
        user_groups,
        options.retrieval,
        llm=llm,
        asked=route.question if route.standalone_question != route.question else None,
    )
    stage = time.perf_counter()
    share = max(1, math.ceil(route.budget / max(1, len(route.sub_questions))))
    parent_ids: list[str] = []
    for text in route.sub_questions:
        retrieved = retriever.retrieve(text, share)
        answer.sub_questions.append(retrieved.sub)
        parent_ids.extend(h.parent_id for h in retrieved.hits)
    alerts.extend(retriever.alerts)
    alerts.extend(f"Portée de la recherche : {scope}" for scope in retriever.scopes)
    registry = build_registry(kb, list(dict.fromkeys(parent_ids)))
    answer.sources = list(registry.entries.values())
    subs = answer.sub_questions
    language = language_of(route.standalone_question)
    answer.stages["retrieval_s"] = round(time.perf_counter() - stage, 3)
    if all(s.status == NO_SOURCE for s in subs):
        answer.missing_information = [s.text for s in subs]
        return

    # false premises checked on the sources in every mode, said first
    extractive = ExtractiveAnswerer(kb, retriever.weights)
    premises, answer_texts = check_premises(
        route.standalone_question, subs, registry, extractive, asked=answer.question
    )
    answer.premises = [p.to_dict() for p in premises]
    paragraphs: list[Paragraph] = []
    context = None
    if llm is not None:
        try:
            stage = time.perf_counter()
            if options.prompt_tokens:
                context = model_context(
                    llm,
                    route.standalone_question,
                    subs,
                    registry,
                    extractive,
                    options.prompt_tokens,
                    notes=prompt_note(premises),
                    targeted=route.intent != "explanation",
                )
                answer.stages["context_s"] = round(time.perf_counter() - stage, 3)
                answer.stages["context_tokens"] = context.tokens
                stage = time.perf_counter()
            generated = generate_answer(
                llm,
                route.standalone_question,
                subs,
                registry,
                max_tokens=options.max_tokens,
                notes=prompt_note(premises),
                context=context,
            )
            answer.stages["answer_s"] = round(time.perf_counter() - stage, 3)
            paragraphs, answer.missing_information = generated.paragraphs, generated.missing_information
            alerts.extend(generated.alerts)
            for entry in registry.entries.values():
                if entry.kind == "section" and entry.suspicious:
                    alerts.append(
                        f"« {entry.name} » contient un passage qui ressemble à une consigne adressée à "
                        "l'assistant ; il a été signalé au modèle comme une donnée à ne pas exécuter."
                    )
        except EndpointsExhausted as exc:
            alerts.append(_endpoint_error_alert(exc, "réponse extractive hors ligne"))
            llm = None
            answer.mode = "extractive"
    if llm is None:
        # each sub-question answered without the figures it asserts (premises above)
        asked = [dataclasses.replace(s, text=answer_texts[i]) if i in answer_texts else s for i, s in enumerate(subs)]
        paragraphs, missing, extractive_alerts = extractive.answer(asked, registry, route.intent)
        paragraphs = none_such_first(paragraphs, premises)
        for sub, used in zip(subs, asked):
            sub.status = used.status
        original = {used.text: sub.text for sub, used in zip(subs, asked)}
        answer.missing_information = [original.get(m, m) for m in missing]
        alerts.extend(extractive_alerts)

    kept = []
    for paragraph in paragraphs:
        number = paragraph.sub_question
        if number is not None and subs[number].status == NO_SOURCE:
            alerts.append(
                f"Paragraphe écarté : il répond à « {subs[number].text} », pour laquelle aucune source n'a été trouvée."
            )
            continue
        kept.append(paragraph)
    answer.paragraphs = sorted(kept, key=lambda p: p.sub_question if p.sub_question is not None else 99)
    for sub in subs:
        if sub.status == NO_SOURCE and sub.text not in answer.missing_information:
            answer.missing_information.append(sub.text)
    if not answer.paragraphs:
        return
    stage = time.perf_counter()
    outcome = verify(
        answer.paragraphs,
        registry,
        llm=llm if (llm is not None and options.verify_with_llm) else None,
        language=language,
        shown=context.sections if context is not None else None,
    )
    answer.stages["verification_s"] = round(time.perf_counter() - stage, 3)
    alerts.extend(outcome["alerts"])
    # the kill switch — what a cited source does not hold is withheld, not shown
    answer.alerts.extend(alerts)
    alerts.clear()
    withhold(
        answer,
        registry,
        extractive if llm is not None else None,
        extra=lambda p: (
            premise_reasons(p, premises)
            + (not_an_answer(p, route.standalone_question, language) if llm is not None else [])
        ),
        fallback=lambda p: premise_passage(p, premises, registry),
    )
