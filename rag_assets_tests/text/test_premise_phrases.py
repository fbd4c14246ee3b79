"""The premise checks' phrases file: validated on load, its notation compiled to what it says."""

import re
import tomllib

import pytest

from rag_assets.text.premise_phrases import PATH, PremisePhrasesError, premise_phrases


def test_the_shipped_file_loads():
    phrases = premise_phrases()
    assert phrases.regex(phrases.waiting).search("Le délai d’attente est de 3 mois")
    assert "formule" in phrases.variant_nouns


def _written(tmp_path, change) -> str:
    raw = tomllib.loads(PATH.read_text(encoding="utf-8"))
    change(raw)
    lines = []
    for key, value in raw.items():
        if not isinstance(value, dict):
            lines.append(f"{key} = {_toml(value)}")
    for key, value in raw.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines += [f"{k} = {_toml(v)}" for k, v in value.items()]
    path = tmp_path / "phrases.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _toml(value) -> str:
    return "[" + ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in value) + "]"


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda raw: raw.update(unknown=["mot"]), "unknown"),
        (lambda raw: raw.update(waiting=[]), "waiting"),
        (lambda raw: raw["parameter"].update(nouns=[]), "nouns"),
        (lambda raw: raw.update(excludes=["sont {exclus"]), "unbalanced"),
        (lambda raw: raw.update(scope_words=["garanties de base"]), "single word"),
    ],
)
def test_a_malformed_file_is_refused_naming_it(tmp_path, change, said):
    path = _written(tmp_path, change)
    with pytest.raises(PremisePhrasesError, match=said) as error:
        premise_phrases(path)
    assert str(path) in str(error.value)


def test_the_notation_compiles_to_what_it_says():
    phrases = premise_phrases()

    def matches(phrase: str, text: str) -> list[str]:
        return re.findall(phrases.pattern([phrase]), text, re.IGNORECASE)

    # optional letters, either apostrophe, any white space, word boundaries
    assert matches("n'est pas couvert(e)(s)", "Ce qui n’est  pas couvertes") == ["n’est  pas couvertes"]
    assert matches("couvert(e)(s)", "découvert, couverture") == []
    # a choice, an empty one making it optional (tried last, as a greedy "?")
    assert matches("c'est {|bien }{exact|vrai}", "c'est bien vrai ? c'est exact") == ["c'est bien vrai", "c'est exact"]
    # the word goes on after "*"; a phrase ending in an apostrophe may be followed by a word
    assert matches("rembours*", "remboursement") == ["remboursement"]
    assert matches("{puisque|puisqu'}", "puisqu'il, puisque") == ["puisqu'", "puisque"]
    # everything else is literal
    assert matches("right{| }?", "is that right ? righteous") == ["right ?"]
    assert matches("-", "a-b") == ["-"]
