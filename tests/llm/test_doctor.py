"""`graphrag-ray doctor` against the test server: what each endpoint will do, in seconds."""

import pytest

from graphrag_ray.cli import main
from graphrag_testkit.llm_server import run_test_server


def _doctor(capsys, server, *settings: str) -> tuple[int, list[str]]:
    code = main(["doctor", "--set", f"llm.api_base={server.url}", "--set",
                 "extraction.method=llm", *[arg for s in settings for arg in ("--set", s)]])
    return code, capsys.readouterr().out.splitlines()


def test_a_healthy_endpoint_passes_and_its_stated_limits_are_advised(capsys):
    with run_test_server(rpm_limit=500, tpm_limit=200_000) as server:
        code, lines = _doctor(capsys, server, "llm.model=gpt-4o-mini")
        requests = server.stats()["requests"]
    assert code == 0 and requests <= 5  # a few tiny calls
    assert any(line.startswith("ok   logit_bias works") for line in lines)
    assert any(line.startswith("ok   JSON replies parse") for line in lines)
    assert any("set llm.requests_per_minute=500" in line and "llm.tokens_per_minute=200000"
               in line for line in lines)
    with run_test_server(rpm_limit=500, tpm_limit=200_000) as server:
        code, lines = _doctor(capsys, server, "llm.requests_per_minute=500",
                              "llm.tokens_per_minute=200000")
    assert any("match the configuration" in line for line in lines)


def test_a_reasoning_deployment_is_shown_as_the_job_will_send_it(capsys):
    with run_test_server(personality="reasoning") as server:
        code, lines = _doctor(capsys, server, "llm.model=my-deployment")
    assert code == 0
    assert any("requests go as: max_completion_tokens, no temperature, no logit_bias" in line
               for line in lines)


def test_a_rejected_key_fails_with_one_line_and_exit_1(capsys):
    with run_test_server(api_key="the-right-key") as server:
        code, lines = _doctor(capsys, server, "llm.api_key=a-wrong-key")
    assert code == 1
    assert lines[0].startswith("fail") and "rejected the API key" in lines[0]
    assert "a-wrong-key" not in "\n".join(lines)


@pytest.mark.parametrize("personality, says", [
    ("no_usage", "warn replies carry no usage"),
    ("think", "ok   replies open with a <think> block"),
    ("fenced", "ok   replies come inside a code fence"),
    ("error_200", "warn a request was answered HTTP 200 with an error body"),
])
def test_doctor_says_what_it_saw_of_each_quirk(capsys, personality, says):
    """`doctor` answered "ok" to each of these without a word of it (and spent 10.8 s on
    the 200-with-error retries without saying why)."""
    with run_test_server(personality=personality, retry_after_s=0.01) as server:
        code, lines = _doctor(capsys, server, "llm.model=test-model",
                              "llm.retry_base_delay_s=0.01")
    assert code == 0 and any(line.startswith(says) for line in lines), lines
    if personality == "error_200":
        # The slow retry is said, with its time and what the job does about it.
        retried = [line for line in lines if "chat request answered after 1 retry" in line]
        assert retried and retried[0].startswith("warn"), lines
        assert " s in all): the job retries each failed request up to llm.max_retries=" \
            in retried[0]


def test_a_plain_endpoint_is_said_to_be_plain(capsys):
    with run_test_server() as server:
        code, lines = _doctor(capsys, server, "llm.model=test-model")
    assert code == 0 and any(line.startswith("ok   replies are plain") for line in lines)


def test_batch_mode_checks_the_endpoint_has_a_batch_api(capsys):
    with run_test_server() as server:
        code, lines = _doctor(capsys, server, "llm.batch=extraction")
    assert code == 0 and any(line.startswith("ok   the Batch API answers") for line in lines)
    with run_test_server(batch_api=False) as server:  # a local model server: 404 there
        code, lines = _doctor(capsys, server, "llm.batch=extraction")
    assert code == 1
    assert any(line.startswith("fail llm.batch is set but the endpoint has no Batch API")
               for line in lines)


def test_embeddings_by_batch_are_checked_at_the_embeddings_endpoint(capsys):
    with run_test_server() as server, run_test_server(batch_api=False) as embeddings:
        code, lines = _doctor(capsys, server, f"embeddings.api_base={embeddings.url}",
                              "embeddings.batch=true")
    assert code == 1
    assert any(line.startswith("fail embeddings.batch is set but the endpoint has no Batch API")
               for line in lines), lines
    with run_test_server() as server:
        code, lines = _doctor(capsys, server, f"embeddings.api_base={server.url}",
                              "embeddings.batch=true")
    assert code == 0 and any("embeddings.batch: True sends the embeddings by batch" in line
                             for line in lines), lines
