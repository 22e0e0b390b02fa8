import numpy as np
import pytest

from graphrag_ray.config import load_config
from graphrag_ray.errors import GraphRagError
from graphrag_ray.eval.claims import cluster_counts, distinct_claims
from graphrag_ray.eval.questions import generate_questions, read_questions, write_questions
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.prompts_loader import load_prompts
from graphrag_testkit.llm_server import run_test_server


def test_generation_yields_n_cubed_unique_questions_with_their_user_and_task(tmp_path):
    with run_test_server() as server:
        config = load_config(None, [f"llm.api_base={server.url}", "llm.model=test-model",
                                    "eval.users=3", "eval.tasks_per_user=3",
                                    "eval.questions_per_task=3"])
        questions = generate_questions("Transcripts of a technology podcast", config,
                                       load_prompts(config), ChatClient(config.llm))
        assert len(questions) == 27 == len({q.question_text for q in questions})
        assert len({q.user for q in questions}) == 3
        assert len({(q.user, q.task) for q in questions}) == 9
        assert server.stats()["by_kind"] == {"eval_personas": 1, "eval_questions": 9}
    path = tmp_path / "questions.csv"
    write_questions(questions, path)
    assert read_questions(path) == questions


def test_reading_a_question_csv_like_the_papers(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("\ufeffquestion_text,question_id\nWhat recurs?,abc\n,empty\nWhy?,\n",
                    encoding="utf-8")
    questions = read_questions(path)
    assert [(q.question_id, q.question_text) for q in questions][0] == ("abc", "What recurs?")
    assert len(questions) == 2 and questions[1].question_id  # an id is made when missing
    (tmp_path / "bad.csv").write_text("text\nx\n")
    with pytest.raises(GraphRagError, match="question_text"):
        read_questions(tmp_path / "bad.csv")


def test_distinct_claims_and_clusters():
    assert distinct_claims(["Scrooge is a miser.", "scrooge is a  miser", "Marley is dead."]) == \
        ["Scrooge is a miser.", "Marley is dead."]
    vectors = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    counts = cluster_counts(vectors, [0.05, 0.5, 1.5])
    assert counts == {"0.05": 3, "0.5": 3, "1.5": 1}
    assert cluster_counts(vectors[:1], [0.5]) == {"0.5": 1}


def test_answers_whose_claims_could_not_be_read_are_left_out_of_the_means(tmp_path):
    import csv

    from graphrag_ray.eval.report import write_report

    answers = [{"question_id": q, "condition": "C0", "answer": "a", "context_tokens": 10,
                "llm_calls": 1, "wall_s": 0.1} for q in ("q1", "q2")]
    claims = [{"question_id": "q1", "condition": "C0", "claims": ["x", "y"],
               "comprehensiveness": 2, "diversity": {"0.5": 2}, "error": None},
              {"question_id": "q2", "condition": "C0", "claims": [], "comprehensiveness": 0,
               "diversity": {"0.5": 0}, "error": "no readable claims"}]
    write_report(tmp_path, answers, [], claims, ["C0"], ["directness"])
    with (tmp_path / "claims.csv").open() as handle:
        row = list(csv.reader(handle))[1]
    assert row[:3] == ["C0", "1", "2"]
    assert "1 whose claims could not be read" in (tmp_path / "summary.md").read_text()
