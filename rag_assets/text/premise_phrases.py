"""The words and phrases the premise checks (`rag_assets/answering/premises.py`) recognise,
read from ``premise_phrases.toml`` beside this module (package data).

The file is TOML: each key names a group and holds a non-empty list of strings; ``[parameter]``
is a table of such lists (the words of a figure stated as the policy's). Unknown keys and
empty lists are refused (`PremisePhrasesError`, naming the file). Two groups are plain words,
read as written: ``variant_nouns`` and ``scope_words``. Every other group is a list of
phrases, matched case-insensitively (``none_of`` is matched against text already
lower-cased and without accents), written in this small notation — no regular expressions:

* ``'`` is either apostrophe (``'`` or ``’``): ``"n'est pas"``, ``"d'"``;
* a space is any run of white space;
* ``(e)``: optional letters, ``"couvert(e)(s)"`` is couvert, couverte, couverts, couvertes;
* ``{a|b|}``: one of the choices, an empty one making the whole choice optional,
  ``"c'est {|bien |vraiment }{exact|vrai}"`` (not nested);
* ``*`` at a word's end: the word may go on, ``"rembours*"`` is remboursé, remboursement…;
* everything else is literal, and a phrase begins and ends at word boundaries (where its
  first or last character is a letter or digit: ``"d'"`` may be followed by a word).

`premise_phrases` reads the file once (cached) and validates it with pydantic.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

PATH = Path(__file__).with_name("premise_phrases.toml")
# a phrase some of whose forms begin with a word character and some not: a word boundary
# before those that do (the next character is a word character the previous is not); likewise at its end
_START = r"(?:(?<!\w)(?=\w)|(?!\w))"
_END = r"(?:(?<=\w)(?!\w)|(?<!\w))"
_NOTATION = re.compile(r"\{[^{}]*\}|\([^(){}]+\)|\*|'|’| +|[^{}()*'’ ]+")


class PremisePhrasesError(ValueError):
    """A malformed premise phrases file; the message names the file."""


def _phrase(value: str) -> str:
    if not value.strip():
        raise ValueError("an empty phrase")
    if "".join(m.group(0) for m in _NOTATION.finditer(value)) != value:
        raise ValueError(f"unbalanced or nested braces or parentheses in {value!r}")
    return value


def _word(value: str) -> str:
    if not re.fullmatch(r"\w+", value):
        raise ValueError(f"{value!r} is not a single word")
    return value


Phrases = Annotated[list[Annotated[str, AfterValidator(_phrase)]], Field(min_length=1)]
Words = Annotated[list[Annotated[str, AfterValidator(_word)]], Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParameterPhrases(_Strict):
    """A figure the question states as the policy's: "le plafond est de", "mon contrat prévoit une
    franchise de", "la garantie couvre jusqu'à", "sont remboursés à hauteur de"."""

    nouns: Phrases  # what a policy sets a value of: franchise, plafond…
    new_subject: Phrases  # a word that starts another thing's words ("pour un sinistre de")
    copulas: Phrases  # est, sera…
    value_links: Phrases  # de, à, fixé à… (after a copula)
    amounts_to: Phrases  # s'élève à
    sets: Phrases  # prévoit, fixe…
    articles: Phrases  # une, le… (after "prévoit")
    definite: Phrases  # le, la, votre… (before the noun: "le plafond de 5 000 €" is the policy's)
    links: Phrases  # de, d', à (after "prévoit une franchise")
    covers: Phrases  # couvre, rembourse… (then "jusqu'à")
    up_to: Phrases  # jusqu'à
    covered_copulas: Phrases  # est, sont (then "remboursés")
    covered: Phrases  # remboursé, couvert… (after est, sont)
    covered_links: Phrases  # à hauteur de, jusqu'à, à
    hedges: Phrases  # seulement, environ (before the figure)


class PremisePhrases(_Strict):
    confirm: Phrases  # asking to confirm, or repeating hearsay: "c'est bien ça ?", "on m'a dit"
    asking: Phrases  # interrogative words: a question that asks, not one that asserts
    parameter: ParameterPhrases
    variant_nouns: Words  # formule, option, niveau… (named variants)
    cover_asked: Phrases  # covered, included, refunded (a question whether something is covered)
    scope_words: Words  # where, not what: "dans les garanties de base", "en formule 2"
    not_included: Phrases  # a guarantee outside the base contract: "en option"
    excludes: Phrases  # a sentence excluding what it names: "sont exclus"
    restricts: Phrases  # a sentence restricting the cover: "réduite", "déchéance"
    condition: Phrases  # a sentence setting a condition: "doit", "à condition"
    elapsed: Phrases  # how long the reader has held the cover: "il y a", "depuis"
    elapsed_hedges: Phrases  # "il y a seulement …"
    waiting: Phrases  # a waiting period: "délai d'attente", "carence"
    no_cell: Phrases  # a table cell saying a column's variant lacks the guarantee: "non", "—"
    none_of: Phrases  # a passage saying there is none (accents folded): "n'a pas de"

    def pattern(self, phrases: list[str]) -> str:
        """The alternation of `phrases` (a group of this file), as a regular expression."""
        return "(?:" + "|".join(_bounded(p) for p in phrases) + ")"

    def regex(self, phrases: list[str], flags: int = re.IGNORECASE) -> re.Pattern[str]:
        return re.compile(self.pattern(phrases), flags)


def _literal(text: str) -> str:
    out = []
    for piece in _NOTATION.findall(text):
        if piece in ("'", "’"):
            out.append("['’]")
        elif piece == "*":
            out.append(r"\w*")
        elif piece.isspace():
            out.append(r"\s+")
        elif piece.startswith("("):
            out.append("(?:" + re.escape(piece[1:-1]) + ")?")
        else:
            out.append(re.escape(piece))
    return "".join(out)


def _compile(phrase: str) -> str:
    out = []
    for piece in _NOTATION.findall(phrase):
        if piece.startswith("{"):
            choices = piece[1:-1].split("|")
            written = [_literal(c) for c in choices if c]
            # an empty choice makes it optional, tried after the others (as a greedy "?")
            out.append("(?:" + "|".join(written) + (")?" if "" in choices else ")"))
        else:
            out.append(_literal(piece))
    return "".join(out)


def _forms(phrase: str) -> list[str]:
    """Every form `phrase` writes, "*" left out."""
    forms = [""]
    for piece in _NOTATION.findall(phrase):
        if piece.startswith("{"):
            choices = [c for choice in piece[1:-1].split("|") for c in _forms(choice)]
        elif piece.startswith("("):
            choices = ["", piece[1:-1]]
        else:
            choices = ["" if piece == "*" else piece]
        forms = [f + c for f in forms for c in choices]
    return forms


def _bounded(phrase: str) -> str:
    """`phrase` as a regular expression, at word boundaries where its forms begin or end with a
    word character (a plain `\\b` when all do: faster to search than `_START`, `_END`)."""
    forms = [f for f in _forms(phrase) if f]
    first = {bool(re.match(r"\w", f)) for f in forms}
    last = {bool(re.search(r"\w$", f)) for f in forms}
    start = r"\b" if first == {True} else "" if first == {False} else _START
    end = r"\b" if last == {True} else "" if last == {False} else _END
    return start + _compile(phrase) + end


@cache
def premise_phrases(path: Path = PATH) -> PremisePhrases:
    """The phrases of `path` (by default the package's file), validated (see the module's docstring)."""
    try:
        with path.open("rb") as file:
            raw = tomllib.load(file)
        return PremisePhrases.model_validate(raw)
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as error:
        raise PremisePhrasesError(f"{path}: {error}") from error
