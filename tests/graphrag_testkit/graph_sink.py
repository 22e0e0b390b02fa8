"""An out-of-tree graph store (`output.graph_stores: [graphrag_testkit.graph_sink:sink]`):
it keeps, per version it receives, the node and edge lists a graph database would load."""

from __future__ import annotations


class GraphSink:
    def __init__(self):
        self.received: dict[str, dict] = {}
        self.fail = False

    def write(self, version) -> str:
        if self.fail:
            raise RuntimeError("the graph database refused the connection")
        entities = version.read_table("entities", ["id", "title"])
        relationships = version.read_table("relationships", ["source", "target"])
        self.received[version.version] = {
            "nodes": entities.column("title").to_pylist(),
            "edges": list(zip(relationships.column("source").to_pylist(),
                              relationships.column("target").to_pylist()))}
        return f"{entities.num_rows} nodes, {relationships.num_rows} edges"


sink = GraphSink()
