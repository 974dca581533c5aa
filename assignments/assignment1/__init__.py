"""Assignment 1: the building blocks of the Transformer.

LayerNorm, the position-wise feed-forward network, token embeddings and the
sinusoidal positional encoding. Nothing here depends on attention yet.
"""
