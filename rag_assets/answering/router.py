"""Routing of a message: small talk gets a direct reply without retrieval; anything else
is retrieved, as one standalone question split into 1–3 sub-questions, with a context
budget of 3, 5 or 7 parents (targeted / explanation / comparison).

With a model, the router asks it (structured output) to rewrite a follow-up into a
standalone question from the last three messages of the thread, to split a comparison
and to judge the need. Without one, the rules below do the same job as well as they can.
"""

from __future__ import annotations

import re

from rag_assets.answering.model import Route
from rag_assets.retrieve.query import content_terms, qualified_ids
from rag_assets.text.folding import fold
from rag_assets.text.language import detect_language

BUDGETS = {"targeted": 3, "explanation": 5, "comparison": 7}

_GREETINGS = {
    "bonjour",
    "bonsoir",
    "salut",
    "coucou",
    "hello",
    "hi",
    "hey",
    "allo",
    "good morning",
    "good afternoon",
    "good evening",
    "bonne journee",
    "bonne soiree",
    "au revoir",
    "bye",
    "goodbye",
    "a bientot",
    "see you",
}
_THANKS = {"merci", "thanks", "thank you", "thx", "merci beaucoup", "many thanks", "thank you very much"}
_FILLER = {
    "beaucoup",
    "bien",
    "a",
    "vous",
    "toi",
    "tous",
    "toutes",
    "tout",
    "le",
    "monde",
    "et",
    "ok",
    "okay",
    "super",
    "parfait",
    "genial",
    "tres",
    "pour",
    "votre",
    "ton",
    "aide",
    "reponse",
    "d",
    "accord",
    "cool",
    "top",
    "much",
    "so",
    "very",
    "for",
    "your",
    "the",
    "help",
    "great",
    "perfect",
    "again",
    "encore",
    "madame",
    "monsieur",
    "there",
    "all",
    "c",
    "est",
    "note",
    "bonne",
    "journee",
    "soiree",
    "you",
}
_REPLIES = {
    ("greeting", "fr"): "Bonjour ! Je réponds à vos questions à partir des documents de la base de connaissances, "
    "en citant mes sources. Que souhaitez-vous savoir ?",
    ("greeting", "en"): "Hello! I answer questions from the documents of the knowledge base, citing my sources. "
    "What would you like to know?",
    ("thanks", "fr"): "Avec plaisir ! N'hésitez pas si vous avez une autre question sur les documents.",
    ("thanks", "en"): "You're welcome! Feel free to ask another question about the documents.",
}
_ENGLISH_SMALL_TALK = {
    "hello",
    "hi",
    "hey",
    "good",
    "morning",
    "afternoon",
    "evening",
    "bye",
    "goodbye",
    "see",
    "thanks",
    "thank",
    "thx",
    "you",
    "many",
    "much",
    "very",
    "so",
    "great",
    "perfect",
}

_EXPLANATION = re.compile(
    r"\b(comment|pourquoi|expliqu\w*|d[ée]cri\w*|d[ée]taill\w*|en quoi consiste|"
    r"quelles sont les (?:[ée]tapes|conditions|hypoth[èe]ses|modalit[ée]s|r[èe]gles)|que (?:dit|pr[ée]voit)|"
    r"how|why|explain|describe|what are the (?:steps|conditions))\b",
    re.IGNORECASE,
)
_COMPARISON = re.compile(
    r"\b(compar\w*|diff[ée]rences?|versus|vs\.?|par rapport (?:à|au|aux)|plus (?:élevée?|faible|long|court)e?s? que|"
    r"difference|compared?|between)\b",
    re.IGNORECASE,
)
_COMPARISON_LEAD = re.compile(
    r"^\s*(?:quelles?\s+(?:est|sont)\s+(?:la|les)\s+diff[ée]rences?\s+(?:entre|de)\s+|(?:la|les)\s+diff[ée]rences?\s+entre\s+|"
    r"compare[rz]?\s+(?:entre\s+)?|comparaison\s+(?:entre|de|des|du)\s+|what\s+is\s+the\s+difference\s+between\s+|"
    r"compare\s+)",
    re.IGNORECASE,
)
_ALTERNATIVES = re.compile(
    r"\s*(?:,|;|\bet\b|\band\b|\bvs\.?|\bversus\b|\bpar rapport (?:à|au|aux)\b)\s*", re.IGNORECASE
)
_FOLLOW_UP_LEAD = re.compile(
    r"^\s*(?:et|and|aussi|also|what about|how about|idem|pareil|même question|same question)\b[\s,]*", re.IGNORECASE
)
_ANAPHORA = re.compile(
    r"\b(il|elle|ils|elles|celui-ci|celle-ci|celui|celle|ce dernier|cette dernière|ça|cela|"
    r"le même|la même|it|this|that|those|they)\b",
    re.IGNORECASE,
)


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", fold(text)).split())


