"""What the grading suites share: names and shapes of the contract (names), PyTorch-equivalent
computations (oracles), generic checks (checks), the kit's training and decoding steps (training).

Test modules import from here, never from one another."""
