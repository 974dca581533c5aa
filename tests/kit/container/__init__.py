"""Tests of the container tier: each runs Docker (Gradescope's container), and may start what a sandbox test does."""
