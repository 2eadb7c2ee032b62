"""The README's front matter, which configures the Hugging Face Space, against what the app
installs: a Space reads nothing else before it builds."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _front_matter() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, "README.md must open with the Space's YAML front matter"
    return yaml.safe_load(match.group(1))


def _pins(name: str) -> dict[str, str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    pairs = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    return {package.strip().lower(): version.strip() for package, version in pairs}


def test_the_space_runs_the_gradio_and_python_the_app_pins() -> None:
    config = _front_matter()
    assert (
        config["sdk"] == "gradio" and config["sdk_version"] == _pins("requirements.txt")["gradio"]
    )
    assert config["python_version"] == "3.11"
    assert (ROOT / config["app_file"]).is_file()
    assert config["hf_oauth"] is True  # votes keyed to a (hashed) login: README, Space


def test_the_short_description_fits_the_hub() -> None:
    # the Hub refuses a Space whose card's short description is longer than 60 characters
    assert 0 < len(_front_matter()["short_description"]) <= 60


def test_a_space_installs_no_test_tools() -> None:
    # a Space installs requirements.txt alone: the tests' tools stay in requirements-dev.txt
    app, dev = _pins("requirements.txt"), _pins("requirements-dev.txt")
    assert not {"pytest", "ruff", "datasets"} & set(app)
    assert {"pytest", "ruff", "datasets"} <= set(dev)
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text(encoding="utf-8")
