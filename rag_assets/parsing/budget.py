"""A budget per document, enforced in the conversion process.

A hostile or absurd file (a DOCX expanding to 127 MB of XML, 5,000 blank PDF pages, a
14,400 pt page, a 20 MB line of Markdown, 50 MB of nested <div>) must cost a bounded
amount and fail its own document with a message naming the limit and the value. What can
be known before Docling opens the file is checked first (pages, page size, archive
expansion, the characters of a text format); the characters Docling extracted are checked
after; time and memory bound the conversion itself:

- time: the parent stops the conversion process at RAG_ASSETS_CONVERT_TIMEOUT_S;
- memory: the parent stops it when its data memory (VmData: heap and private mappings)
  goes over RAG_ASSETS_MAX_MEMORY_MB, and the process runs under an RLIMIT_DATA a little
  above that, so a sudden huge allocation fails there (MemoryError) instead of taking the
  machine: either way the message names the memory limit. A conversion whose memory levels
  off just under the limit (50 MB of nested <div> held 3.4 GB of 4 GB) is stopped once it
  has held over RAG_ASSETS_MEMORY_PLATEAU_FRACTION of the limit for RAG_ASSETS_MEMORY_PLATEAU_S.

Characters do not bound what embedding costs (a 9.9 M-character Markdown is 2.4 M tokens, over
5 minutes of embedding): the tokens of the document's children, counted with the embedder's
tokenizer before anything is embedded, are held to RAG_ASSETS_MAX_TOKENS (the children stage,
rag_assets/ingest/stages.py).

Every limit is a field of Budget (rag_assets/document_budget.py) and a setting (docs/settings.md);
exceeding one raises BudgetExceeded, which the ingest records so that the same bytes under the
same budget are refused at once next time (rag_assets/ingest/refusals.py).
"""

from __future__ import annotations

import math
import re
import resource
import zipfile
from pathlib import Path

from rag_assets.document_budget import Budget
from rag_assets.errors import BudgetExceeded

# PDF pages buffered between two conversion stages. Docling's default (100) lets page
# rendering run far ahead of the layout stage, so memory grew with the page count: the
# 155-page Solvency II directive peaked at 4.2 GB VmData, over the default limit; with one
# batch (4) in flight it peaks at 2.3 GB in the same time.
PAGES_IN_FLIGHT = 4

# the variable each limit is read from (rag_assets/settings.py), named in a refusal's message
VARIABLES = {name: f"RAG_ASSETS_{name.upper()}" for name in Budget.model_fields}
TEXT_SUFFIXES = {".md", ".markdown"}  # formats whose file is their text: counted before converting
ARCHIVE_SUFFIXES = {".docx", ".pptx"}
_MIB = 1024 * 1024


def _exceeded(name: str, setting: str, limit: float, value: float, reason: str) -> BudgetExceeded:
    return BudgetExceeded(name, f"{reason} ({setting})", setting=setting, limit=limit, value=value)


# -- before converting -------------------------------------------------------------------------


def check_before_conversion(source_path: Path, display_name: str, budget: Budget) -> None:
    """Pages and page size (PDF), expansion (DOCX/PPTX), characters (Markdown): refused
    before Docling opens the file."""
    suffix = Path(source_path).suffix.lower()
    if suffix == ".pdf":
        _check_pdf(source_path, display_name, budget)
    elif suffix in ARCHIVE_SUFFIXES:
        _check_archive(source_path, display_name, budget)
    elif suffix in TEXT_SUFFIXES and Path(source_path).stat().st_size > budget.max_characters:
        # a UTF-8 file has at most as many characters as bytes: read it only when that could be over
        characters = len(Path(source_path).read_text(encoding="utf-8", errors="replace"))
        check_characters(characters, display_name, budget)


def _check_pdf(source_path: Path, display_name: str, budget: Budget) -> None:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(str(source_path))
    try:
        pages = len(pdf)
        if pages > budget.max_pages:
            raise _exceeded(
                display_name,
                VARIABLES["max_pages"],
                budget.max_pages,
                pages,
                f"document has {pages:,} pages, over the {budget.max_pages:,}-page limit",
            )
        for index in range(pages):
            width, height = pdf.get_page_size(index)  # from the page tree, without loading the page
            if max(width, height) > budget.max_page_pt:
                raise _exceeded(
                    display_name,
                    VARIABLES["max_page_pt"],
                    budget.max_page_pt,
                    max(width, height),
                    f"page {index + 1} is {width:,.0f} × {height:,.0f} pt, over the "
                    f"{budget.max_page_pt:,.0f}-pt page size limit",
                )
    finally:
        pdf.close()


