"""How one grading runs: the pipeline's stages over one run, and the warm grader that serves them."""
