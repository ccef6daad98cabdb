"""hfstatic.Tokenizer: the program's embedded tokenizer, the model directory's, and the reference decoder."""
import pytest

import hfstatic

TEXTS = ["Once upon a time", "Lily and Tom went to the park. They saw a big dog!", "  two  spaces", "naïve café ☕ 日本",
         ""]


@pytest.fixture(scope="module")
def tok_dir(stories_dir):
    return hfstatic.Tokenizer.from_dir(stories_dir)


def test_program_and_directory_tokenizers_agree(runner, tok_dir):
    tok = runner.tokenizer
    assert tok.vocab_size == tok_dir.vocab_size == 512
    assert tok.bos_id == 1 and tok.eos_ids == [2]
    for t in TEXTS:
        assert tok.encode(t) == tok_dir.encode(t)


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip(tok_dir, text):
    ids = tok_dir.encode(text)
    assert ids[0] == 1  # BOS
    assert tok_dir.decode(ids, skip_special=True) == text
    assert tok_dir.decode(tok_dir.encode(text, add_special=False)) == text
    assert tok_dir.encode(text, add_special=False) == ids[1:]


def test_decode_matches_the_reference_decoder(tok_dir, reference):
    ref, _, vocab = reference
    ids = tok_dir.encode("Once upon a time, there was a little girl named Lily. 日本")
    assert tok_dir.decode(ids, skip_special=True) == ref.decode(vocab, ids)


def test_token_lookup(tok_dir):
    assert tok_dir.token_to_id("<s>") == 1 and tok_dir.id_to_token(2) == "</s>"
    assert tok_dir.is_special(1) and not tok_dir.is_special(300)
    assert tok_dir.token_to_id("no such piece") is None and tok_dir.id_to_token(100000) is None


def test_from_dir_errors(tmp_path):
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.Tokenizer.from_dir(tmp_path)
    assert "tokenizer.json" in str(e.value)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.Tokenizer.from_dir(tmp_path)
    assert "tokenizer.json" in str(e.value)
