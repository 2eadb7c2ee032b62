"""faiss neighbours over whole-word tokens, and the 2-D map."""

import numpy as np
import pytest

from backends.neighbours import VocabularyIndex, is_whole_word
from backends.projection import neighbourhood_map, project


def test_whole_word_filter():
    assert is_whole_word(" lizard") and not is_whole_word("ard")
    assert not is_whole_word(" .") and not is_whole_word(" a") and not is_whole_word(" st")


def test_a_tokens_own_row_is_its_nearest_neighbour(tiny_lm):
    index = VocabularyIndex(tiny_lm, "input")
    assert "garden" in index.tokens and "." not in index.tokens
    token_id = tiny_lm.tokenizer.convert_tokens_to_ids("▁garden")
    top = index.search(tiny_lm.input_matrix[token_id], k=3)[0]
    assert top[0].token == "garden" and top[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert top[0].similarity >= top[1].similarity >= top[2].similarity


def test_zero_vector_has_no_neighbours_and_bad_k_is_refused(tiny_lm):
    import torch

    index = VocabularyIndex(tiny_lm, "output")
    assert index.search(torch.zeros(tiny_lm.dim), k=3) == [[]]
    with pytest.raises(ValueError, match="k="):
        index.search(torch.ones(tiny_lm.dim), k=0)


@pytest.mark.parametrize(("n", "method"), [(2, "pca"), (5, "pca"), (7, "tsne"), (40, "tsne")])
def test_projection_clamps_perplexity_and_falls_back_to_pca(n, method):
    coords, used = project(np.random.default_rng(0).normal(size=(n, 16)))
    assert coords.shape == (n, 2) and used == method and np.isfinite(coords).all()


def test_a_map_of_no_vectors_is_empty_not_an_error():
    assert neighbourhood_map({}, {}, {}) == ([], "none")
