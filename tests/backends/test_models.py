"""Model presets: names, local folders and hub ids; loading from a local path."""

import subprocess
import sys

import pytest

from backends.models import LM_PRESETS, check_converted, load_causal_lm, resolve_source
from backends.settings import resolve_device


def test_presets_resolve_and_bad_names_get_suggestions():
    assert resolve_source("gemma-3-270m", LM_PRESETS, "LM preset").name == "gemma-3-270m"
    assert (
        resolve_source("meta-llama/Llama-2-7b-hf", LM_PRESETS, "LM preset")
        == "meta-llama/Llama-2-7b-hf"
    )
    with pytest.raises(ValueError, match="did you mean 'gemma-3-270m'"):
        resolve_source("gemma-3-270n", LM_PRESETS, "LM preset")
    with pytest.raises(ValueError, match="unknown LM preset"):
        resolve_source("../../etc/passwd/x/y", LM_PRESETS, "LM preset")


def test_a_local_folder_loads_like_a_hub_id(tiny_lm, tmp_path):
    """The code path a hub id takes online, exercised offline with a saved folder."""
    tiny_lm.model.save_pretrained(tmp_path)
    tiny_lm.tokenizer.save_pretrained(tmp_path)
    model, tokenizer = load_causal_lm(str(tmp_path), "cpu")
    assert model.config.hidden_size == tiny_lm.dim and len(tokenizer) == len(tiny_lm.tokenizer)
    assert not any(p.requires_grad for p in model.parameters())


def test_absent_cuda_is_a_clear_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="no GPU"):
        resolve_device("cuda")
    assert resolve_device("auto") == "cpu"


def test_importing_the_library_never_imports_gradio():
    code = (
        "import sys, backends, backends.pipeline, backends.learners; print('gradio' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_converted_lm_that_reads_english_near_chance_is_refused(real_lm, tmp_path, monkeypatch):
    """The conversion's check: the embedded LM reads the plain sentence well under the
    bar; an LM that has learnt nothing (as a transformers release that misreads the GGUF
    gives) is refused with the version named, before anything is cached, and so is such a
    cache when it is loaded."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    from tests.conftest import TINY_LM_SHAPE, tiny_tokenizer

    assert check_converted(real_lm.model, real_lm.tokenizer) < 5.0
    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=50_000,
        head_dim=16,
        max_position_embeddings=128,
        sliding_window=16,
        **TINY_LM_SHAPE,
    )
    untrained = Gemma3ForCausalLM(config).eval()
    with pytest.raises(RuntimeError, match=r"transformers \S+ did not convert this GGUF"):
        check_converted(untrained, tiny_tokenizer())
    # A cache converted before the check (or by another release) is refused when loaded,
    # with the command that converts it again; a folder of the user's own is not checked.
    untrained.save_pretrained(tmp_path)
    tiny_tokenizer().save_pretrained(tmp_path)
    monkeypatch.setattr("backends.models.converted_dir", lambda preset: tmp_path)
    with pytest.raises(RuntimeError, match="fetch gemma-3-270m --force"):
        load_causal_lm("gemma-3-270m", "cpu")
    model, _ = load_causal_lm(str(tmp_path), "cpu")
    assert model.config.vocab_size == 50_000