def small_talk(message: str) -> str | None:
    """ "greeting" / "thanks" when the message is only that (at most eight words)."""
    plain = _plain(message)
    words = plain.split()
    if not words or len(words) > 8 or "?" in message and len(words) > 3:
        return None
    found = None
    rest = plain
    for phrase in sorted(_THANKS | _GREETINGS, key=len, reverse=True):
        if re.search(rf"\b{re.escape(phrase)}\b", rest):
            found = found or ("thanks" if phrase in _THANKS else "greeting")
            if phrase in _THANKS:
                found = "thanks"
            rest = re.sub(rf"\b{re.escape(phrase)}\b", " ", rest)
    if found is None:
        return None
    return found if all(w in _FILLER for w in rest.split()) else None


def _reply_language(message: str) -> str:
    words = set(_plain(message).split())
    return "en" if words and words <= _ENGLISH_SMALL_TALK else "fr"


def direct_reply(intent: str, message: str) -> str:
    return _REPLIES[(intent, _reply_language(message))]


def need_of(question: str, sub_questions: list[str]) -> str:
    if len(sub_questions) > 1 or _COMPARISON.search(question):
        return "comparison"
    if _EXPLANATION.search(question):
        return "explanation"
    return "targeted"


# ------------------------------------------------------------------ follow-ups


def _last_user_question(history: list[dict]) -> str | None:
    for message in reversed(history):
        if message.get("role") == "user" and not small_talk(message.get("content", "")):
            return message["content"]
    return None


def is_follow_up(question: str, history: list[dict]) -> bool:
    if not _last_user_question(history):
        return False
    if _FOLLOW_UP_LEAD.match(question):
        return True
    words = question.split()
    return len(words) <= 8 and (bool(_ANAPHORA.search(question)) or len(content_terms(question)) <= 2)


def rewrite_follow_up(question: str, history: list[dict]) -> str:
    """Rules: substitute what the follow-up changes ("Et en zone B ?" after "… en zone A ?"),
    otherwise append the follow-up to the previous question."""
    previous = _last_user_question(history)
    if not previous or not is_follow_up(question, history):
        return question
    rewritten = previous
    changed = False
    # in the order the follow-up names them: "et en zone C ou B ?" puts the first named in
    for noun, code in qualified_ids(question):
        for old_noun, old_code in qualified_ids(previous):
            if old_noun == noun and old_code != code:
                pattern = re.compile(rf"(\b{re.escape(noun)}s?\.?\s+){re.escape(old_code)}(?![\w-])", re.IGNORECASE)
                rewritten, count = pattern.subn(lambda m: m.group(1) + code, rewritten)
                changed = changed or count > 0
    if changed:
        return rewritten
    body = _FOLLOW_UP_LEAD.sub("", question).strip()
    return f"{previous.rstrip(' ?.!')} — {body}" if body else previous


# ----------------------------------------------------------------- comparisons


def split_comparison(question: str) -> list[str]:
    """ "Comparer la franchise inondation en zone A et en zone B" → ["la franchise
    inondation en zone A", "la franchise inondation en zone B"] (at most 3)."""
    if not _COMPARISON.search(question):
        return [question]
    body = _COMPARISON_LEAD.sub("", question).strip().rstrip(" ?.!")
    body = re.sub(r"\s+entre\s+", " ", body) if not _COMPARISON_LEAD.match(question) else body
    parts = [p.strip() for p in _ALTERNATIVES.split(body) if p and p.strip()]
    if len(parts) < 2:
        return [question]
    parts = parts[:3]
    first_words = parts[0].split()
    # trailing context shared by all: "la zone A et la zone B pour la franchise inondation"
    tail = ""
    last_words = parts[-1].split()
    if len(last_words) > len(first_words) + 1 and len(first_words) <= 4:
        tail = " ".join(last_words[len(first_words) :])
        parts[-1] = " ".join(last_words[: len(first_words)])
    subs = [parts[0]]
    for part in parts[1:]:
        words = part.split()
        if len(words) <= 3 and len(first_words) > len(words):
            lowered = [w.lower() for w in first_words]
            anchor = words[0].lower()
            if anchor in lowered:
                position = len(lowered) - 1 - lowered[::-1].index(anchor)
                part = " ".join(first_words[:position] + words)
            else:
                part = " ".join(first_words[: len(first_words) - len(words)] + words)
        subs.append(part)
    return [f"{s} {tail}".strip() for s in subs]


# ---------------------------------------------------------------------- router


