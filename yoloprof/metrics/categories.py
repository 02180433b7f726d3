"""Kernel categories (DESIGN.md section 5): an ordered table of regexes, first match wins.

Why a table and not if-chains: the rows are data that a test runs over every real kernel name in
the fixture traces, and a new vendor library is one new row. Rows are matched against the full
demangled name (template arguments included) because the interesting token is often inside them
(`elementwise_kernel<..., direct_copy_kernel_cuda ...>` is a copy, `cutlass::Kernel<..._s1688gemm_...>`
is a GEMM). The order encodes precedence: communication and attention kernels also contain GEMM
tokens, a cuDNN convolution contains "reduce", and so on.

Categories:
- memcpy/memset: CUPTI memory activity (`Memcpy HtoD (...)`, `Memset (Device)`).
- communication: NCCL/RCCL collectives and point-to-point kernels.
- attention: fused attention (flash, fmha, memory-efficient SDPA).
- gemm/conv: dense matmul and convolution kernels of every library (cuBLAS/Lt, CUTLASS, cuDNN
  incl. its winograd/FFT/implicit-GEMM engines and their helper kernels, MAGMA, Triton matmul
  templates, rocBLAS/Tensile `Cijk_`, hipBLASLt, MIOpen).
- norm/reduction: normalisation, softmax, reductions, scans, pooling, losses.
- layout/copy: device-side data movement: copies, transposes, concatenation, layout conversion,
  gather/scatter/index and embedding-table lookups.
- elementwise: pointwise kernels incl. fused optimizer updates (multi_tensor_apply, Adam, SGD).
- other: anything else (listed and justified in the tests).
"""

from __future__ import annotations

import re
from functools import lru_cache

CATEGORIES = ("communication", "attention", "gemm/conv", "layout/copy", "norm/reduction",
              "elementwise", "memcpy/memset", "other")

_I = re.IGNORECASE

# (category, compiled regex): first match wins.
CATEGORY_TABLE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("memcpy/memset", re.compile(r"^\s*(memcpy|memset)\b", _I)),
    ("communication", re.compile(r"nccl|rccl|msccl|\bc10d::|all_?reduce|all_?gather|reduce_?scatter"
                                 r"|all_?to_?all|sendrecv", _I)),
    ("attention", re.compile(r"flash_?(fwd|bwd|attn|attention)|flash::|fmha|sdpa|_attention|attention_"
                             r"|mem_?eff|efficient_attention|scaled_dot_product|triton_tem_fused_.*attn",
                             _I)),
    ("gemm/conv", re.compile(
        r"(?<!fb)gemm|gemv|cutlass|cublas|xmma|wgmma|hmma|imma|sgemm|magma_|hipblaslt|^Cijk_|\bCijk_"
        r"|implicit_?conv|winograd|fft2d|scudnn|cudnn.*(conv|fprop|dgrad|wgrad)|(fprop|dgrad|wgrad)_"
        r"|dgrad_engine|wgrad_alg|cask_cudnn|conv(?!ert)(olution|_?[123]d|_?kernel|_?fwd|_?bwd|_?depthwise)?"
        r"|triton_(tem_fused_)?(bmm|mm|addmm|conv)|\bmm_kernel|miopen.*(conv|gemm)|igemm|splitk", _I)),
    ("layout/copy", re.compile(
        r"copy|transpose|permute|CatArray|nchwTo|nhwcTo|index(Select|Func|_elementwise|_put)|gather"
        r"|scatter|embedding|bucketize|recat|to_dense|im2col|col2im|\bpad|reflection_pad|replication_pad"
        r"|flip|roll_|unfold|upsample|interpolate|channels_?last|compact", _I)),
    ("norm/reduction", re.compile(
        r"norm(?!al)|bn_(fw|bw)|welford|GammaBeta|softmax|reduce|reduction|\bcub::Device(Scan|Reduce|Segmented)"
        r"|scan_?kernel|argmax|argmin|pool|cross_?entropy|nll_?loss|cumsum|triton_(red|per)_", _I)),
    ("elementwise", re.compile(
        r"elementwise|pointwise|triton_poi_|multi_tensor_apply|foreach|fill|dropout|distribution_"
        r"|relu|gelu|silu|sigmoid|tanh|activation|clamp|where_kernel|adam|sgd|lamb|scalePackedTensor"
        r"|bias_?add|\badd_kernel|mul_kernel", _I)),
)

# Tensor Core (NVIDIA) / matrix core (AMD MFMA) evidence in a kernel name: instruction families,
# CUTLASS "tensorop", and the MMA shape tokens (16816 = m16n8k16, 1688, 884, ...), also written
# as `tensor16x8x8` (cuDNN xmma) or `_MI16x16x1_` (Tensile MFMA).
TENSORCORE_PATTERN = re.compile(
    r"hmma|imma|wgmma|gmma|wmma|tensorop|xmma|mma_sync"
    r"|(?<![0-9])(16816|16832|1688|1684|884|8816|8832)(?![0-9])"
    r"|tensor\d+x\d+x\d+|_MI\d+x\d+x\d+", _I)


