from pathlib import Path

import pytest

from graphrag_testkit.real_text_mix import mix_real_text
from graphrag_ray.tokens import count_tokens


def _sources(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "podcast"
    folder.mkdir()
    (folder / "ep1.txt").write_text("Kevin Scott talks with Ada Lovelace about engines. " * 20)
    (folder / "ep2.txt").write_text("Kevin Scott talks with Alan Turing about machines. " * 20)
    (folder / "notes.md").write_text("not text to copy")
    book = tmp_path / "book.txt"
    book.write_text("\ufeff" + "Marley was dead: to begin with. " * 40)
    return [folder, book]


def test_copies_until_the_target_each_copy_with_its_own_preamble(tmp_path):
    out = tmp_path / "corpus"
    mixed = mix_real_text(out, 1_000, _sources(tmp_path))
    assert mixed.source_files == 3  # the .md file is not text to copy
    assert mixed.tokens >= 1_000 and mixed.copies >= 2
    assert mixed.tokens == sum(count_tokens(p.read_text()) for p in mixed.files)
    first_lines = {p.name.split("-")[1]: p.read_text().split("\n", 1)[0] for p in mixed.files}
    assert len(set(first_lines.values())) == mixed.copies  # one preamble per copy
    # The byte-order mark of a book is not copied into the middle of a file.
    assert all("\ufeff" not in p.read_text() for p in mixed.files)
    # Stops at the file that reaches the target: without the last file it was short.
    last = mixed.files[-1]
    assert mixed.tokens - count_tokens(last.read_text()) < 1_000


def test_the_same_seed_gives_the_same_files(tmp_path):
    sources = _sources(tmp_path)
    a = mix_real_text(tmp_path / "a", 800, sources, seed=3)
    b = mix_real_text(tmp_path / "b", 800, sources, seed=3)
    assert [p.read_text() for p in a.files] == [p.read_text() for p in b.files]


def test_no_text_files_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no .txt files"):
        mix_real_text(tmp_path / "out", 100, [tmp_path])
