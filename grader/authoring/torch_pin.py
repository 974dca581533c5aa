"""The torch version the kit is checked with: CI (.ci/run) installs exactly this one, and the student
README that `grade release` writes tells students to install it. Change it here, nowhere else."""

TORCH = "2.13.0"