# Ops whose kernels can run on Tensor Cores (torch-tb-profiler 0.4.3's `TC_OP_Allowlist`, after
# torch's autocast lists): what the Tensor Core view and the AMP recommendation count as eligible.
TC_ELIGIBLE_OPS = frozenset((
    "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_tbc",
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::convolution",
    "aten::cudnn_convolution", "aten::cudnn_convolution_transpose", "aten::prelu", "aten::addmm",
    "aten::addmv", "aten::addr", "aten::matmul", "aten::mm", "aten::mv", "aten::linear", "aten::addbmm",
    "aten::baddbmm", "aten::bmm", "aten::chain_matmul", "aten::linalg_multi_dot",
    "aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_gru_cell", "aten::lstm_cell", "aten::gru_cell",
    "aten::rnn_tanh_cell", "aten::rnn_relu_cell", "CudnnConvolutionBackward", "BmmBackward0",
    "aten::cudnn_convolution_transpose_backward", "CudnnConvolutionTransposeBackward", "MmBackward",
    "aten::cudnn_convolution_backward_weight", "aten::addmm_", "AddmvBackward", "MvBackward",
    "aten::cudnn_convolution_transpose_backward_weight", "aten::cudnn_convolution_transpose_backward_input",
    "AddmmBackward", "aten::cudnn_convolution_backward_input", "AddbmmBackward", "aten::cudnn_convolution_backward",
))


@lru_cache(maxsize=65536)
def classify(name: str) -> str:
    """The category of a kernel (or memcpy/memset activity) name."""
    for category, pattern in CATEGORY_TABLE:
        if pattern.search(name):
            return category
    return "other"


@lru_cache(maxsize=65536)
def is_tensorcore(name: str) -> bool:
    """True when the name says the kernel runs on Tensor Cores (or AMD matrix cores)."""
    return bool(TENSORCORE_PATTERN.search(name))


_GENERIC = {"kernel", "Kernel", "Kernel2", "device_kernel", "kernel_entry", "launch_kernel"}
_MANGLED_IDENT = re.compile(r"(\d+)")


def _strip_nested(name: str) -> tuple[str, str]:
    """(name with every <...> and (...) group removed, text of the last top-level <...>).
    "->" (as in `Memcpy HtoD (Host -> Device)`) is an arrow, not a closing bracket."""
    out: list[str] = []
    template: list[str] = []
    last_template = ""
    depth = 0
    prev = ""
    for ch in name:
        if ch == ">" and prev == "-":
            ch = "~"
        prev = ch
        if ch in "<(":
            if depth == 0:
                template = [] if ch == "<" else template
                opener = ch
            depth += 1
            if depth == 1:
                continue
        elif ch in ">)" and depth > 0:
            depth -= 1
            if depth == 0:
                if opener == "<":
                    last_template = "".join(template)
                continue
        if depth == 0:
            out.append(ch)
        elif opener == "<":
            template.append(ch)
    return "".join(out), last_template


def _demangled_short(name: str) -> str:
    bare, template = _strip_nested(name)
    words = bare.strip().split()
    if not words:
        return ""
    parts = [p for p in words[-1].split("::") if p]
    if not parts:
        return ""
    token = parts[-1]
    if token in _GENERIC:
        inner = _demangled_short(template.split(",")[0].strip()) if template else ""
        if len(inner) >= 8 and ("_" in inner or any(c.isupper() for c in inner[1:])):
            return inner
        return "::".join(parts[-2:])
    return token


def _mangled_short(name: str) -> str:
    """Itanium-mangled names (`_ZN19cutlass_cudnn_train6KernelI...`): read the length-prefixed
    identifiers (skipping template literals like `Li128E`); a generic `Kernel` wrapper gives way
    to the first substantial identifier inside it."""
    idents: list[str] = []
    i, n = 2, len(name)
    while i < n:
        m = _MANGLED_IDENT.match(name, i)
        if not m:
            i += 1
            continue
        if i >= 2 and name[i - 2] == "L":  # literal such as Li128E
            i = m.end()
            continue
        length = int(m.group(1))
        start = m.end()
        if length <= 0 or start + length > n:
            break
        idents.append(name[start:start + length])
        i = start + length
    if not idents:
        return name[:80]
    for k, ident in enumerate(idents):
        if ident in _GENERIC:
            inner = [s for s in idents[k + 1:] if len(s) >= 8 and s not in _GENERIC]
            return inner[0] if inner else ident
    return idents[-1]


@lru_cache(maxsize=65536)
def short_name(name: str) -> str:
    """A readable kernel name: no return type, namespaces, template or call arguments, e.g.
    `void at::native::vectorized_elementwise_kernel<4, ...>(...)` -> `vectorized_elementwise_kernel`
    and `void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>(...)` -> the CUTLASS kernel."""
    text = name.strip()
    if re.match(r"(?i)mem(cpy|set)\b", text):
        return text
    if text.startswith("_Z"):
        return _mangled_short(text)
    short = _demangled_short(text)
    return short if short else text[:80]
