"""`graphrag-ray explore`: a static site that explores an index offline (no CDN, no network:
the JavaScript is vendored from npm under `static/vendor/`, pinned, with its licences).

It loads only what a view needs. The page starts with the facts and the community tree
(a few numbers per community); a community's report, members and neighbourhood graph come
from one bucket file of `COMMUNITIES_PER_FILE` communities when it is opened; the entity
names for search load on the first search. Data files are scripts that hand their content to
the page (`GR.put(key, data)`), so the site works from `file://` as well as over HTTP.

A community's graph shows its members and, for context, their strongest outside neighbours,
at the index's layout positions (`entities.x`/`y`; an index built without a layout gets the
same layout here), drawn with sigma.js (WebGL): at most
`MAX_GRAPH_NODES` nodes, the highest-degree members first.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np

from graphrag_ray import schema
from graphrag_ray.config import LayoutConfig
from graphrag_ray.explore.stats import index_facts, write_plots
from graphrag_ray.index.graph.communities import build_graph
from graphrag_ray.index.graph.layout import layout_positions
from graphrag_ray.storage.index_store import IndexVersion

STATIC = Path(__file__).resolve().parent / "static"
COMMUNITIES_PER_FILE = 64
ENTITIES_PER_NAMES_FILE = 50_000
MAX_GRAPH_NODES = 3000
NEIGHBOURS_PER_COMMUNITY = 60
MEMBERS_LISTED = 60
RELATIONSHIPS_LISTED = 40
DESCRIPTION_CHARS = 400


def _script(path: Path, key: str, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    path.write_text(f"GR.put({json.dumps(key)},{payload});\n", encoding="utf-8")


def _findings(value) -> list[dict]:
    if isinstance(value, list):
        return [{"summary": f.get("summary", ""), "explanation": f.get("explanation", "")}
                for f in value if isinstance(f, dict)]
    return []


def build_site(version: IndexVersion, out: str | Path) -> dict:
    """Writes the site into `out` (a local folder); returns what it holds."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out / "data", ignore_errors=True)
    shutil.copytree(STATIC, out, dirs_exist_ok=True)
    data = out / "data"

    entities = version.read_table(schema.ENTITIES, ["id", "title", "type", "description",
                                                    "degree", "x", "y"]).to_pylist()
    row_of = {e["id"]: i for i, e in enumerate(entities)}
    by_title = {e["title"]: i for i, e in enumerate(entities)}
    relationships = version.read_table(schema.RELATIONSHIPS, ["source", "target", "weight",
                                                              "description"]).to_pylist()
    neighbours: dict[int, list[tuple[float, int, int]]] = defaultdict(list)
    for k, r in enumerate(relationships):
        a, b = by_title[r["source"]], by_title[r["target"]]
        neighbours[a].append((r["weight"], b, k))
        neighbours[b].append((r["weight"], a, k))
    if entities and not any(e["x"] or e["y"] for e in entities):
        _lay_out(entities, relationships, by_title)
    communities = version.read_table(schema.COMMUNITIES, [
        "community", "level", "parent", "children", "size", "entity_ids"]).to_pylist()
    reports = {r["community"]: r for r in version.read_table(schema.COMMUNITY_REPORTS, [
        "community", "title", "summary", "rank", "rating_explanation", "findings"]).to_pylist()}
    bucket_of = {c["community"]: i // COMMUNITIES_PER_FILE
                 for i, c in enumerate(sorted(communities, key=lambda c: c["community"]))}

    tree = [[c["community"], c["level"], c["parent"], reports.get(c["community"], {}).get(
        "title") or f"Community {c['community']}", c["size"],
        reports.get(c["community"], {}).get("rank"), bucket_of[c["community"]]]
        for c in communities]
    _script(data / "tree.js", "tree", {"columns": ["community", "level", "parent", "title",
                                                   "size", "rating", "file"],
                                       "rows": tree})

    level0 = {}
    for c in communities:
        if c["level"] == 0:
            for entity_id in c["entity_ids"]:
                level0[row_of[entity_id]] = c["community"]
    names = [[e["title"], e["type"], level0.get(i, -1)] for i, e in enumerate(entities)]
    name_files = 0
    for start in range(0, len(names), ENTITIES_PER_NAMES_FILE):
        _script(data / "names" / f"{name_files}.js", f"names/{name_files}",
                names[start:start + ENTITIES_PER_NAMES_FILE])
        name_files += 1

    buckets: dict[int, dict] = defaultdict(dict)
    for c in communities:
        buckets[bucket_of[c["community"]]][c["community"]] = _community_view(
            c, reports.get(c["community"]), entities, row_of, neighbours, relationships)
    for number, views in buckets.items():
        _script(data / "communities" / f"{number}.js", f"communities/{number}", views)

    facts = index_facts(version)
    plots = [p.name for p in write_plots(version, out / "plots")]
    _script(data / "facts.js", "facts", {**facts, "plots": plots, "name_files": name_files,
                                         "max_graph_nodes": MAX_GRAPH_NODES})
    return {"communities": len(communities), "entities": len(entities),
            "community_files": len(buckets), "name_files": name_files, "plots": plots}


