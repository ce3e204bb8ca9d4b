"""The Python package (`import halformer`) against transformers' MarianTokenizer and
MarianMTModel, on the MarianMT directory tests/marian/marian_text_parity.py builds.

Run by ctest with the reference venv's Python (transformers over Debian's torch)
and build/python on its path; the module is the one .venv's Python imports.
"""
import os
import random
import sys
import threading
import time

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "marian"))
import marian_text_parity as fixture  # noqa: E402

import halformer  # noqa: E402


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    tokenizer, model, model_dir = fixture.build(str(tmp_path_factory.mktemp("marian")))
    return tokenizer, model, model_dir


@pytest.fixture(scope="module")
def translator(marian):
    return halformer.Translator(marian[2], threads=2)


def test_translate_matches_generate_and_batch_decode(marian, translator):
    tokenizer, model, _ = marian
    for beam in (1, 4):
        want = fixture.reference(tokenizer, model, beam, 20)
        assert translator.translate(fixture.LINES, beam=beam, max_len=20, length_penalty=1.0) == want


def test_nbest_gives_text_and_score_best_first(translator):
    best = translator.translate(fixture.LINES, beam=4, max_len=20)
    nbest = translator.translate(fixture.LINES, beam=4, max_len=20, nbest=3)
    for line, one, hyps in zip(fixture.LINES, best, nbest):
        if not line:
            assert hyps == []
            continue
        assert len(hyps) == 3 and hyps[0][0] == one
        assert all(isinstance(text, str) and isinstance(score, float) for text, score in hyps)
        assert [s for _, s in hyps] == sorted((s for _, s in hyps), reverse=True)


def test_translate_batch_on_pieces_and_on_ids(marian, translator):
    tokenizer, model, _ = marian
    texts = [line for line in fixture.LINES if line]
    pieces = [tokenizer.tokenize(t) + ["</s>"] for t in texts]
    ids = [tokenizer(t).input_ids for t in texts]
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, num_beams=4, max_new_tokens=20, length_penalty=1.0, early_stopping=True)
    want_ids = [[i for i in row[1:] if i != model.config.pad_token_id] for row in out.tolist()]
    by_ids = translator.translate_batch(ids, beam_size=4, max_decoding_length=20)
    by_pieces = translator.translate_batch(pieces, beam_size=4, max_decoding_length=20)
    assert [r.hypotheses[0] for r in by_ids] == want_ids
    assert [r.hypotheses[0] for r in by_pieces] == [tokenizer.convert_ids_to_tokens(w) for w in want_ids]
    assert [r.scores for r in by_ids] == [r.scores for r in by_pieces]


def test_tokenizer_matches_marian_tokenizer(marian):
    tokenizer, _, model_dir = marian
    ours = halformer.Tokenizer(model_dir)
    rng = random.Random(5)
    texts = fixture.LINES[:2] + fixture.LINES[3:] + fixture.corpus(9, 50) + [" leading and trailing  ", "<unk> <pad>"]
    for text in texts:
        assert ours.encode(text) == tokenizer(text).input_ids, text
    vocab = len(tokenizer.get_vocab())
    for _ in range(200):  # any ids, special ones and out-of-vocabulary ones among them
        ids = [rng.randrange(vocab + 3) for _ in range(rng.randrange(0, 12))]
        assert ours.decode(ids) == tokenizer.decode(ids, skip_special_tokens=True), ids


