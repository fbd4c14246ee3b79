"""A document's budget: the limits its conversion and embedding are held to, declared once.

The settings hold it (``settings.budget``, each limit read from ``RAG_ASSETS_<LIMIT>``:
rag_assets/settings.py), the ingest resource carries it as config (rag_assets/defs/resources.py)
and rag_assets/parsing/budget.py checks a document against it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

_MIB = 1024 * 1024


class Budget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_pages: int = Field(2000, gt=0)  # PDF pages
    max_page_pt: float = Field(5000.0, gt=0)  # longest side of a PDF page, in points (A0: 3,370)
    max_characters: int = Field(10_000_000, gt=0)  # text a document may hold
    max_archive_ratio: float = Field(100.0, gt=0)  # DOCX/PPTX: uncompressed size / file size
    max_memory_mb: int = Field(4096, gt=0)  # data memory of the conversion process
    # a conversion holding over this fraction of max_memory_mb for memory_plateau_s is stopped: a
    # reader whose memory levels off just under the limit would otherwise run to convert_timeout_s
    memory_plateau_fraction: float = Field(0.8, gt=0, le=1)
    memory_plateau_s: float = Field(120.0, gt=0)
    # tokens of a document's children (what embedding costs), counted before embedding. Measured:
    # the Solvency II directive has 181,582, a 2,000-record benchmark shard (SciFact) about 650,000;
    # a 9.9 M-character Markdown of prose has 2.4 M (over 20 minutes of embedding on 2 cores)
    max_tokens: int = Field(1_000_000, gt=0)

    @property
    def hard_memory_bytes(self) -> int:
        """RLIMIT_DATA of the conversion process: the limit plus headroom for the parent to
        see the growth and stop it first (so the message can say which limit it was)."""
        return int((self.max_memory_mb + max(512, self.max_memory_mb / 4)) * _MIB)
