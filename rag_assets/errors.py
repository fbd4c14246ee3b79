"""Errors that name the file and the reason, so a user knows what to fix."""


class DocumentError(Exception):
    """A source document cannot be processed; other documents are unaffected."""

    def __init__(self, path: object, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class StoreMismatchError(Exception):
    """The parts of the knowledge store disagree (e.g. dense and lexical versions differ)."""
