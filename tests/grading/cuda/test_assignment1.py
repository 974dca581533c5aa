"""Assignment 1, GPU tier: each component on the GPU, compared with itself on the CPU.

Runs with `grade assignment1 --device cuda` where the grader sees a CUDA device; elsewhere these
checks are reported as skipped and not counted. The inputs are the public tier's stored cases.
"""

from tests.grading.helpers.device import check_on_gpu, check_under_autocast, stored_case
from tests.grading.support import stored


def case(name: str):
    return stored_case(stored("assignment1", name))


def test_layer_norm_on_the_gpu(student):
    check_on_gpu(student, case("layer_norm"), component="LayerNorm")


def test_layer_norm_under_autocast(student):
    check_under_autocast(student, case("layer_norm"), component="LayerNorm")


def test_feed_forward_on_the_gpu(student):
    check_on_gpu(student, case("feed_forward"), component="PositionwiseFeedForward")


def test_feed_forward_under_autocast(student):
    check_under_autocast(student, case("feed_forward"), component="PositionwiseFeedForward")


def test_positional_encoding_on_the_gpu(student):
    check_on_gpu(student, case("positional_encoding"), component="PositionalEncoding")


def test_token_embedding_on_the_gpu(student):
    check_on_gpu(student, case("token_embedding"), component="TokenEmbedding")


def test_transformer_embedding_on_the_gpu(student):
    check_on_gpu(student, case("transformer_embedding"), component="TransformerEmbedding")
