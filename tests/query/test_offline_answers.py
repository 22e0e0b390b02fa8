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


def test_a_question_for_places_is_answered_with_places(index):
    """Not with the findings that share the word "matter" (it says nothing of the answer)."""
    answer = index.search("global", "Which places matter most?").answer
    kinds = {row["title"]: row["type"] for row in index.table(
        "entities", ["title", "type"]).to_pylist()}
    points = [line[2:] for line in answer.splitlines() if line.startswith("- ")]
    assert points, answer
    for point in points:
        names = point.split(":")[0].split(" and ")
        assert "GEO" in {kinds.get(name.upper()) for name in names}, (point, answer)


def test_an_index_with_older_offline_embeddings_says_so(index, tmp_path):
    """The word rules of the offline embeddings changed (hashing-2): an index made before
    still opens, with a warning that an update re-embeds it."""
    import json
    import shutil
    from pathlib import Path

    copy = tmp_path / "older"
    shutil.copytree(Path(index.store.url), copy)
    manifest = next(copy.glob("versions/*/manifest.json"))
    data = json.loads(manifest.read_text())
    data["embeddings"]["model"] = "hashing"
    manifest.write_text(json.dumps(data))
    with pytest.warns(UserWarning, match="graphrag-ray update"):
        older = GraphIndex.open(str(copy))
    assert older.search("global", "Who is Scrooge?").answer


def test_questions_asked_at_once_wait_for_one_build_of_what_the_index_keeps(index):
    """A served index's first questions arrive together: each building its own copy of a
    lookup (the retrieval graph of a 100M-token index is gigabytes) is what this prevents."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    builds, gate = [], threading.Event()

    def make():
        builds.append(threading.get_ident())
        gate.wait(5)
        time.sleep(0.05)
        return object()

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(index.kept, "test-lookup", make) for _ in range(4)]
        gate.set()
        kept = {id(f.result()) for f in futures}
    assert len(builds) == 1 and len(kept) == 1
