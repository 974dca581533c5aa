"""Tests of the kernel tier: each runs a Jupyter kernel (nbclient, nbgrader), and may start what a sandbox test does."""
