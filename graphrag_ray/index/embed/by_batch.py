"""`embeddings.batch`: the embeddings by the provider's Batch API, after every other stage
(the texts are final then). A pass reads the texts the real run will embed and defers each
one the cache lacks (one request per text, keyed as the online client keys it); the rounds
send them and put the vectors in the cache, and the real run (`feed.embed_index`) finds every
vector there. Runs in the driver: a pass is cache reads, no call."""

from __future__ import annotations


from graphrag_ray.errors import LLMError
from graphrag_ray.index.batch_rounds import by_batch
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.embed.feed import texts_to_embed
from graphrag_ray.llm.batch import Deferred
from graphrag_ray.llm.client import LLMCallError, LLMServices
from graphrag_ray.llm.embedding_methods import Embedder


def embed_by_batch(ctx: BuildContext) -> LLMServices:
    """The batch rounds of the embeddings; returns the services for the real run. Texts the
    Batch API did not answer after `embeddings.batch_max_attempts` stop the build with a
    message (the vectors answered stay cached: a rerun asks only the rest)."""
    config = ctx.config.embeddings

    def defer_missing(services: LLMServices) -> None:
        embedder = Embedder(config, services)
        for _, _, texts in texts_to_embed(ctx.staged):
            for start in range(0, len(texts), config.batch_size):
                try:
                    embedder.embed(texts[start:start + config.batch_size])
                except (Deferred, LLMCallError):
                    pass  # its texts wait for the round's batches, or failed for good

    services = by_batch(ctx, "embed", frozenset({"embed"}), defer_missing, embeddings=True)
    if services.batch.failed:
        reason = next(iter(services.batch.failed.values()))
        raise LLMError(f"the Batch API did not answer {len(services.batch.failed)} embeddings "
                       f"requests ({reason}); the vectors it answered are cached: run the "
                       "build again to ask the rest")
    return services
