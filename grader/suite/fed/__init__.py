"""The reference's composite fed the submission's own parts: what excuses a composite's failure (issue 51).

`composite` serves a check's requests with the reference's composite in the grader; `parts` are the
submission's parts in it, built and called in the worker; `forms` holds what the worker's answers must
be like before the grader computes on them. grader.judging.attribution decides from the outcomes.
"""
