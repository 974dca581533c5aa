"""Judging what a grading observed, in the grader's process: scores, attribution, diagnosis,
the panel, forbidden APIs. Pure functions over outcomes; nothing here runs submission code."""