def _lay_out(entities: list[dict], relationships: list[dict], by_title: dict[str, int]) -> None:
    """Positions for an index built without a layout (before it existed, or with
    `layout.enabled: false`): the same layout the build would have made."""
    ends = np.array([(by_title[r["source"]], by_title[r["target"]]) for r in relationships],
                    dtype=np.int64).reshape(-1, 2)
    x, y = layout_positions(build_graph(len(entities), ends[:, 0], ends[:, 1], np.array(
        [r["weight"] for r in relationships], dtype=np.float64)), LayoutConfig())
    for entity, ex, ey in zip(entities, x.tolist(), y.tolist()):
        entity["x"], entity["y"] = ex, ey


def _community_view(community: dict, report: dict | None, entities: list[dict],
                    row_of: dict[str, int], neighbours, relationships: list[dict]) -> dict:
    """What opening one community shows: its report, its members and relationships, and the
    graph of its members with their strongest outside neighbours."""
    members = sorted((row_of[i] for i in community["entity_ids"]),
                     key=lambda r: (-(entities[r]["degree"] or 0), r))
    drawn = members[:MAX_GRAPH_NODES]
    inside, drawn_set = set(members), set(drawn)
    outside: dict[int, float] = {}
    edges: dict[int, tuple[int, int, float]] = {}
    for row in drawn:
        for weight, other, k in neighbours.get(row, ()):
            if other in drawn_set:
                edges[k] = (row, other, weight)
            elif other not in inside:  # members past the cap are left out, not shown grey
                outside[other] = max(outside.get(other, 0.0), weight)
    context = sorted(outside, key=lambda r: (-outside[r], r))[
        :max(0, min(NEIGHBOURS_PER_COMMUNITY, MAX_GRAPH_NODES - len(drawn)))]
    shown = set(drawn) | set(context)
    for row in context:
        for weight, other, k in neighbours.get(row, ()):
            if other in shown:
                edges[k] = (row, other, weight)
    node_rows = drawn + context
    position = {row: i for i, row in enumerate(node_rows)}
    listed = sorted((k for k, (a, b, _) in edges.items() if a in inside and b in inside),
                    key=lambda k: -relationships[k]["weight"])[:RELATIONSHIPS_LISTED]
    return {
        "report": None if report is None else {
            "title": report["title"], "summary": report["summary"], "rating": report["rank"],
            "rating_explanation": report["rating_explanation"],
            "findings": _findings(report["findings"])},
        "level": community["level"], "size": community["size"],
        "members": [[entities[r]["title"], entities[r]["type"], entities[r]["degree"],
                     (entities[r]["description"] or "")[:DESCRIPTION_CHARS]]
                    for r in members[:MEMBERS_LISTED]],
        "relationships": [[relationships[k]["source"], relationships[k]["target"],
                           round(relationships[k]["weight"], 4),
                           (relationships[k]["description"] or "")[:DESCRIPTION_CHARS]]
                          for k in listed],
        "graph": {"nodes": [[entities[r]["title"], entities[r]["type"], entities[r]["x"],
                             entities[r]["y"], entities[r]["degree"], int(r in inside)]
                            for r in node_rows],
                  "edges": [[position[a], position[b], round(w, 4)]
                            for a, b, w in edges.values()],
                  "members_total": len(members)},
    }
