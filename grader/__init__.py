"""The Transformer course kit's autograder: `grade assignmentN`."""
