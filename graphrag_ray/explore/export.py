"""`graphrag-ray export`: the graph for the tools people already use.

- `graphml` (yEd, Gephi, Cytoscape, networkx, igraph) and `gexf` (Gephi, with the layout as
  `viz:position`): one file, nodes then edges, written as they are read.
- `neo4j`: the CSV files `neo4j-admin database import full` reads (header row with `:ID`,
  `:LABEL`, `:START_ID`, `:END_ID`, `:TYPE` and typed properties), entities and communities
  as nodes, relationships, membership and hierarchy as relationships, and `import.sh` with
  the command.
- `csv`: `nodes.csv` and `edges.csv` with plain headers (pandas, spreadsheets).

Nodes carry type, description, degree, frequency (text units), x/y and the community at each
level; edges carry weight, description, instance count and text unit count. Entities and
relationships are read part by part, so a graph larger than memory streams through.
"""

from __future__ import annotations

import csv
import re
from typing import Iterator, TextIO
from xml.sax.saxutils import escape, quoteattr

import fsspec

from graphrag_ray.explore.graph_data import (
    CommunityIndex, GraphPart, community_rows, entity_ids_by_title, iter_edges, iter_nodes,
    select_part)
from graphrag_ray.storage.index_store import IndexVersion

FORMATS = ("graphml", "gexf", "neo4j", "csv")
_INVALID_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
NODE_PROPERTIES = [("title", "string"), ("type", "string"), ("description", "string"),
                   ("degree", "int"), ("frequency", "int"), ("x", "double"), ("y", "double")]
EDGE_PROPERTIES = [("weight", "double"), ("description", "string"),
                   ("instance_count", "int"), ("text_unit_count", "int")]


def _xml(value) -> str:
    return escape(_INVALID_XML.sub("", str(value if value is not None else "")))


def _attr(value) -> str:
    return quoteattr(_INVALID_XML.sub("", str(value if value is not None else "")))


def export_graph(version: IndexVersion, fmt: str, out: str, level: int | None = None,
                 community: int | None = None) -> dict:
    """Writes the export at `out` (a file for graphml/gexf, a folder for neo4j/csv; any
    fsspec URL); returns what was written."""
    communities = CommunityIndex(version)
    part = select_part(communities, level, community)
    counts = {"nodes": 0, "edges": 0, "part": part.description, "format": fmt}

    def nodes() -> Iterator[dict]:
        for rows in iter_nodes(version, communities, part):
            counts["nodes"] += len(rows)
            yield from rows

    def edges() -> Iterator[dict]:
        for rows in iter_edges(version, part, entity_ids_by_title(version)):
            counts["edges"] += len(rows)
            yield from rows

    writer = {"graphml": _graphml, "gexf": _gexf, "neo4j": _neo4j, "csv": _csv}[fmt]
    counts["files"] = writer(version, out, part, nodes, edges)
    return counts


def _open(url: str) -> TextIO:
    return fsspec.open(url, "w", encoding="utf-8", newline="", auto_mkdir=True).open()


def _graphml(version, out, part: GraphPart, nodes, edges) -> list[str]:
    node_keys = NODE_PROPERTIES + [(f"community_{level}", "int") for level in part.levels]
    with _open(out) as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<graphml '
                'xmlns="http://graphml.graphdrawing.org/xmlns">\n')
        for i, (name, kind) in enumerate(node_keys):
            f.write(f'  <key id="n{i}" for="node" attr.name="{name}" attr.type="{kind}"/>\n')
        for i, (name, kind) in enumerate(EDGE_PROPERTIES):
            f.write(f'  <key id="e{i}" for="edge" attr.name="{name}" attr.type="{kind}"/>\n')
        f.write('  <graph id="G" edgedefault="undirected">\n')
        for node in nodes():
            f.write(f'    <node id={_attr(node["id"])}>')
            f.write("".join(f'<data key="n{i}">{_xml(node[name])}</data>'
                            for i, (name, _) in enumerate(node_keys)))
            f.write("</node>\n")
        for edge in edges():
            f.write(f'    <edge id={_attr(edge["id"])} source={_attr(edge["source"])} '
                    f'target={_attr(edge["target"])}>')
            f.write("".join(f'<data key="e{i}">{_xml(edge[name])}</data>'
                            for i, (name, _) in enumerate(EDGE_PROPERTIES)))
            f.write("</edge>\n")
        f.write("  </graph>\n</graphml>\n")
    return [out]


