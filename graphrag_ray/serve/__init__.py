"""`graphrag-ray serve`: a stored index answering over HTTP with an OpenAI-compatible API.

- `live_index`: the version a replica answers from, loaded whole and swapped when a new one
  is published (in-flight requests finish on the one they started on);
- `chat`: OpenAI chat completions <-> a query method's question, history and result;
- `citations`: an answer's sources as the index rows they name;
- `metrics`: request counts and latencies in Prometheus's text format;
- `http_api`: the HTTP application (FastAPI), with its keys and limits;
- `runner`: what the CLI and `serve run` start: the app under uvicorn in one process, or
  as Ray Serve replicas (the deployment itself is `distributed.serving`: Ray stays in its
  one layer).
"""