def route_by_rules(question: str, history: list[dict]) -> Route:
    intent = small_talk(question)
    if intent:
        return Route(
            kind="direct",
            intent=intent,
            question=question,
            standalone_question=question,
            sub_questions=[],
            budget=0,
            direct_reply=direct_reply(intent, question),
        )
    standalone = rewrite_follow_up(question, history)
    subs = split_comparison(standalone)
    need = need_of(standalone, subs)
    return Route(
        kind="retrieve",
        intent=need,
        question=question,
        standalone_question=standalone,
        sub_questions=subs,
        budget=BUDGETS[need],
        rewritten=standalone != question,
    )


ROUTER_SYSTEM_PROMPT = """Tu prépares la recherche documentaire d'un assistant d'assurance. Tu ne réponds jamais \
toi-même à la question.
- kind : "direct" seulement pour une salutation, un remerciement ou une formule de politesse sans question ; \
"retrieve" pour tout le reste.
- standalone_question : la question réécrite pour être compréhensible seule, en remplaçant les pronoms et les \
ellipses par ce qu'ils désignent dans les messages précédents ; inchangée si elle est déjà autonome. Même langue.
- sub_questions : 1 à 3 questions à chercher séparément ; plusieurs seulement pour une comparaison ou une question \
qui porte sur plusieurs objets distincts ; sinon une seule, égale à standalone_question.
- need : "targeted" (un fait, une valeur), "explanation" (expliquer, décrire une méthode ou une procédure), \
"comparison" (comparer plusieurs objets)."""

ROUTER_SCHEMA = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["direct", "retrieve"]},
        "standalone_question": {"type": "string"},
        "sub_questions": {"type": "array", "items": {"type": "string"}},
        "need": {"type": "string", "enum": list(BUDGETS)},
    },
    "required": ["kind", "standalone_question", "sub_questions", "need"],
    "additionalProperties": False,
}


def _terms_of(text: str, language: str) -> set[str]:
    return set(content_terms(text, language)) | {code.lower() for _, code in qualified_ids(text)}


def _distinct_parts(subs: list[str], standalone: str) -> list[str]:
    """Sub-questions that each carry something of the question the others lack; else the question itself.

    Small models "split" a single question into paraphrases that drop its qualifiers ("chez MAIF
    (assurance santé animale)" → "… chez MAIF ?" twice), and a dropped qualifier is what lets a
    question about a contract nobody indexed through the gate.
    """
    language = detect_language(standalone)
    asked = _terms_of(standalone, language)
    owns = [_terms_of(sub, language) & asked for sub in subs[:3]]
    kept = [
        sub
        for i, (sub, own) in enumerate(zip(subs, owns))
        if own and not any(own < other or (own == other and j < i) for j, other in enumerate(owns) if j != i)
    ]
    return kept if len(kept) > 1 else [standalone]


def route_with_llm(question: str, history: list[dict], llm) -> tuple[Route, object]:
    rules = route_by_rules(question, history)
    if rules.kind == "direct":
        return rules, None  # small talk needs no model call
    past = "\n".join(f"[{m['role']}] {m['content']}" for m in history) or "(aucun)"
    user = f"Messages précédents du fil (du plus ancien au plus récent) :\n{past}\n\nNouveau message : {question}"
    result = llm.complete(
        [{"role": "system", "content": ROUTER_SYSTEM_PROMPT}, {"role": "user", "content": user}],
        "route",
        ROUTER_SCHEMA,
        max_tokens=400,
    )
    data = result.data if isinstance(result.data, dict) else {}
    if data.get("kind") == "direct" and len(question.split()) <= 8 and "?" not in question:
        intent = "thanks" if re.search(r"\b(merci|thank)", question, re.I) else "greeting"
        return Route(
            kind="direct",
            intent=intent,
            question=question,
            standalone_question=question,
            sub_questions=[],
            budget=0,
            method="llm",
            direct_reply=direct_reply(intent, question),
        ), result
    standalone = str(data.get("standalone_question") or "").strip() or rules.standalone_question
    subs, seen = [], set()
    for sub in data.get("sub_questions") or []:
        key = _plain(str(sub))
        if key and key not in seen:  # small models repeat themselves
            seen.add(key)
            subs.append(str(sub).strip())
    subs = _distinct_parts(subs, standalone)
    need = data.get("need") if data.get("need") in BUDGETS else need_of(standalone, subs)
    if len(subs) > 1:
        need = "comparison"
    elif need == "comparison":  # one thing to look up is not a comparison
        need = need_of(standalone, subs) if need_of(standalone, subs) != "comparison" else "explanation"
    return Route(
        kind="retrieve",
        intent=need,
        question=question,
        standalone_question=standalone,
        sub_questions=subs,
        budget=BUDGETS[need],
        rewritten=standalone != question,
        method="llm",
    ), result


def route(question: str, history: list[dict], llm=None) -> tuple[Route, object]:
    if llm is None:
        return route_by_rules(question, history), None
    return route_with_llm(question, history, llm)
