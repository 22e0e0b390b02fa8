"""What every query method returns: the answer, its provenance, and what it cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from graphrag_ray.llm.client import Usage


@dataclass
class Sources:
    """Provenance, as ids of index rows: reports are named by their community number, the
    rest by their `id` column; documents carry their title too."""
    reports: list[int] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    relationships: list[str] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    text_units: list[str] = field(default_factory=list)
    documents: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class SearchResult:
    method: str
    answer: str
    sources: Sources = field(default_factory=Sources)
    # Tokens of every context the method built (map batches, reduce, local contexts...).
    context_tokens: int = 0
    llm_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    failures: list[str] = field(default_factory=list)
    # What the user should know of how the answer was found (no entity matched the question).
    notes: list[str] = field(default_factory=list)
    # Method-specific figures: level, map/reduce calls, selection savings, follow-ups...
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"method": self.method, "answer": self.answer, "sources": self.sources.as_dict(),
                "context_tokens": self.context_tokens, "llm_calls": self.llm_calls,
                "usage": self.usage.as_dict(), "failures": self.failures,
                "notes": self.notes,
                "details": self.details}
