"""Exports load in the reference readers with every node, edge and attribute: GraphML in
networkx and igraph, GEXF in networkx, Neo4j's bulk-import CSVs as its documentation
describes them, plain CSV; a community or a level exports alone."""

import csv
from pathlib import Path

import igraph as ig
import networkx as nx
import pytest

from graphrag_ray import schema
from graphrag_ray.cli import main
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.storage import IndexStore

from conftest import carol_input


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    build_index(str(carol_input(folder / "input", 30_000)), str(folder / "index"),
                load_config(None, ["runtime.engine=local"]), progress=lambda _: None)
    return folder / "index"


def tables(index):
    version = IndexStore(str(index)).open()
    return ({e["id"]: e for e in version.read_table(schema.ENTITIES).to_pylist()},
            version.read_table(schema.RELATIONSHIPS).to_pylist(),
            version.read_table(schema.COMMUNITIES).to_pylist())


def export(index, fmt, out, *part):
    assert main(["export", "--index", str(index), "--format", fmt, "--out", str(out),
                 *part]) == 0
    return out


def test_graphml_round_trips_through_networkx_and_igraph(index, tmp_path):
    entities, relationships, communities = tables(index)
    path = export(index, "graphml", tmp_path / "graph.graphml")
    graph = nx.read_graphml(path)
    assert graph.number_of_nodes() == len(entities)
    assert graph.number_of_edges() == len(relationships)
    for entity_id, attributes in graph.nodes(data=True):
        entity = entities[entity_id]
        assert (attributes["title"], attributes["type"], attributes["degree"]) == \
            (entity["title"], entity["type"], entity["degree"])
        assert (attributes["x"], attributes["y"]) == (entity["x"], entity["y"])
    level0 = {i: c["community"] for c in communities if c["level"] == 0 for i in c["entity_ids"]}
    assert all(graph.nodes[i]["community_0"] == c for i, c in level0.items())
    heaviest = max(relationships, key=lambda r: r["weight"])
    assert graph.edges[graph_ids(entities, heaviest)]["weight"] == heaviest["weight"]
    igraph = ig.Graph.Read_GraphML(str(path))
    assert (igraph.vcount(), igraph.ecount()) == (len(entities), len(relationships))


def graph_ids(entities, relationship):
    by_title = {e["title"]: i for i, e in entities.items()}
    return by_title[relationship["source"]], by_title[relationship["target"]]


def test_gexf_round_trips_through_networkx_with_the_layout(index, tmp_path):
    entities, relationships, _ = tables(index)
    graph = nx.read_gexf(export(index, "gexf", tmp_path / "graph.gexf"))
    assert (graph.number_of_nodes(), graph.number_of_edges()) == \
        (len(entities), len(relationships))
    for entity_id, attributes in graph.nodes(data=True):
        entity = entities[entity_id]
        assert attributes["label"] == entity["title"]
        assert attributes["viz"]["position"]["x"] == pytest.approx(entity["x"])
        assert attributes["frequency"] == entity["frequency"]
    assert any(e["x"] for e in entities.values())  # the layout is there to show


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def test_neo4j_files_follow_the_bulk_import_header_format(index, tmp_path):
    entities, relationships, communities = tables(index)
    out = export(index, "neo4j", tmp_path / "neo4j")
    header, rows = read_csv(out / "entities.csv")
    # The documented header: an :ID column with its ID space, typed properties, :LABEL.
    assert header[0] == "entityId:ID(Entity)" and header[-1] == ":LABEL"
    assert "degree:int" in header and "x:double" in header
    assert len(rows) == len(entities) and all(r[-1].startswith("Entity") for r in rows)
    node_ids = {r[0] for r in rows}
    header, rows = read_csv(out / "relationships.csv")
    assert header[:2] == [":START_ID(Entity)", ":END_ID(Entity)"] and ":TYPE" in header
    assert len(rows) == len(relationships)
    assert all(r[0] in node_ids and r[1] in node_ids for r in rows)
    float(rows[0][header.index("weight:double")])  # typed values parse
    header, rows = read_csv(out / "communities.csv")
    assert header[0] == "communityId:ID(Community)" and len(rows) == len(communities)
    community_ids = {r[0] for r in rows}
    _, memberships = read_csv(out / "in_community.csv")
    assert memberships and all(e in node_ids and c in community_ids for e, c, _ in memberships)
    _, children = read_csv(out / "child_of.csv")
    assert all(a in community_ids and b in community_ids for a, b, _ in children)
    assert "neo4j-admin database import full" in (out / "import.sh").read_text()


def test_a_community_exports_alone(index, tmp_path):
    entities, relationships, communities = tables(index)
    community = max((c for c in communities if c["level"] == 0), key=lambda c: c["size"])
    out = export(index, "csv", tmp_path / "part", "--community", str(community["community"]))
    _, nodes = read_csv(out / "nodes.csv")
    header, edges = read_csv(out / "edges.csv")
    assert {n[0] for n in nodes} == set(community["entity_ids"])
    members = set(community["entity_ids"])
    inside = [r for r in relationships if set(graph_ids(entities, r)) <= members]
    assert len(edges) == len(inside) > 0


def test_a_missing_community_is_a_message(index, tmp_path, capsys):
    assert main(["export", "--index", str(index), "--format", "csv", "--out",
                 str(tmp_path / "x"), "--community", "99999"]) == 2
    assert "no community 99999" in capsys.readouterr().err

