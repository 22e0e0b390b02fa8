"""Input, cache and index on s3:// (a local moto server, through s3fs), read back by the query
API; no credential reaches any stored object or log line."""

import logging

import pytest

from graphrag_ray import GraphIndex
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_testkit.llm_server import run_test_server

from conftest import S3_SECRET, llm_config

pytestmark = pytest.mark.slow

LLM_KEY = "sk-test-llm-key-that-must-stay-secret"


def test_index_on_s3_round_trip(s3_bucket, carol_excerpt, caplog):
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.put(str(carol_excerpt / "carol.txt"), f"{s3_bucket}/corpus/carol.txt")
    source, index_url = f"s3://{s3_bucket}/corpus/", f"s3://{s3_bucket}/indexes/carol"
    messages: list[str] = []
    caplog.set_level(logging.DEBUG)
    with run_test_server(api_key=LLM_KEY) as server:
        config = llm_config(server, "runtime.engine=local", "extraction.max_gleanings=0",
                            f"llm.api_key={LLM_KEY}")
        manifest = build_index(source, index_url, config, progress=messages.append)
        calls = server.stats()["successful_requests"]
        assert calls > 0 and manifest.extraction.failed_chunks == 0

        # The cache lives beside the index, on S3: a rebuild makes no call at all.
        cached = fs.find(f"{s3_bucket}/indexes/carol/cache")
        assert len(cached) == calls
        rebuilt = build_index(source, index_url, config, progress=messages.append)
        assert server.stats()["successful_requests"] == calls
        assert rebuilt.version != manifest.version

        index = GraphIndex.open(index_url, config=config)
        assert index.manifest.version == rebuilt.version
        assert index.manifest.input == source
        result = index.global_search("What happens to Scrooge?", level=0)
        assert result.answer and result.sources.reports

        # An update on S3 carries the unchanged file's reading over (moved object by
        # object into the version, `index/carry_over`) and reads only the new one.
        fs.pipe(f"{s3_bucket}/corpus/marley.txt", b"Jacob Marley was Ebenezer Scrooge's "
                b"partner in the counting-house. Marley was dead: to begin with.")
        updated = update_index(index_url, source, config, progress=messages.append)
        assert updated.update["documents"]["unchanged"] == 1
        assert any(m.startswith("1 unchanged files carried over") for m in messages), messages[-30:]
        assert fs.find(f"{s3_bucket}/indexes/carol/versions/{updated.version}/_reading/chunks")
        # ... merges only what the new file touched (the merged shards are kept on S3 too)
        # and keeps the summaries of the elements it did not.
        assert fs.find(f"{s3_bucket}/indexes/carol/versions/{updated.version}/_reading/merged")
        assert updated.summaries["kept"] > 0

    stored = b"".join(fs.cat_file(path) for path in fs.find(s3_bucket))
    logged = "\n".join(messages + [r.getMessage() for r in caplog.records])
    for secret in (S3_SECRET, LLM_KEY):
        assert secret.encode() not in stored
        assert secret not in logged


def test_missing_bucket_is_a_clear_error(s3_server):
    from graphrag_ray.config import load_config
    from graphrag_ray.errors import InputError

    with pytest.raises(InputError, match="no-such-bucket"):
        build_index("s3://no-such-bucket/corpus/", "s3://no-such-bucket/index",
                    load_config(None, ["runtime.engine=local"]), progress=lambda _: None)


def test_object_storage_without_credentials_is_a_message_not_a_traceback(s3_bucket, s3_server,
                                                                         tmp_path):
    """No keys in the environment, no ~/.aws files, no instance metadata: index (output and
    input) and query each end with one line naming the missing credentials, exit 2."""
    import os
    import subprocess
    import sys

    from conftest import CAROL_DIR

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ENDPOINT_URL": s3_server["AWS_ENDPOINT_URL"], "HOME": str(tmp_path),
                "AWS_CONFIG_FILE": str(tmp_path / "none"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                "AWS_EC2_METADATA_DISABLED": "true"})
    runs = [["index", "--input", str(CAROL_DIR), "--output", f"s3://{s3_bucket}/index"],
            ["index", "--input", f"s3://{s3_bucket}/corpus", "--output", str(tmp_path / "i")],
            ["query", "--index", f"s3://{s3_bucket}/index", "Who is Scrooge?"]]
    for args in runs:
        done = subprocess.run([sys.executable, "-m", "graphrag_ray", *args], env=env,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 2, (args, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, args
        assert "credentials" in done.stderr.strip().splitlines()[-1], (args, done.stderr)


def test_an_unreachable_object_store_is_a_message_not_a_traceback(tmp_path):
    """An endpoint where nothing listens (a wrong AWS_ENDPOINT_URL, a network down): index and
    query each end with one line saying the store cannot be reached, exit 2."""
    import os
    import subprocess
    import sys

    from conftest import CAROL_DIR, free_port

    env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
           "AWS_ACCESS_KEY_ID": "key-id", "AWS_SECRET_ACCESS_KEY": "secret",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1"}
    runs = [["index", "--input", str(CAROL_DIR), "--output", "s3://a-bucket/index"],
            ["index", "--input", "s3://a-bucket/corpus", "--output", str(tmp_path / "i")],
            ["query", "--index", "s3://a-bucket/index", "Who is Scrooge?"]]
    for args in runs:
        done = subprocess.run([sys.executable, "-m", "graphrag_ray", *args], env=env,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 2, (args, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, args
        assert "cannot reach the object store" in done.stderr.strip().splitlines()[-1], \
            (args, done.stderr)


def test_a_file_a_version_keeps_unchanged_is_copied_by_the_store(s3_bucket, tmp_path):
    """`copy_whole`: on S3 the store's own copy; on a local disk a link that outlives the
    version it came from."""
    import os

    import fsspec
    import s3fs

    from graphrag_ray.storage.atomic import copy_whole

    fs = s3fs.S3FileSystem()
    fs.pipe(f"{s3_bucket}/v1/part.parquet", b"vectors")
    copy_whole(fs, f"{s3_bucket}/v1/part.parquet", f"{s3_bucket}/v2/carried/part.parquet")
    fs.rm(f"{s3_bucket}/v1", recursive=True)
    assert fs.cat_file(f"{s3_bucket}/v2/carried/part.parquet") == b"vectors"

    local = fsspec.filesystem("file")
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "part.parquet").write_bytes(b"vectors")
    copy_whole(local, str(tmp_path / "v1" / "part.parquet"), str(tmp_path / "v2" / "part.parquet"))
    assert os.path.samefile(tmp_path / "v1" / "part.parquet", tmp_path / "v2" / "part.parquet")
    local.rm(str(tmp_path / "v1"), recursive=True)
    assert (tmp_path / "v2" / "part.parquet").read_bytes() == b"vectors"
