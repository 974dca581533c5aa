"""Corpus BLEU and chrF by sacreBLEU (Post, 2018), the figures papers and courses report.

    score_corpus(hypotheses, references) -> Scores   (detokenized strings, one reference each)
    corpus_bleu(hypotheses, references)  -> float    (token lists, joined with spaces)

sacreBLEU's defaults throughout (BLEU: 13a tokenization, exponential smoothing; chrF: character
6-grams, beta 2), so that a figure here is the one `sacrebleu` prints on the same files, and its
signature says so. Imported only when a score is asked for: the sandbox, which runs the rest of
grader.training, never scores (grader.suite.trained scores in the grader's process).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Scores:
    """Corpus scores in 0..100 with the signatures that say how they were computed."""

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    n: int

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Scores:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def score_corpus(hypotheses: list[str], references: list[str]) -> Scores:
    """sacreBLEU's corpus BLEU and chrF of `hypotheses` against one reference each."""
    from sacrebleu.metrics import BLEU, CHRF

    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses: {len(hypotheses)} sentences for {len(references)} references")
    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return Scores(bleu=float(b.score), chrf=float(c.score), bleu_signature=str(bleu.get_signature()),
                  chrf_signature=str(chrf.get_signature()), n=len(hypotheses))


def corpus_bleu(hypotheses: list[list[str]], references: list[list[str]]) -> float:
    """sacreBLEU's corpus BLEU, 0..100, of token lists (each sentence's tokens joined with spaces).

    On the bundled date task the tokens are digits, '-' and words, which 13a leaves as they are,
    so this is BLEU-4 over those tokens; with every n-gram order matched somewhere in the corpus the
    smoothing changes nothing."""
    return score_corpus([" ".join(h) for h in hypotheses], [" ".join(r) for r in references]).bleu
