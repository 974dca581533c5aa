"""Assignment 2, GPU tier: each component on the GPU, compared with itself on the CPU.

Runs with `grade assignment2 --device cuda` where the grader sees a CUDA device; elsewhere these
checks are reported as skipped and not counted. Half precision is where an attention that masks
with -1e9 breaks (float16 holds nothing below -65504).
"""

from tests.grading.helpers.device import Case, check_on_gpu, check_under_autocast, stored_case
from tests.grading.helpers.names import CAUSAL_MASK
from tests.grading.support import stored


def case(name: str):
    return stored_case(stored("assignment2", name))


def test_sdpa_on_the_gpu(student):
    check_on_gpu(student, case("sdpa_masked"), component="scaled_dot_product_attention")


def test_sdpa_under_autocast(student):
    check_under_autocast(student, case("sdpa_masked"), component="scaled_dot_product_attention")


def test_pad_mask_on_the_gpu(student):
    check_on_gpu(student, case("pad_mask"), component="make_pad_mask")


def test_causal_mask_on_the_gpu(student):
    check_on_gpu(student, Case(CAUSAL_MASK, (6,), device_kwarg="device", function=True), component="make_causal_mask")


def test_tgt_mask_on_the_gpu(student):
    check_on_gpu(student, case("tgt_mask"), component="make_tgt_mask")


def test_mha_on_the_gpu(student):
    check_on_gpu(student, case("mha_self_causal"), component="MultiHeadAttention")


def test_mha_under_autocast(student):
    check_under_autocast(student, case("mha_cross"), component="MultiHeadAttention")
