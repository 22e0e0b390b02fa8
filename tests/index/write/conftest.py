"""A small graph with communities, for the communities table's tests."""

import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.graph.unit_rows import with_unit_rows


@pytest.fixture
def community_graph():
    """(communities, entities, relationships, endpoints, text unit ids): six entities in two
    communities at level 0, the first split in two at level 1."""
    entities = pa.table({"id": [f"e{i}" for i in range(6)]})
    units = pa.array(["u0", "u1", "u2", "u3", "u4"])
    relationships = with_unit_rows(pa.table({
        "id": ["r0", "r1", "r2", "r3"],
        "text_unit_ids": [["u1", "u2"], ["u2", "u3"], ["u4"], ["u3", "u1"]]}), units)
    endpoints = (np.array([0, 1, 3, 0]), np.array([1, 2, 4, 2]))
    communities = [Community(0, 0, -1, np.array([0, 1, 2]), children=[2, 3]),
                   Community(1, 0, -1, np.array([3, 4, 5])),
                   Community(2, 1, 0, np.array([0, 1])),
                   Community(3, 1, 0, np.array([2]))]
    return communities, entities, relationships, endpoints, units
