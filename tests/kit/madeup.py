"""A made-up language pair, generated from a seed: the kit's parallel corpus for its corpus tests and
benchmark (no third-party sentences in the project).

Both languages have lexicons of pseudo-words drawn from their own syllables, one-to-one between
them, and their own word order:

    source (subject-verb-object, adjectives before nouns, prepositions, a full stop):
        DET [ADJ] NOUN  VERB  DET [ADJ] NOUN  [PREP DET [ADJ] PLACE]  .
        "soda mopare kuga rore soda rupa ."
    target (subject-object-verb, adjectives after nouns, case particles, postpositions):
        NOUN' [ADJ'] yl  NOUN' [ADJ'] öv  [PLACE' [ADJ'] POSTP']  VERB'
        "dzeya väkra yl krägrö öv yäsky"

so that a model must reorder, map words and insert particles; copying the source gets nothing right.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

SOURCE_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
TARGET_SYLLABLES = [c + v for c in ("dz", "gr", "x", "v", "zh", "kr", "y", "sk", "th")
                    for v in ("ö", "a", "e", "y", "ä")]


@dataclass(frozen=True)
class Lexicon:
    """Source word -> target word, by part of speech; determiners and particles fixed per side."""

    nouns: dict[str, str]
    adjectives: dict[str, str]
    verbs: dict[str, str]
    places: dict[str, str]
    determiners: tuple[str, ...]          # source only: the target has none
    prepositions: dict[str, str]          # source preposition -> target postposition


def _words(rng: random.Random, syllables: list[str], n: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        word = "".join(rng.choice(syllables) for _ in range(rng.choice((2, 2, 3))))
        if word not in taken:
            taken.add(word)
            out.append(word)
    return out


def lexicon(seed: int = 0, *, nouns: int = 40, adjectives: int = 15, verbs: int = 20, places: int = 10) -> Lexicon:
    rng = random.Random(seed)
    src_taken: set[str] = set()
    tgt_taken: set[str] = {"yl", "öv"}  # the target's case particles

    def table(n: int) -> dict[str, str]:
        return dict(zip(_words(rng, SOURCE_SYLLABLES, n, src_taken), _words(rng, TARGET_SYLLABLES, n, tgt_taken),
                        strict=True))

    determiners = tuple(_words(rng, SOURCE_SYLLABLES, 2, src_taken))
    return Lexicon(nouns=table(nouns), adjectives=table(adjectives), verbs=table(verbs), places=table(places),
                   determiners=determiners, prepositions=table(3))


def _phrase(rng: random.Random, lex: Lexicon, table: dict[str, str]) -> tuple[list[str], list[str]]:
    noun = rng.choice(list(table))
    src, tgt = [rng.choice(lex.determiners)], [table[noun]]
    if rng.random() < 0.4:
        adj = rng.choice(list(lex.adjectives))
        src.append(adj)
        tgt.append(lex.adjectives[adj])
    return src + [noun], tgt


def sentence(rng: random.Random, lex: Lexicon) -> tuple[str, str]:
    """One pair: (source sentence, target sentence), words separated by spaces."""
    (s_src, s_tgt), (o_src, o_tgt) = _phrase(rng, lex, lex.nouns), _phrase(rng, lex, lex.nouns)
    verb = rng.choice(list(lex.verbs))
    src, tgt = s_src + [verb] + o_src, s_tgt + ["yl"] + o_tgt + ["öv"]
    if rng.random() < 0.5:
        prep = rng.choice(list(lex.prepositions))
        p_src, p_tgt = _phrase(rng, lex, lex.places)
        src += [prep] + p_src
        tgt += p_tgt + [lex.prepositions[prep]]
    return " ".join(src + ["."]), " ".join(tgt + [lex.verbs[verb]])


def pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """`n` pairs of the language pair of `seed`, drawn from random.Random(seed)."""
    lex = lexicon(seed)
    rng = random.Random(seed + 1)
    return [sentence(rng, lex) for _ in range(n)]


def write_tsv(path: Path, n: int, seed: int = 0, *, extra_column: bool = True) -> Path:
    """The pairs as a Tatoeba/Anki-style file: source, target, and an attribution-like third column."""
    lines = [f"{s}\t{t}" + (f"\tmade-up pair #{i}" if extra_column else "") for i, (s, t) in enumerate(pairs(n, seed))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_aligned(folder: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    """The pairs as two aligned text files, src.txt and tgt.txt."""
    got = pairs(n, seed)
    src, tgt = folder / "src.txt", folder / "tgt.txt"
    src.write_text("".join(s + "\n" for s, _ in got), encoding="utf-8")
    tgt.write_text("".join(t + "\n" for _, t in got), encoding="utf-8")
    return src, tgt
