"""The offline default gives a graph in scripts without capitals: a Chinese, an Arabic and a
Thai text each index to entities and communities whose reports say each sentence once, and global
search answers from them."""

import re

from graphrag_ray import schema
from graphrag_ray.api import GraphIndex
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.storage import IndexStore

TEXTS = {
    "zh": "贾宝玉和林黛玉在大观园里读书。王夫人住在荣国府，贾母也住在荣国府。"
          "贾宝玉常常去潇湘馆看林黛玉。薛宝钗从金陵来到荣国府，住在大观园的蘅芜苑。"
          "林黛玉和薛宝钗都在大观园作诗。贾母最疼爱贾宝玉。",
    "ar": "ولد نجيب محفوظ في القاهرة عام ١٩١١. درس نجيب محفوظ الفلسفة في جامعة القاهرة. "
          "كتب نجيب محفوظ الثلاثية عن القاهرة. حصل نجيب محفوظ على جائزة نوبل للآداب. "
          "تدور أحداث الثلاثية في القاهرة القديمة. جائزة نوبل للآداب منحت له عام ١٩٨٨.",
    "th": "นายสมชาย ใจดี ทำงานที่ธนาคารแห่งประเทศไทยในกรุงเทพมหานคร "
          "ทุกปีสมชายเดินทางไปจังหวัดเชียงใหม่กับนางสาวสมหญิง รักไทย\n\n"
          "สมหญิงเป็นอาจารย์ที่มหาวิทยาลัยเชียงใหม่ สมชายและสมหญิงไปเที่ยวดอยสุเทพด้วยกัน\n\n"
          "บริษัทการบินไทยประกาศเที่ยวบินใหม่จากกรุงเทพมหานครไปโตเกียว "
          "ดร.วิชัย ศรีสุข อาจารย์มหาวิทยาลัยมหิดลกล่าวว่าสมชายเป็นเพื่อนเก่า",
}
# Names each text must yield whole, with their types.
EXPECTED = {
    "th": {"สมชาย": "PERSON", "สมหญิง": "PERSON", "ธนาคารแห่งประเทศไทย": "ORGANIZATION",
           "บริษัทการบินไทย": "ORGANIZATION", "เชียงใหม่": "GEO", "กรุงเทพมหานคร": "GEO"},
}


def test_chinese_arabic_and_thai_texts_get_entities_communities_and_answers(tmp_path):
    for language, text in TEXTS.items():
        (tmp_path / language).mkdir()
        (tmp_path / language / "text.txt").write_text(text, encoding="utf-8")
        out = tmp_path / f"{language}-index"
        build_index(str(tmp_path / language), str(out),
                    load_config(None, ["runtime.engine=local"]), progress=lambda _: None)
        version = IndexStore(str(out)).open()
        rows = version.read_table(schema.ENTITIES, ["title", "type"]).to_pylist()
        titles = [row["title"] for row in rows]
        assert len(titles) >= 3, (language, titles)
        kinds = {row["title"]: row["type"] for row in rows}
        for name, kind in EXPECTED.get(language, {}).items():
            assert kinds.get(name) == kind, (name, kinds)
        assert version.read_table(schema.COMMUNITIES).num_rows >= 1
        for summary in version.read_table(schema.COMMUNITY_REPORTS, ["summary"]).column(
                "summary").to_pylist():
            sentences = [x for x in re.split(r"(?<=[。.])\s*", summary) if x]
            assert len(sentences) == len(set(sentences)), summary  # no sentence twice
        answer = GraphIndex.open(str(out)).search("global", "What is this text about?")
        assert "no communities" not in answer.answer
        assert any(title in answer.answer for title in titles), answer.answer
