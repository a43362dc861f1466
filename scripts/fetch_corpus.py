"""Fetch the Python sources of the audit set (or any PyPI release) into a folder.

    python scripts/fetch_corpus.py DEST                     # every release an audit read
    python scripts/fetch_corpus.py DEST sglang==0.5.23      # any NAME==VERSION on PyPI

Each release lands in ``DEST/NAME-VERSION/NAME/`` (only its ``.py`` files), as
``../shared/corpus/fetch_project.sh`` lays it out, so ``PORTLINT_CORPUS=DEST`` points the
known-real test (``tests/test_known_real.py``) at it. A finished release is not fetched again.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

AUDIT_SET = (
    "vllm==0.33.0", "sglang==0.5.23", "deepspeed==0.19.8", "transformers==5.23.0",
    "accelerate==1.15.0",
)  # fmt: skip
# Releases read by held-out audits whose real findings tests/data/known_real.txt holds too.
HELD_OUT = (
    "diffusers==0.42.1", "lightning==2.6.6", "peft==0.21.2", "trl==1.16.0", "mmengine==0.10.7",
    "verl==0.9.1", "bitsandbytes==0.50.2", "torchtitan==0.3.0", "xformers==0.0.35",
    "fairscale==0.4.13", "torchrec==1.4.0", "megatron-core==0.16.1", "monai==1.6.1", "timm==1.0.31",
    "nemo-toolkit==2.4.0", "ultralytics==8.3.200", "litgpt==0.5.10", "ms-swift==3.8.0",
    "kornia==0.8.1", "sentence-transformers==5.1.0", "torchmetrics==1.8.2", "axolotl==0.19.0",
    "lightning-thunder==0.2.6", "torchrl==0.14.1", "speechbrain==1.1.2", "llamafactory==0.9.5",
    "llmcompressor==0.14.0.1", "mosaicml==0.32.1", "torch-geometric==2.8.1", "gptqmodel==7.7.0",
    "hqq==0.2.8.post1", "mmdet==3.3.0", "lm-eval==0.4.13", "opacus==1.6.0", "optimum==2.3.0",
    "xtuner==0.2.0", "open-clip-torch==3.3.0", "pyannote-audio==4.0.7", "auto-round==0.16.1",
    "transformer-lens==4.3.0", "compressed-tensors==0.20.1", "pytorch-metric-learning==2.9.0",
    "skorch==1.4.0", "flagembedding==1.4.2", "deepspeed-mii==0.3.3", "unsloth-zoo==2026.10.9",
    "lerobot==0.4.4", "pytorch-ignite==0.5.5", "lightly==1.6.0", "fastvideo==0.2.1",
    "fairchem-core==2.24.0", "mace-torch==0.3.16", "liger-kernel==0.8.5", "modelscope==1.40.2",
    "funasr==1.4.16", "nerfstudio==1.1.5", "espnet==202511", "gsplat==1.5.3",
    "vllm-omni==0.30.0", "fschat==0.2.36", "invokeai==6.14.2", "coqui-tts==0.28.0",
    "tensordict==0.15.3", "f5-tts==1.1.22", "audiocraft==1.3.0", "petals==2.2.0.post1",
)  # fmt: skip
# Releases whose package is not named as the distribution is (`megatron-core` installs `megatron`).
PACKAGES = {
    "megatron-core": "megatron", "nemo-toolkit": "nemo", "ms-swift": "swift",
    "lightning-thunder": "thunder", "mosaicml": "composer", "lm-eval": "lm_eval",
    "open-clip-torch": "open_clip", "pyannote-audio": "pyannote", "flagembedding": "FlagEmbedding",
    "deepspeed-mii": "mii", "pytorch-ignite": "ignite", "fairchem-core": "fairchem",
    "mace-torch": "mace", "optimum-habana": "optimum", "liger-kernel": "liger_kernel",
    "vllm-omni": "vllm_omni", "flash-linear-attention": "fla", "lmms-eval": "lmms_eval",
    "fschat": "fastchat", "coqui-tts": "TTS",
}  # fmt: skip
PLATFORMS = ["manylinux2014_x86_64", *(f"manylinux_2_{n}_x86_64" for n in range(17, 41))]


def _download(requirement: str, into: Path) -> Path:
    wheel = [
        sys.executable,
        "-m",
        "pip",
        "download",
        requirement,
        "--no-deps",
        "-q",
        "-d",
        str(into),
    ]
    binary = ["--only-binary", ":all:", "--python-version", "3.12", "--implementation", "cp"]
    binary += [option for platform in PLATFORMS for option in ("--platform", platform)]
    if subprocess.run(wheel + binary, capture_output=True).returncode != 0:
        source = subprocess.run([*wheel, "--no-binary", ":all:"], capture_output=True, text=True)
        if source.returncode != 0:
            said = (source.stderr.strip().splitlines() or ["no reason given"])[-1]
            sys.exit(f"fetch_corpus: pip could not download {requirement}: {said}")
    return next(into.iterdir())


def _python_files(archive: Path, package: str, dest: Path) -> None:
    """Copy ``package``'s ``.py`` files from a wheel or an sdist to ``dest/package``."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            for name in wheel.namelist():
                # (Some wheels keep the package under `NAME-VERSION.data/purelib/`.)
                inside = re.sub(r"^[^/]+\.data/(?:pure|plat)lib/", "", name)
                if inside.startswith(f"{package}/") and inside.endswith(".py"):
                    target = dest / inside
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(wheel.read(name))
        return
    with tarfile.open(archive) as sdist:
        for member in sdist.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and member.name.endswith(".py") and package in parts[1:3]:
                start = parts.index(package, 1)
                target = dest.joinpath(*parts[start:])
                target.parent.mkdir(parents=True, exist_ok=True)
                source = sdist.extractfile(member)
                if source is not None:
                    target.write_bytes(source.read())


def fetch(requirement: str, dest: Path) -> Path:
    """The package folder of ``NAME==VERSION`` under ``dest``, fetched if need be."""
    name, version = requirement.split("==")
    package = PACKAGES.get(name, name.replace("-", "_"))
    folder = dest / f"{name}-{version}"
    if not (folder / ".complete").exists():
        with tempfile.TemporaryDirectory() as work:
            archive = _download(requirement, Path(work))
            _python_files(archive, package, folder)
        if not folder.exists():
            sys.exit(f"fetch_corpus: {archive.name} has no package {package!r}; add it to PACKAGES")
        (folder / ".complete").touch()
    return folder / package


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):  # (`--help`: the usage, not a folder named so)
        print(__doc__, file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    dest, requirements = Path(argv[0]), argv[1:] or [*AUDIT_SET, *HELD_OUT]
    for requirement in requirements:
        print(fetch(requirement, dest))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
