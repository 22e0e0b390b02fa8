"""The unit ranking's parts on hand-made graphs: reciprocal rank fusion, the personalized
PageRank, and a two-hop question whose second passage shares no word with it, found through
the entity that links the two passages."""

import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.config import RetrievalConfig
from graphrag_ray.query.retrieval.graph import build_graph, name_key, personalized_pagerank
from graphrag_ray.query.retrieval.rank import fuse, rank


def test_fusion_adds_reciprocal_ranks():
    fused = fuse([["a", "b", "c"], ["b", "c"]], [1.0, 2.0], k=1)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 1)
    assert scores["b"] == pytest.approx(1 / 2 + 2 / 1)
    assert scores["c"] == pytest.approx(1 / 3 + 2 / 2)
    assert [item for item, _ in fused] == ["b", "c", "a"]


def test_names_compare_by_their_words_without_a_last_bracket():
    assert name_key("Rudy Giuliani (politician)") == name_key("RUDY GIULIANI") == \
        "rudy giuliani"
    assert name_key("Président Émile") == name_key("president emile")


# Units: u0 about Leland (names the film Maximum Overdrive); u1 the film's own page (its
# director); u2 and u3 decoys that share the question's words.
UNITS = {
    "u0": ("Leland, North Carolina", "Leland is a town in Brunswick County. The film Maximum "
           "Overdrive was shot in and around Leland in 1986."),
    "u1": ("Maximum Overdrive", "Maximum Overdrive is a science fiction horror comedy written "
           "and directed by Stephen King."),
    "u2": ("Wilmington", "Wilmington is a port city in North Carolina near Leland."),
    "u3": ("Film festival", "A festival of film held every year in North Carolina."),
}
ENTITIES = {"LELAND": ["u0", "u2"], "MAXIMUM OVERDRIVE": ["u0"], "STEPHEN KING": ["u1"],
            "NORTH CAROLINA": ["u0", "u2", "u3"], "WILMINGTON": ["u2"]}


def _graph():
    documents = pa.table({"id": [f"d{u[1]}" for u in UNITS],
                          "title": [title for title, _ in UNITS.values()]})
    units = pa.table({"id": list(UNITS), "document_ids": [[f"d{u[1]}"] for u in UNITS],
                      "row": list(range(len(UNITS)))})
    entities = pa.table({"id": [f"e{i}" for i in range(len(ENTITIES))],
                         "title": list(ENTITIES), "text_unit_ids": list(ENTITIES.values())})
    relationships = pa.table({"source": ["MAXIMUM OVERDRIVE"], "target": ["LELAND"],
                              "weight": [1.0]})
    return build_graph(entities, relationships, units, documents, about_weight=5.0)


def test_the_walk_keeps_its_mass_and_reaches_what_the_seed_links_to():
    graph = _graph()
    reset = np.zeros(graph.adjacency.shape[0])
    reset[graph.entities + graph.unit_row["u0"]] = 1.0
    mass = personalized_pagerank(graph, reset, damping=0.5)
    assert mass.sum() == pytest.approx(1.0, abs=1e-4)  # what still moves at the end
    on_units = {u: mass[graph.entities + graph.unit_row[u]] for u in UNITS}
    # u1 is the document about MAXIMUM OVERDRIVE, which u0 names: it gets more than the
    # decoy film festival that merely shares NORTH CAROLINA.
    assert on_units["u1"] > on_units["u3"]
    assert personalized_pagerank(graph, np.zeros_like(reset), 0.5).sum() == 0


def _dense_walk(graph, reset, damping, steps=200):
    """The walk by plain power iteration over the whole matrix (what the frontier sums)."""
    start = reset / reset.sum()
    stranded_nodes = graph.inverse_degree == 0
    scores = start.copy()
    for _ in range(steps):
        following = damping * (graph.adjacency @ (scores * graph.inverse_degree))
        scores = following + (1 - damping + damping * scores[stranded_nodes].sum()) * start
    return scores


def test_the_frontier_walk_is_the_power_iteration_on_a_random_graph_with_lone_nodes():
    rng = np.random.default_rng(7)
    count, n_units = 60, 200
    titles = [f"E{i}" for i in range(count)]
    unit_ids = [f"u{i}" for i in range(n_units)]
    mentions = [list(rng.choice(unit_ids, size=rng.integers(0, 6), replace=False))
                for _ in range(count)]
    entities = pa.table({"id": titles, "title": titles, "text_unit_ids": mentions})
    pairs = rng.integers(0, count, size=(90, 2))
    relationships = pa.table({"source": [titles[a] for a, _ in pairs],
                              "target": [titles[b] for _, b in pairs],
                              "weight": rng.uniform(0.5, 3, 90).tolist()})
    units = pa.table({"id": unit_ids, "document_ids": [["d"]] * n_units,
                      "row": list(range(n_units))})
    graph = build_graph(entities, relationships, units,
                        pa.table({"id": ["d"], "title": ["D"]}), about_weight=5.0)
    assert (graph.inverse_degree == 0).any()  # some units nobody mentions
    reset = np.zeros(graph.adjacency.shape[0])
    reset[rng.choice(len(reset), 8, replace=False)] = rng.uniform(0.1, 1, 8)
    expected = _dense_walk(graph, reset, 0.5)
    exact = personalized_pagerank(graph, reset, 0.5, tolerance=1e-12, smallest=0.0)
    assert np.abs(exact - expected).max() < 1e-9
    pruned = personalized_pagerank(graph, reset, 0.5)
    assert np.abs(pruned - expected).sum() < 2e-4  # the walk stops below 1e-4 moving


def test_a_second_hop_that_shares_no_word_with_the_question_is_found_through_the_bridge():
    graph = _graph()
    question = "Who directed the film that was shot in or around Leland in 1986?"
    lexical = [("u0", 9.0), ("u2", 4.0), ("u3", 3.0)]  # as BM25 ranks them: no u1

    def text(unit):
        return "\n".join(UNITS[unit])

    def score_units(terms, ids):  # u1 holds "directed"
        return {u: float(sum(t in text(u).lower() for t in terms)) for u in ids
                if any(t in text(u).lower() for t in terms)}

    ranking = rank(question, RetrievalConfig(), graph, lexical, [], text, score_units)
    top_two = [u for u, _ in ranking.units[:2]]
    assert set(top_two) == {"u0", "u1"}
    assert ranking.channels["bridge"][0] == "u1"
    # Without the graph (no walk, no bridge) the film's page is nowhere.
    assert "u1" not in [u for u, _ in rank(question, RetrievalConfig(), None, lexical, [],
                                          text, score_units).units]
    # The entity the question names comes first among the walk's.
    assert ranking.named == [graph.entity_row["e0"]]
