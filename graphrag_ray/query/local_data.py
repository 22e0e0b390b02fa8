"""The rows local and DRIFT search rank, read from an open index once: entities,
relationships, claims, text units and reports as row lists, with the lookups the searches
use (entity by id and by the words of its name or an alias, an entity's relationships,
claims and reports) and the entity description vectors."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from graphrag_ray import schema
from graphrag_ray.query.citations import ReadTable
from graphrag_ray.query.vectors import VectorIndex


def words_of(text: str) -> str:
    """A name's or question's words, upper case, space-padded: a name matches where its
    padded words stand in the question's."""
    return f" {' '.join(re.findall(r'[A-Za-z0-9]+', text.upper()))} "


@dataclass
class LocalData:
    """The tables local search reads, as row lists and lookups (built once per index)."""
    entities: list[dict]
    relationships: list[dict]
    claims: list[dict]
    units: dict[str, dict]  # id -> row
    reports: list[dict]  # id, community, level, title, summary, full_content, rank, entity_ids
    entity_vectors: VectorIndex
    by_id: dict[str, int] = field(init=False)
    edges_of: dict[str, list[int]] = field(init=False)  # entity title -> relationship rows
    claims_of: dict[str, list[int]] = field(init=False)  # entity title -> claim rows
    reports_of: dict[str, list[int]] = field(init=False)  # entity id -> report rows
    # Entity resolution's aliases (alias title, canonical entity id): a question that names
    # "Holmes" finds SHERLOCK HOLMES.
    aliases: list[tuple[str, str]] = field(default_factory=list)
    names: list[tuple[str, int]] = field(init=False)  # " WORDS OF A NAME " -> entity row

    def __post_init__(self) -> None:
        self.by_id = {e["id"]: i for i, e in enumerate(self.entities)}
        self.names = [(words_of(e["title"]), i) for i, e in enumerate(self.entities)
                      if len(e["title"]) > 2]
        self.names += [(words_of(alias), self.by_id[entity_id])
                       for alias, entity_id in self.aliases
                       if len(alias) > 2 and entity_id in self.by_id]
        self.edges_of = defaultdict(list)
        for i, edge in enumerate(self.relationships):
            self.edges_of[edge["source"]].append(i)
            self.edges_of[edge["target"]].append(i)
        self.claims_of = defaultdict(list)
        for i, claim in enumerate(self.claims):
            self.claims_of[claim["subject_id"]].append(i)
        self.reports_of = defaultdict(list)
        for i, report in enumerate(self.reports):
            for entity_id in report["entity_ids"]:
                self.reports_of[entity_id].append(i)


def local_data(read: ReadTable, entity_vectors: VectorIndex, has_claims: bool,
               has_aliases: bool = False) -> LocalData:
    """`entity_vectors`: the entity description embeddings, as the index searches them."""
    entities = read(schema.ENTITIES, ["id", "human_readable_id", "title", "type",
                                      "description", "text_unit_ids", "degree"]).to_pylist()
    relationships = read(schema.RELATIONSHIPS, ["id", "human_readable_id", "source", "target",
                                                "description", "weight", "combined_degree"]
                         ).to_pylist()
    claims = read(schema.COVARIATES, ["id", "human_readable_id", "subject_id", "type", "status",
                                      "description"]).to_pylist() if has_claims else []
    units = read(schema.TEXT_UNITS, ["id", "human_readable_id", "text"])
    reports = read(schema.COMMUNITY_REPORTS, ["id", "community", "level", "title", "summary",
                                              "full_content", "rank"])
    members = read(schema.COMMUNITIES, ["community", "entity_ids"])
    entity_ids = dict(zip(members.column("community").to_pylist(),
                          members.column("entity_ids").to_pylist()))
    report_rows = [{**r, "entity_ids": entity_ids.get(r["community"], [])}
                   for r in reports.to_pylist()]
    aliases = read(schema.ENTITY_ALIASES, ["alias", "entity_id"]) if has_aliases else None
    return LocalData(entities, relationships, claims,
                     {u["id"]: u for u in units.to_pylist()}, report_rows,
                     entity_vectors,
                     list(zip(aliases.column("alias").to_pylist(),
                              aliases.column("entity_id").to_pylist())) if aliases else [])