def archive_expansion(source_path: Path) -> tuple[int, int]:
    """(uncompressed size of every member, size of the file), from the archive's directory."""
    with zipfile.ZipFile(source_path) as archive:
        expanded = sum(info.file_size for info in archive.infolist())
    return expanded, Path(source_path).stat().st_size


def _check_archive(source_path: Path, display_name: str, budget: Budget) -> None:
    try:
        expanded, size = archive_expansion(source_path)
    except zipfile.BadZipFile:
        return  # the source stage says what is wrong with it; nothing to expand
    ratio = expanded / max(1, size)
    if ratio > budget.max_archive_ratio:
        raise _exceeded(
            display_name,
            VARIABLES["max_archive_ratio"],
            budget.max_archive_ratio,
            round(ratio, 1),
            f"archive expands {ratio:,.0f}× ({_size(size)} → {_size(expanded)}), over the "
            f"{budget.max_archive_ratio:,.0f}× expansion limit",
        )


def _size(n: int) -> str:
    return f"{n / _MIB:,.1f} MB" if n >= _MIB else f"{n / 1024:,.0f} KB"


# -- after converting --------------------------------------------------------------------------


def check_characters(characters: int, display_name: str, budget: Budget) -> None:
    if characters > budget.max_characters:
        raise _exceeded(
            display_name,
            VARIABLES["max_characters"],
            budget.max_characters,
            characters,
            f"document has {characters:,} characters of text, over the {budget.max_characters:,}-character limit",
        )


def check_tokens(tokens: int, display_name: str, budget: Budget) -> None:
    if tokens > budget.max_tokens:
        raise _exceeded(
            display_name,
            VARIABLES["max_tokens"],
            budget.max_tokens,
            tokens,
            f"document has {tokens:,} tokens of text, over the {budget.max_tokens:,}-token limit",
        )


# -- memory ------------------------------------------------------------------------------------


def limit_memory(budget: Budget) -> None:
    """In the conversion process: cap its data memory (heap, private mappings)."""
    limit = budget.hard_memory_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def data_memory_mb(pid: int) -> float | None:
    """VmData of a process, in MiB (None: gone, or no /proc)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            status = handle.read()
    except OSError:
        return None
    match = re.search(rb"^VmData:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else None


def over_memory(display_name: str, budget: Budget, used_mb: float | None = None) -> BudgetExceeded:
    setting = VARIABLES["max_memory_mb"]
    used = f"used {math.ceil(used_mb):,} MB, over" if used_mb is not None else "needed more than"
    return BudgetExceeded(
        display_name,
        f"conversion {used} the {budget.max_memory_mb:,} MB memory limit ({setting}); stopped",
        setting=setting,
        limit=budget.max_memory_mb,
        value=used_mb,
    )


def memory_plateau(display_name: str, budget: Budget, held_mb: float, seconds: float) -> BudgetExceeded:
    setting = VARIABLES["memory_plateau_s"]
    share = f"{budget.memory_plateau_fraction * 100:g} %"
    return BudgetExceeded(
        display_name,
        f"conversion held {math.floor(held_mb):,} MB, over {share} of the "
        f"{budget.max_memory_mb:,} MB memory limit, for {seconds:,.0f} s "
        f"({VARIABLES['memory_plateau_fraction']}, {setting}); stopped",
        setting=setting,
        limit=budget.memory_plateau_s,
        value=round(seconds, 1),
    )


_ALLOCATION = re.compile(
    r"MemoryError|bad_alloc|out of memory|cannot allocate memory|unable to allocate|"
    r"failed to allocate",
    re.IGNORECASE,
)


def is_memory_failure(exc: BaseException) -> bool:
    """A failed allocation somewhere in the exception's chain (Python, numpy, C++ readers)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError) or _ALLOCATION.search(f"{type(exc).__name__}: {exc}"):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
