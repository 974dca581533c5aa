"""`grade train assignment4 --data`'s corpus on a made-up language pair (tests/kit/madeup.py), without a
run: the reader, the held-out split and the tokenizers (the runs, their one-line errors and
`grade translate`: tests/kit/sandbox/test_corpus.py)."""

from grader.translation.corpus import CorpusSource, read_pairs, split_held_out
from grader.translation.tokenizing import BpeTokenizer
from tests.kit import madeup


def test_a_tab_separated_file_gives_its_chosen_columns_and_ignores_the_rest(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_bytes("\ufeffGo.\tVa !\tCC-BY 2.0 #1\nHi.\tSalut !\tCC-BY 2.0 #2\r\n".encode())
    assert read_pairs(CorpusSource(path)) == [("Go.", "Va !"), ("Hi.", "Salut !")]
    assert read_pairs(CorpusSource(path, columns=(2, 1), limit=1)) == [("Va !", "Go.")]


def test_two_aligned_files_give_the_same_pairs_as_one_tab_separated_file(tmp_path):
    src, tgt = madeup.write_aligned(tmp_path, 50, seed=2)
    assert read_pairs(CorpusSource(src, target=tgt)) == read_pairs(CorpusSource(madeup.write_tsv(
        tmp_path / "p.tsv", 50, seed=2))) == madeup.pairs(50, seed=2)


def test_the_held_out_split_is_drawn_by_the_seed_disjoint_and_complete():
    pairs = [(f"s{i}", f"t{i}") for i in range(100)]
    a, b = split_held_out(pairs, 10, seed=3), split_held_out(pairs, 10, seed=3)
    assert a == b and a != split_held_out(pairs, 10, seed=4)
    train_part, held = a
    assert len(held) == 10 and sorted(train_part + held) == sorted(pairs)


def test_bpe_gives_the_text_back_and_splits_unseen_words_into_known_pieces():
    pairs = madeup.pairs(400, seed=1)
    tok = BpeTokenizer.train([t for _, t in pairs], vocab_size=120)
    for _, t in pairs[:50]:
        assert tok.join(tok.split(t)) == t
    unseen = "dzägrethy yl"
    assert len(tok.split(unseen)) > 2 and tok.join(tok.split(unseen)) == unseen
    assert BpeTokenizer.from_json(tok.to_json()).split(unseen) == tok.split(unseen)