def _gexf(version, out, part: GraphPart, nodes, edges) -> list[str]:
    node_attributes = [p for p in NODE_PROPERTIES if p[0] not in ("title", "x", "y")] + \
        [(f"community_{level}", "integer") for level in part.levels]
    kinds = {"int": "integer", "double": "double", "string": "string", "integer": "integer"}
    edge_attributes = [p for p in EDGE_PROPERTIES if p[0] != "weight"]
    with _open(out) as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<gexf xmlns="http://gexf.net/1.3" xmlns:viz="http://gexf.net/1.3/viz" '
                'version="1.3">\n  <graph defaultedgetype="undirected" mode="static">\n'
                '    <attributes class="node">\n')
        for i, (name, kind) in enumerate(node_attributes):
            f.write(f'      <attribute id="{i}" title="{name}" type="{kinds[kind]}"/>\n')
        f.write('    </attributes>\n    <attributes class="edge">\n')
        for i, (name, kind) in enumerate(edge_attributes):
            f.write(f'      <attribute id="{i}" title="{name}" type="{kinds[kind]}"/>\n')
        f.write("    </attributes>\n    <nodes>\n")
        for node in nodes():
            f.write(f'      <node id={_attr(node["id"])} label={_attr(node["title"])}>'
                    "<attvalues>" + "".join(
                        f'<attvalue for="{i}" value={_attr(node[name])}/>'
                        for i, (name, _) in enumerate(node_attributes)) + "</attvalues>"
                    f'<viz:position x="{node["x"] or 0.0}" y="{node["y"] or 0.0}" z="0.0"/>'
                    f'<viz:size value="{1 + (node["degree"] or 0) ** 0.5:.3f}"/></node>\n')
        f.write("    </nodes>\n    <edges>\n")
        for edge in edges():
            f.write(f'      <edge id={_attr(edge["id"])} source={_attr(edge["source"])} '
                    f'target={_attr(edge["target"])} weight="{edge["weight"]}">'
                    "<attvalues>" + "".join(
                        f'<attvalue for="{i}" value={_attr(edge[name])}/>'
                        for i, (name, _) in enumerate(edge_attributes)) + "</attvalues></edge>\n")
        f.write("    </edges>\n  </graph>\n</gexf>\n")
    return [out]


def _rows_to_csv(url: str, header: list[str], rows: Iterator[list]) -> str:
    with _open(url) as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
    return url


def _label(kind: str | None) -> str:
    """Neo4j labels: every entity is an `Entity`, and its type too when it is a plain word."""
    kind = (kind or "").strip()
    return "Entity;" + kind if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", kind) else "Entity"


def _neo4j(version: IndexVersion, out: str, part: GraphPart, nodes, edges) -> list[str]:
    out = out.rstrip("/")
    levels = part.levels
    entity_header = ["entityId:ID(Entity)", "title", "type", "description", "degree:int",
                     "frequency:int", "x:double", "y:double"] + \
        [f"community_{level}:int" for level in levels] + [":LABEL"]
    memberships: list[tuple[str, int]] = []

    def entity_rows():
        for n in nodes():
            for level in levels:
                if n[f"community_{level}"] >= 0:
                    memberships.append((n["id"], n[f"community_{level}"]))
            yield [n["id"], n["title"], n["type"], n["description"], n["degree"],
                   n["frequency"], n["x"], n["y"]] + \
                [n[f"community_{level}"] for level in levels] + [_label(n["type"])]

    files = [_rows_to_csv(f"{out}/entities.csv", entity_header, entity_rows())]
    files.append(_rows_to_csv(
        f"{out}/relationships.csv",
        [":START_ID(Entity)", ":END_ID(Entity)", "id", "weight:double", "description",
         "instance_count:int", "text_unit_count:int", ":TYPE"],
        ([e["source"], e["target"], e["id"], e["weight"], e["description"],
          e["instance_count"], e["text_unit_count"], "RELATED"] for e in edges())))
    used = {c for _, c in memberships}
    communities = [c for c in community_rows(version).to_pylist() if c["community"] in used]
    files.append(_rows_to_csv(
        f"{out}/communities.csv",
        ["communityId:ID(Community)", "level:int", "size:int", "title", "rating:double",
         "summary", ":LABEL"],
        ([c["community"], c["level"], c["size"], c["title"], c["rank"], c["summary"],
          "Community"] for c in communities)))
    files.append(_rows_to_csv(f"{out}/in_community.csv",
                              [":START_ID(Entity)", ":END_ID(Community)", ":TYPE"],
                              ([e, c, "IN_COMMUNITY"] for e, c in memberships)))
    files.append(_rows_to_csv(
        f"{out}/child_of.csv", [":START_ID(Community)", ":END_ID(Community)", ":TYPE"],
        ([c["community"], c["parent"], "CHILD_OF"] for c in communities
         if c["parent"] is not None and c["parent"] >= 0 and c["parent"] in used)))
    command = neo4j_import_command()
    with _open(f"{out}/import.sh") as f:
        f.write("#!/bin/sh\n# Run from this folder with Neo4j stopped; the database must not "
                "exist yet\n# (neo4j-admin 5.19 and later: the database name comes first).\n"
                f"{command}\n")
    return files + [f"{out}/import.sh"]


def neo4j_import_command(database: str = "neo4j") -> str:
    return (f"neo4j-admin database import full {database} --multiline-fields=true "
            "--nodes=entities.csv --nodes=communities.csv --relationships=relationships.csv "
            "--relationships=in_community.csv --relationships=child_of.csv")


def _csv(version, out: str, part: GraphPart, nodes, edges) -> list[str]:
    out = out.rstrip("/")
    node_header = ["id"] + [name for name, _ in NODE_PROPERTIES] + \
        [f"community_{level}" for level in part.levels]
    edge_header = ["id", "source", "target", "source_title", "target_title"] + \
        [name for name, _ in EDGE_PROPERTIES]
    return [_rows_to_csv(f"{out}/nodes.csv", node_header,
                         ([n[k] for k in node_header] for n in nodes())),
            _rows_to_csv(f"{out}/edges.csv", edge_header,
                         ([e[k] for k in edge_header] for e in edges()))]

