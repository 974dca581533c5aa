"""Assignment 3: the Transformer.

The residual-plus-norm wrapper around every sublayer, the encoder and decoder
stacks, and the full encoder-decoder model from embeddings to logits.
"""
