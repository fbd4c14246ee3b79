"""A repeated question is embedded once (the real embedder; the cache counts its calls)."""

import numpy as np

from rag_assets.embedding import QueryVectorCache, get_embedder


def test_a_repeated_question_is_not_embedded_again(kb):
    cache = kb.query_vectors
    first = kb.retrieve("franchise inondation zone A")
    misses, hits = cache.misses, cache.hits
    kb.retrievals.clear()  # retrieved again, not served from the recent retrievals
    again = kb.retrieve("franchise inondation zone A")
    assert (cache.misses, cache.hits) == (misses, hits + 1)  # the embedder was not called
    assert again.ranking("dense") == first.ranking("dense")
    kb.retrieve("délai de préavis de résiliation")
    assert cache.misses == misses + 1


def test_the_cache_keeps_the_most_recent_questions(kb):
    embedder = get_embedder(kb.embedder_spec)
    cache = QueryVectorCache(size=2)
    vector = cache.embed_query(embedder, "franchise")
    assert cache.embed_query(embedder, "franchise") is vector and cache.misses == 1
    assert np.allclose(vector, embedder.embed_query("franchise"))
    cache.embed_query(embedder, "plafond")
    cache.embed_query(embedder, "préavis")  # "franchise" is the least recently used: dropped
    cache.embed_query(embedder, "franchise")
    assert cache.misses == 4 and cache.hits == 1
