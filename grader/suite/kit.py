"""The kit's own objects that a grading suite also needs on the grader's side."""

from grader.sandbox.child.fixtures import TinyTranslator

__all__ = ["TinyTranslator"]