def resident_floats(name, p, config):
    """A parameter's float32 values as halformer holds them: GEMM weights and the
    embedding table in panels (halformer_kernels.h), each output dim's first padded
    to a multiple of 64 (a q/k/v projection's outputs per head), the rest as they are."""
    d, heads = config.d_model, config.encoder_attention_heads
    padded = lambda n: -(-n // 64) * 64
    if name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight")):
        return d * padded(d // heads) * heads
    if p.dim() == 2:  # [out][in]: the out projection, fc1, fc2, the shared table
        return p.shape[1] * padded(p.shape[0])
    return p.numel()


def test_tied_tables_are_held_once(marian, translator):
    model = marian[1]  # shared source/target table tied to the output layer: one tensor
    floats = sum(resident_floats(name, p, model.config) for name, p in model.named_parameters()
                 if "embed_positions" not in name)
    assert translator.weight_bytes == 4 * (floats + model.final_logits_bias.numel())


def test_concurrent_calls_give_the_sequential_results(translator):
    jobs = [(fixture.LINES, 1), (fixture.LINES[::-1], 4), (fixture.LINES[1:], 2), (fixture.LINES[:5], 4)]
    sequential = [translator.translate(texts, beam=beam, max_len=20) for texts, beam in jobs]
    results, errors = [None] * len(jobs), []

    def work(i):
        try:
            for _ in range(3):
                results[i] = translator.translate(jobs[i][0], beam=jobs[i][1], max_len=20)
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == sequential


def test_the_gil_is_released_while_decoding(translator):
    texts = [line for line in fixture.LINES if line] * 48
    span = {}

    def decode():  # about 0.6 s on 2 cores, nearly all of it in C++
        span["start"] = time.perf_counter()
        for _ in range(3):
            translator.translate(texts, beam=4, max_len=40)
        span["end"] = time.perf_counter()

    t = threading.Thread(target=decode)
    ticks = []
    t.start()
    while t.is_alive():  # pure Python: runs only while decode() does not hold the GIL
        ticks.append(time.perf_counter())
    t.join()
    inside = [x for x in ticks if span["start"] + 0.02 < x < span["end"] - 0.02]
    assert span["end"] - span["start"] > 0.1, "the decode is too short to tell"
    assert len(inside) > 1000, f"only {len(inside)} Python steps ran during {span['end'] - span['start']:.2f} s"


def test_errors_are_halformer_errors_with_their_message(marian, translator):
    with pytest.raises(halformer.Error, match="config.json"):
        halformer.Translator("/nonexistent/model")
    with pytest.raises(halformer.Error, match="compute type 'float64'"):
        halformer.Translator(marian[2], compute_type="float64")
    with pytest.raises(halformer.Error, match="kv cache type 'half'"):
        halformer.Translator(marian[2], kv_cache="half")
    with pytest.raises(halformer.Error, match="max_len"):
        translator.translate(["the cat"], max_len=100000)
    with pytest.raises(halformer.Error, match="nbest"):
        translator.translate(["the cat"], beam=2, nbest=3)
    with pytest.raises(halformer.Error, match="max_position_embeddings"):  # this model's positions end at 128
        translator.translate(["the cat " * 100])
    assert issubclass(halformer.Error, RuntimeError)


def test_kv_cache_chooses_the_decoders_keys_and_values(marian, translator):
    # auto: float16 with int8 GEMMs on the CPU (runtime/src/executor.hpp, default_kv), float32 otherwise
    assert translator.kv_cache == "float32"
    int8 = halformer.Translator(marian[2], compute_type="int8", threads=2)
    assert int8.kv_cache == "float16"
    assert halformer.Translator(marian[2], compute_type="int8", threads=2, kv_cache="float32").kv_cache == "float32"
    half = halformer.Translator(marian[2], threads=2, kv_cache="float16")
    assert half.kv_cache == "float16"
    text = ["the cat sat on the mat", "a dog"]
    assert len(half.translate(text)) == len(text)


def generate_ids(tokenizer, model, texts, prefix=(), **kw):
    """Greedy transformers ids of 20 tokens at most, without the decoder start and
    padding; `prefix` (one id list for every text) forced as decoder_input_ids
    after the start (halformer's length counts it, generate's new tokens do not)."""
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    if prefix:
        start = model.config.decoder_start_token_id
        kw["decoder_input_ids"] = torch.tensor([[start] + list(prefix)] * len(texts))
    with torch.no_grad():
        out = model.generate(**batch, num_beams=1, do_sample=False, max_new_tokens=20 - len(prefix), **kw)
    pad = model.config.pad_token_id
    return [[i for i in row[1:] if i != pad] for row in out.tolist()]


def test_greedy_options_match_generate(marian, translator):
    """repetition_penalty, no_repeat_ngram_size and min_decoding_length as
    generate's logits processors (greedy: on the logits, as CTranslate2's), and a
    target prefix as generate's decoder_input_ids."""
    tokenizer, model, _ = marian
    texts = [line for line in fixture.LINES if line]
    ids = [tokenizer(t).input_ids for t in texts]
    for ours, theirs in [
        (dict(repetition_penalty=1.8), dict(repetition_penalty=1.8)),
        (dict(no_repeat_ngram_size=2), dict(no_repeat_ngram_size=2)),
        (dict(min_decoding_length=12), dict(min_new_tokens=12)),
    ]:
        got = translator.translate_batch(ids, max_decoding_length=20, **ours)
        assert [r.hypotheses[0] for r in got] == generate_ids(tokenizer, model, texts, **theirs), ours
    prefix = ids[0][:3]
    got = translator.translate_batch(ids, max_decoding_length=20, target_prefix=[prefix] * len(ids))
    assert [r.hypotheses[0] for r in got] == generate_ids(tokenizer, model, texts, prefix=prefix)
    pieces = [tokenizer.convert_ids_to_tokens(i) for i in ids]
    by_pieces = translator.translate_batch(pieces, max_decoding_length=20,
                                           target_prefix=[tokenizer.convert_ids_to_tokens(prefix)] * len(ids))
    assert [r.hypotheses[0][:3] for r in by_pieces] == [tokenizer.convert_ids_to_tokens(prefix)] * len(ids)


def test_target_prefix_as_text(marian, translator):
    """translate's target_prefix is target text, tokenized as MarianTokenizer's
    text_target (target SentencePiece) without its </s>; the translation starts
    with it, as generate's decoder_input_ids; None and empty texts leave lines alone."""
    tokenizer, model, model_dir = marian
    ours = halformer.Tokenizer(model_dir)
    for text in fixture.LINES + fixture.corpus(13, 30) + ["<unk> a", ">>fr<< the cat"]:
        assert ours.encode_target_prefix(text) == tokenizer(text_target=text).input_ids[:-1], text
    texts = [line for line in fixture.LINES if line]
    prefix_text = "the cat"
    prefix = tokenizer(text_target=prefix_text).input_ids[:-1]
    assert tokenizer(prefix_text).input_ids[:-1] != prefix  # source and target pieces differ here
    got = translator.translate(texts, max_len=20, target_prefix=[prefix_text] * len(texts))
    want = generate_ids(tokenizer, model, texts, prefix=prefix)
    assert got == [tokenizer.decode(w, skip_special_tokens=True) for w in want]
    assert all(g.startswith(prefix_text) for g in got)
    prefixes = [None if i % 2 else prefix_text for i in range(len(fixture.LINES))]
    mixed = translator.translate(fixture.LINES, max_len=20, target_prefix=prefixes)
    plain = translator.translate(fixture.LINES, max_len=20)
    with_prefix = translator.translate(fixture.LINES, max_len=20, target_prefix=[prefix_text] * len(fixture.LINES))
    assert mixed == [p if i % 2 else w for i, (p, w) in enumerate(zip(plain, with_prefix))]
    assert mixed[fixture.LINES.index("")] == ""
    for text in texts[:3]:
        joined = "".join(translator.translate_stream(text, max_len=20, target_prefix=prefix_text))
        assert joined == translator.translate([text], max_len=20, target_prefix=[prefix_text])[0]
    with pytest.raises(halformer.Error, match="target_prefix has 1 entries for 2 texts"):
        translator.translate(["a b", "c"], target_prefix=["the"])


def test_sampling_repeats_with_its_seed_and_streams_join_to_translate(translator):
    texts = [line for line in fixture.LINES if line]
    options = dict(sampling_topk=0, sampling_temperature=1.5, seed=11, max_len=20)
    first = translator.translate(texts, **options)
    assert translator.translate(texts, **options) == first
    assert translator.translate(texts, **dict(options, seed=12)) != first
    for text in texts[:4]:
        for stream_options in (dict(max_len=20), options):
            joined = "".join(translator.translate_stream(text, **stream_options))
            assert joined == translator.translate([text], **stream_options)[0]


def test_bad_decoding_options_raise_errors_naming_them(translator):
    with pytest.raises(halformer.Error, match="sampling_topp must be in"):
        translator.translate(["a b"], sampling_topk=0, sampling_topp=0.0)
    with pytest.raises(halformer.Error, match="unknown decoding option 'top_k'"):
        translator.translate(["a b"], top_k=3)
    with pytest.raises(halformer.Error, match="takes beam 1"):
        translator.translate_batch([[5, 6]], beam_size=4, sampling_topk=3)
    with pytest.raises(halformer.Error, match="target_prefix has 2 entries for 1 sources"):
        translator.translate_batch([[5, 6]], target_prefix=[[7], [8]])
    with pytest.raises(halformer.Error, match="sampling_temperature must be > 0"):
        list(translator.translate_stream("a b", sampling_topk=0, sampling_temperature=0.0))
