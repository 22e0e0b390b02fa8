"""The tuning's sample and language, without an LLM."""

from pathlib import Path

import numpy as np
import pytest

from graphrag_ray.tune.language import detect_language
from graphrag_ray.tune.sample import choose

OTHER_LANGUAGES = Path(__file__).resolve().parents[1] / "data" / "other_languages"


@pytest.mark.parametrize("text, language", [
    ("The clerk kept the fire in the office and was not allowed to warm his hands.", "English"),
    ("Le professeur organisait un colloque à Genève sur l'histoire de l'astronomie et des "
     "sciences.", "French"),
    ("El tranvía llega a la plaza mayor y los viajeros bajan con sus maletas para el tren.",
     "Spanish"),
    ("Der Bürgermeister eröffnet die neue Brücke und die Kinder singen auf dem Platz.",
     "German"),
    ("王小明住在北京，在清华大学学习计算机科学。", "Chinese"),
    ("東京の博物館で、ヤマダさんは新しい展示を見ました。", "Japanese"),
    ("Москва — столица России, и в ней живут миллионы людей.", "Russian"),
])
def test_the_language_of_a_sample(text, language):
    assert detect_language([text, text]) == language


def test_the_shared_corpora_in_other_languages_are_told_apart():
    for folder, language in (("fr", "French"), ("zh", "Chinese")):
        texts = [p.read_text(encoding="utf-8") for p in sorted((OTHER_LANGUAGES / folder).iterdir())]
        assert detect_language(texts) == language


def test_sampling_top_random_and_nearest_the_centroid():
    chunks = [f"chunk {i}" for i in range(10)]
    assert choose(chunks, "top", 3) == [0, 1, 2]
    drawn = choose(chunks, "random", 3, seed=7)
    assert drawn == choose(chunks, "random", 3, seed=7)  # seeded
    assert drawn == sorted(set(drawn)) and len(drawn) == 3 and all(0 <= i < 10 for i in drawn)
    assert choose(chunks, "auto", 20) == list(range(10))  # fewer chunks than asked: all

    def embed(texts):  # chunks 3 and 6 sit at the centre of the others
        points = {3: [1.0, 1.0], 6: [1.0, 0.9]}
        return np.array([points.get(int(t.split()[1]), [1.0, 0.0] if int(t.split()[1]) % 2
                                    else [0.0, 1.0]) for t in texts])

    assert choose(chunks, "auto", 2, embed=embed) == [3, 6]
    with pytest.raises(ValueError, match="sampling must be one of"):
        choose(chunks, "best", 2)
