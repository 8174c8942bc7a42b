"""Which quantisation of the bundled MiniLM computes the right vectors on this CPU (issue #21).

ONNX Runtime's int8 matrix products (MLAS) multiply uint8 activations by the
weights. With int8 weights ("u8s8", the variant shipped first) the sums are
exact where the CPU has VNNI (``vpdpbusd``, AVX-512 or AVX encoded) and on
ARM64 (NEON widens; the dot-product and i8mm kernels take int8 weights
without a 16-bit sum). On x86 with AVX2, or AVX-512 without VNNI, MLAS uses
``vpmaddubsw``, which adds two u8 x s8 products into a *saturating* int16:
255 * 127 * 2 = 64,770 does not fit in 32,767, and the vectors drift (worst
cosine 0.958 against fp32 on the test passages, AVX2 emulated; 0.961 on an
AVX2 AMD EPYC). With uint8 weights ("u8u8") every kernel widens both
operands to int16 and sums pairs into int32: exact on every CPU, measured
0.998, but ~15% slower than u8s8 where u8s8 is exact (docs/runtime.md).
Where ARM's SME is present, ONNX Runtime hands int8 weights to KleidiAI's SME
kernel instead, whose vectors were garbage (cosine 0.04) under emulation;
uint8 weights do not take that path.

So: u8s8 where it is exact, u8u8 on every other x86 or ARM64 CPU, and the
fp32 graph on an architecture nothing was measured on. The choice is read
from the flags the OS reports (``/proc/cpuinfo`` on Linux, ``sysctl`` on
macOS; numpy's own cpuid probe elsewhere) once per process, and recorded in
the store's model id (``…#onnx-int8-u8u8``), so a store built with another
variant is re-embedded.
"""

from __future__ import annotations

import functools
import platform
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Variant:
    """One way of running the bundled MiniLM on ONNX Runtime."""

    name: str  # after the '#' of the store's model id
    tag: str  # in the built file's name
    weights: str | None  # onnxruntime's QuantType of the weights; None: fp32, not quantised
    why: str

    def model_id(self, base: str) -> str:
        """The id the store records: ``base#name``."""
        return f"{base}#{self.name}"


U8S8 = Variant("onnx-int8", "int8", "QInt8", "int8 weights: exact with VNNI, and on ARM64")
U8U8 = Variant("onnx-int8-u8u8", "int8-u8u8", "QUInt8", "uint8 weights: u8s8 would saturate")
FP32 = Variant("onnx-fp32", "fp32", None, "no int8 kernel measured on this architecture")
VARIANTS: dict[str, Variant] = {v.name: v for v in (U8S8, U8U8, FP32)}

_X86 = ("x86_64", "amd64", "x64")
_ARM64 = ("arm64", "aarch64")
_AVX512_CORE = frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"})

# macOS's sysctl and numpy spell some flags differently from Linux.
_APPLE = {"SME": "sme", "I8MM": "i8mm", "DotProd": "asimddp"}
_RENAMES = {
    "avx1.0": "avx",
    "avx512vnni": "avx512_vnni",
    "avxvnni": "avx_vnni",
}


def _linux_flags(cpuinfo: Path) -> frozenset[str]:
    """The first ``flags`` (x86) or ``Features`` (ARM) line; every core lists the same."""
    try:
        with cpuinfo.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.lower().split())
    except OSError:
        pass
    return frozenset()


def _sysctl(*args: str) -> str:
    import subprocess

    try:
        return subprocess.run(
            ["sysctl", *args], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _macos_flags() -> frozenset[str]:
    if platform.machine().lower() in _ARM64:  # Apple silicon: one 0/1 key per feature
        out = _sysctl(*(f"hw.optional.arm.FEAT_{k}" for k in _APPLE))
        on = (line.partition(":") for line in out.splitlines())
        return frozenset(_APPLE[k.strip().rpartition("_")[2]] for k, _, v in on if v.strip() == "1")
    out = _sysctl("-n", "machdep.cpu.features", "machdep.cpu.leaf7_features")
    return frozenset(_RENAMES.get(f, f) for f in out.lower().split())


def _numpy_flags() -> frozenset[str]:
    """numpy's cpuid probe (Windows and the rest); it knows no AVX-VNNI, so such a CPU
    gets u8u8: exact, a little slower."""
    import importlib

    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # 2.x, 1.x
        try:
            found = getattr(importlib.import_module(module), "__cpu_features__", None)
        except ImportError:
            continue
        if isinstance(found, dict):
            on = (str(k).lower() for k, v in found.items() if v)
            return frozenset(_RENAMES.get(k, k) for k in on)
    return frozenset()


@functools.cache
def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags, as Linux spells them (``avx2``, ``avx512_vnni``)."""
    found = frozenset[str]()
    if sys.platform.startswith("linux"):
        found = _linux_flags(Path("/proc/cpuinfo"))
    elif sys.platform == "darwin":
        found = _macos_flags()
    return found or _numpy_flags()


def u8s8_exact(machine: str, flags: frozenset[str]) -> bool:
    """Whether ONNX Runtime's u8s8 kernel for this CPU sums without saturating.

    Mirrors MLAS's dispatch (onnxruntime/core/mlas/lib/platform.cpp): with
    AVX-512 BW/DQ/VL it takes the AVX-512 kernel, exact only with AVX512_VNNI
    (the AVX-VNNI one is then not used); else AVX-VNNI's kernel when present,
    else AVX2's or SSE's (``pmaddubsw``). On ARM64 every kernel is exact but
    KleidiAI's, taken where SME is present."""
    machine = machine.lower()
    if machine in _ARM64:
        return "sme" not in flags
    if machine not in _X86:
        return False
    if flags >= _AVX512_CORE:
        return "avx512_vnni" in flags
    return "avx2" in flags and "avx_vnni" in flags


def choose(machine: str | None = None, flags: frozenset[str] | None = None) -> Variant:
    """The variant this CPU computes right (see the module docstring)."""
    machine = (machine or platform.machine()).lower()
    if machine not in _X86 + _ARM64:
        return FP32
    return U8S8 if u8s8_exact(machine, cpu_flags() if flags is None else flags) else U8U8


def variant_named(name: str) -> Variant | None:
    """The variant a model id's ``#suffix`` names, if any."""
    return VARIANTS.get(name)
