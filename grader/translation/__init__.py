"""Training on a parallel corpus the user supplies, and translating with the result: `grade train
assignment4 --data` and `grade translate`. The corpus reader, the tokenizers, checkpoints, the
training loop that resumes bit for bit, and beam search. It runs the student's own code in the
student's process (their command, on their code); it is never staged into the grading sandbox, so a
submission cannot import it there."""
