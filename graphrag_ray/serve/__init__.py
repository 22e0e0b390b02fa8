"""`graphrag-ray serve`: a stored index answering over HTTP with an OpenAI-compatible API.

- `live_index`: the version a replica answers from, loaded whole and swapped when a new one
  is published (in-flight requests finish on the one they started on);
- `chat`: OpenAI chat completions <-> a query method's question, history and result;
- `citations`: an answer's sources as the index rows they name;
- `metrics`: request counts and latencies in Prometheus's text format;
- `http_api`: the HTTP application (FastAPI), with its keys and limits; runs under uvicorn
  in one process or as a Ray Serve deployment;
- `ray_serve`: the thin Ray Serve layer (replicas, autoscaling, the metrics actor);
- `runner`: what the CLI starts.
"""
