"""The figures of issue 31 (real corpora lose no text and read right), for any checkout:

    PYTHONPATH=<checkout> python scripts/real_corpora_figures.py

Offline builds (engine local, defaults) of A Christmas Carol as real users combine it: two
books in one file, a file of 22 framed books three times over, five copies of the book each
behind its own preamble, the book with one byte that is not UTF-8; and the offline
extractor on sentences that open with names. Prints JSON; run it against two checkouts to
compare them.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.extract.nlp_extractor import extract_nlp
from graphrag_ray.storage import IndexStore
from graphrag_ray.tokens import count_tokens

CAROL = (Path(__file__).resolve().parent.parent / "tests" / "data" / "christmas_carol"
         / "book.txt").read_text(encoding="utf-8")
START, END = CAROL.index("*** START OF"), CAROL.index("*** END OF")
HEADER, LICENCE = CAROL[:CAROL.index("\n", START) + 1], CAROL[END:]
BODY = CAROL[len(HEADER):END]


def renamed(text: str) -> str:
    """Another book: Carol with its main names changed."""
    for old, new in (("Scrooge", "Nemo"), ("Marley", "Aronnax"), ("Cratchit", "Conseil")):
        text = text.replace(old, new).replace(old.upper(), new.upper())
    return text


def build(files: dict[str, str | bytes]):
    folder = Path(tempfile.mkdtemp())
    (folder / "in").mkdir()
    for name, data in files.items():
        (folder / "in" / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    manifest = build_index(str(folder / "in"), str(folder / "index"),
                           load_config(None, ["runtime.engine=local"]), progress=lambda _: None)
    return manifest, IndexStore(str(folder / "index")).open()


def main() -> None:
    figures = {}
    pair = CAROL + renamed(CAROL)
    manifest, version = build({"two.txt": pair})
    titles = set(version.read_table("entities", ["title"]).column("title").to_pylist())
    figures["two_books"] = {"corpus_tokens": count_tokens(pair),
                            "boilerplate_tokens": manifest.extraction.boilerplate_tokens,
                            "entities": len(titles), "second_hero_found": "NEMO" in titles}
    staves = re.split(r"(?=\nSTAVE )", BODY)
    shelf = "\n".join(HEADER + staves[i % len(staves)] + LICENCE for i in range(22)) * 3
    manifest, _ = build({"shelf.txt": shelf})
    figures["22_books_x3"] = {"corpus_tokens": count_tokens(shelf),
                              "boilerplate_tokens": manifest.extraction.boilerplate_tokens,
                              "chunks": manifest.extraction.chunks}
    one, _ = build({"carol.txt": BODY})
    five, _ = build({f"carol-{i}.txt": f"Copy {i} of the book, for reading group {i}.\n\n{BODY}"
                     for i in range(5)})
    figures["five_copies"] = {
        "entities_one": one.tables["entities"], "entities_five": five.tables["entities"],
        "documents": five.tables["documents"], "chunks_one": one.extraction.chunks,
        "chunks_five": five.extraction.chunks,
        "repeated_tokens_not_extracted": (five.repeated_passages or {}).get(
            "tokens_not_extracted")}
    data = bytearray(CAROL.replace("'", "’").encode())
    data[len(data) // 2] = 0xE9
    manifest, version = build({"book.txt": bytes(data)})
    texts = " ".join(version.read_table("text_units", ["text"]).column("text").to_pylist())
    figures["one_bad_byte"] = {"mojibake": texts.count("â€"),
                               "warning": manifest.input_warnings[0][:160]}
    figures["sentence_openers"] = [e["title"] for e in extract_nlp(
        "Alice met Bob in Paris. François dit bonjour.").entities]
    print(json.dumps(figures, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
