"""Errors that name the file and the reason, so a user knows what to fix."""

import unicodedata


def _shown(ch: str) -> str:
    category = unicodedata.category(ch)
    if category[0] != "C" and category not in ("Zl", "Zp"):
        return ch
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def printable(text: object) -> str:
    """``text`` with control and invisible formatting characters (newlines, terminal escape
    codes, bidirectional overrides, lone surrogates) written as escapes: a file name shown
    in a message or on a terminal is shown as it is, never acted on."""
    text = str(text)
    return text if text.isprintable() else "".join(map(_shown, text))


class DocumentError(Exception):
    """A source document cannot be processed; other documents are unaffected."""

    def __init__(self, path: object, reason: str):
        super().__init__(f"{printable(path)}: {reason}")
        self.path = str(path)
        self.reason = reason


class MetadataError(DocumentError):
    """A document's access or descriptive metadata is wrong: the document is not indexed, and a
    version already published is withdrawn (a mistake in access metadata fails closed)."""


class BudgetExceeded(DocumentError):
    """A document over one of its budgets (pages, page size, characters, archive expansion,
    memory, time): refused, and not tried again until it or the budget changes."""

    def __init__(
        self, path: object, reason: str, setting: str = "", limit: float | None = None, value: float | None = None
    ):
        super().__init__(path, reason)
        self.setting, self.limit, self.value = setting, limit, value


class StoreMismatchError(Exception):
    """The parts of the knowledge store disagree (e.g. dense and lexical versions differ)."""
