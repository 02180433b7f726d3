"""The kernel category table on every real kernel name in the fixture traces."""

from __future__ import annotations

import re

import pytest

from yoloprof.metrics.categories import CATEGORIES, CATEGORY_TABLE, classify, is_tensorcore, short_name

# Names allowed to fall into "other", each with the reason it belongs to no listed category.
ALLOWED_OTHER = {
    # cub radix sort passes (torch.sort / unique / embedding index sorting): sorting is not a
    # reduction, a copy or elementwise work.
    r"DeviceRadixSort(ExclusiveSum|Histogram|Onesweep)Kernel",
    # torch.searchsorted: binary search.
    r"searchsorted_cuda_kernel",
    # fbgemm input validation and index linearisation before embedding backward.
    r"bounds_check_indices_kernel", r"linearize_index_kernel", r"_offsets_range_cuda_kernel",
    # old (2022) Inductor Triton kernels are named only by their argument list (triton__0d1d2d):
    # the name says nothing about what they compute.
    r"triton__[0-9d]+",
}


def test_table_is_ordered_data():
    assert {c for c, _ in CATEGORY_TABLE} == set(CATEGORIES) - {"other"}
    assert all(isinstance(p, re.Pattern) for _, p in CATEGORY_TABLE)


def test_other_is_short_and_justified(names):
    others = {short_name(n) for n in names if classify(n) == "other"}
    unexplained = {s for s in others if not any(re.fullmatch(p, s) for p in ALLOWED_OTHER)}
    assert not unexplained
    assert len(others) <= 15
    assert len(names) > 300


@pytest.mark.parametrize("name, category", [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "communication"),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)", "attention"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)", "attention"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>(Params)", "gemm/conv"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16", "gemm/conv"),
    ("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(Params)", "gemm/conv"),
    ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN", "gemm/conv"),
    ("triton_tem_fused_mm_0", "gemm/conv"),
    ("volta_sgemm_128x64_nn", "gemm/conv"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int)", "norm/reduction"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MeanOps<float>>>(...)", "norm/reduction"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(...)", "norm/reduction"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)", "elementwise"),
    ("triton_poi_fused_add_cos_sin_0", "elementwise"),
    ("void at::native::elementwise_kernel<128, 2, gpu_kernel_impl<direct_copy_kernel_cuda(...)>>(int)", "layout/copy"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1>(...)", "layout/copy"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::convert_kernel<float>>(int)", "elementwise"),
    ("Memcpy HtoD (Pinned -> Device)", "memcpy/memset"),
    ("Memset (Device)", "memcpy/memset"),
])
def test_known_names(name, category):
    assert classify(name) == category


def test_convert_is_not_conv():
    assert classify("convert_fp32_to_bf16_kernel") != "gemm/conv"
    assert classify("void implicit_convolve_sgemm<float, float>(int)") == "gemm/conv"
    assert classify("conv2d_grouped_direct_kernel") == "gemm/conv"


@pytest.mark.parametrize("name, tc", [
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>(Params)", True),
    ("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tensor16x8x8", True),
    ("volta_h884gemm_64x64_ldg8_nn", True),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", True),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_wgmma", True),
    ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN", True),
    ("volta_sgemm_128x64_nn", False),
    ("ampere_sgemm_32x128_nn", False),
    ("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>(int)", False),
    ("triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14", False),
])
def test_tensorcore(name, tc):
    assert is_tensorcore(name) is tc


@pytest.mark.parametrize("name, short", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
     "vectorized_elementwise_kernel"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>"
     "(cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1::Params)",
     "cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "ncclKernel_AllReduce_RING_LL_Sum_float"),
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float>(Params)", "gemvx::kernel"),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>(float*)", "softmax_warp_forward"),
    ("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock"
     "22ImplicitGemmMultistageINS_4gemm9GemmShapeILi64ELi64ELi16EEE", "ImplicitGemmConvolution"),
    ("Memcpy HtoD (Host -> Device)", "Memcpy HtoD (Host -> Device)"),
    ("triton_poi_fused_add_cos_sin_0", "triton_poi_fused_add_cos_sin_0"),
])
def test_short_name(name, short):
    assert short_name(name) == short


def test_short_names_of_fixtures_are_readable(names):
    for name in names:
        s = short_name(name)
        assert s and len(s) <= max(len(name), 1)
        assert "<" not in s or s.startswith(("Memcpy", "Memset"))
