"""A report's `[Data: Entities (2, 5); Relationships (1, +more)]` citations, from the row
numbers of its context to the index's ids.

Contexts number their rows from 1 per table (so a community's prompt, hence its cached
report, does not change when unrelated rows are added to the index); readers of the report
follow its citations into the index's tables, whose ids are `human_readable_id` (entities,
relationships, claims) and `community` (reports). A number with no row behind it (the model
invented it) is dropped rather than left pointing at an unrelated row.
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"\s?\[Data:([^\[\]]*)\]")
_ANY_CITATION = re.compile(r"\s*\[Data:[^\]]*\]")
_PART = re.compile(r"^\s*([A-Za-z][A-Za-z _-]*?)\s*\(([^()]*)\)\s*$")
_DATASETS = {"entities": "entities", "entity": "entities",
             "relationships": "relationships", "relationship": "relationships",
             "claims": "claims", "claim": "claims", "covariates": "claims",
             "reports": "reports", "report": "reports"}


def _cite_part(part: str, ids: dict[str, list[int]]) -> str | None:
    """One `Name (numbers)` part with its numbers mapped; None when none is left."""
    match = _PART.match(part)
    if not match or match.group(1).lower() not in _DATASETS:
        return part.strip()  # not a table of this context: as written
    rows = ids.get(_DATASETS[match.group(1).lower()], [])
    mapped = []
    for item in (i.strip() for i in match.group(2).split(",")):
        if item.isdigit():
            if 1 <= int(item) <= len(rows):
                mapped.append(str(rows[int(item) - 1]))
        elif item:
            mapped.append(item)  # "+more"
    if not any(item.isdigit() for item in mapped):
        return None
    return f"{match.group(1)} ({', '.join(mapped)})"


def cite_index_ids(text: str, ids: dict[str, list[int]]) -> str:
    """`text` with every citation's row numbers replaced by the index ids of those rows
    (`context.context_ids`); a citation left with no row is removed."""
    def replace(match: re.Match) -> str:
        parts = [p for p in (_cite_part(part, ids) for part in match.group(1).split(";")) if p]
        if not parts:
            return ""
        lead = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip())]
        return f"{lead}[Data: {'; '.join(parts)}]"
    return _BLOCK.sub(replace, text)


def cite_report(report: dict, ids: dict[str, list[int]]) -> dict:
    """A validated report (`report_worker.validate_report`) with its citations mapped."""
    return {**report, "summary": cite_index_ids(report["summary"], ids),
            "rating_explanation": cite_index_ids(report["rating_explanation"], ids),
            "findings": [{"summary": cite_index_ids(f["summary"], ids),
                          "explanation": cite_index_ids(f["explanation"], ids)}
                         for f in report["findings"]]}


def cited_ids(text: str) -> dict[str, list[int]]:
    """The index ids `text`'s citations name, by table ("entities", "relationships",
    "claims", "reports"), in order; "+more" and parts of no known table are left out."""
    cited: dict[str, list[int]] = {}
    for block in _BLOCK.finditer(text):
        for part in block.group(1).split(";"):
            match = _PART.match(part)
            if match and match.group(1).lower() in _DATASETS:
                cited.setdefault(_DATASETS[match.group(1).lower()], []).extend(
                    int(item) for item in (i.strip() for i in match.group(2).split(","))
                    if item.isdigit())
    return cited


def without_citations(text: str) -> str:
    """`text` with its `[Data: ...]` citations taken out: what it says, to compare with
    another text or to cite anew."""
    return _ANY_CITATION.sub("", text)
