"""Offline answers say each thing once: no method's answer repeats a point or a passage, in
one step or across DRIFT's steps (sentences cut short by chunk boundaries included)."""

import pytest

from graphrag_ray.api import GraphIndex
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.terms import content_terms, says_the_same

from conftest import carol_input


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("answers")
    build_index(str(carol_input(folder / "input")), str(folder / "index"),
                load_config(None, ["runtime.engine=local"]), progress=lambda _: None)
    return GraphIndex.open(str(folder / "index"))


@pytest.mark.parametrize("method", ["global", "local", "drift", "basic", "text"])
def test_no_answer_repeats_a_point(index, method):
    answer = index.search(method, "What does Scrooge think of Christmas and of Marley?").answer
    points = [line[2:] for line in answer.splitlines() if line.startswith(("- ", "> "))]
    assert points, answer
    seen = []
    for point in points:
        terms = set(content_terms(point.split("[Data:")[0]))
        assert not says_the_same(terms, seen), (point, answer)
        seen.append(terms)
