"""The optional judge: an LLM endpoint asked whether an answer gives the expected one, its
verdict recorded beside our own scoring, never mixed with it."""

from __future__ import annotations

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["correct", "partial", "incorrect"]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
JUDGE_PROMPT = (
    "Tu évalues la réponse d'un assistant documentaire d'assurance. Compare-la à la réponse attendue : "
    '"correct" si elle donne l\'essentiel de la réponse attendue (mêmes valeurs, même sens), "partial" '
    "si elle n'en donne qu'une partie, \"incorrect\" si elle la contredit, l'omet ou refuse de répondre "
    "alors qu'une réponse était attendue. Une réponse attendue qui est un refus est correcte quand "
    "l'assistant dit ne rien avoir trouvé. Réponds en JSON."
)


def judge(llm, question: str, expected: str, answer_text: str) -> dict:
    user = (
        f"Question : {question}\n\nRéponse attendue : {expected}\n\n"
        f"Réponse de l'assistant :\n{answer_text or '(aucune réponse : aucune source trouvée)'}"
    )
    result = llm.complete(
        [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": user}],
        "judge",
        JUDGE_SCHEMA,
        max_tokens=200,
    )
    data = result.data if isinstance(result.data, dict) else {}
    verdict = data.get("verdict") if data.get("verdict") in ("correct", "partial", "incorrect") else None
    return {"verdict": verdict, "reason": str(data.get("reason") or "")[:500], "model": result.model}
