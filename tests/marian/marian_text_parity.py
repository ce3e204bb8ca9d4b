"""`halformer translate` (text in, text out) against transformers' MarianTokenizer +
MarianMTModel.generate + batch_decode(skip_special_tokens=True).

The directory is built here as a Marian conversion makes one: SentencePiece models
trained on a small synthetic corpus (source and target differ), vocab.json holding
</s>, <unk>, both models' pieces, a language code and <pad>; the tokenizer saved by
MarianTokenizer.save_pretrained beside a random MarianMTModel. The lines cover
accents, punctuation the clean-up rewrites (" ." " ,", "n't"), characters neither
SentencePiece model has seen (-> <unk>), a leading language code, a special token
written in the text, extra spaces and an empty line. Greedy and beam 4
(--length-penalty 1) must give identical text. Invalid UTF-8 must be an error
naming its line; a vocab.json id outside the vocabulary (config.json's vocab_size,
or past an int: 10^12 once wrapped to an id of another token) one naming the piece.

usage: marian_text_parity.py HALFORMER_CLI WORK_DIR
"""
import json
import os
import random
import shutil
import subprocess
import sys

import sentencepiece as spm
import torch
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

from comparison import differences, finish

WORDS = ("the cat dog house river tree small large green blue runs sleeps eats quickly slowly "
         "café naïve Zürich über straße don't isn't we're I'm it's they've 12 345 2026").split()
LINES = [
    "the cat runs quickly .",
    "Zürich's café isn't small , it's large !",
    "",
    ">>fr<< the green tree sleeps",
    "we're   eating 漢字 under the blue river ?",
    "a line with </s> inside",
    "don't",
    "naïve straße über 2026 .",
]


def corpus(seed, n=400):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + rng.choice([" .", " ?", " !", ""])
            for _ in range(n)]


def train_spm(prefix, seed, vocab_size):
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus(seed)), model_prefix=prefix, vocab_size=vocab_size,
                                   character_coverage=1.0, model_type="unigram", minloglevel=2)
    return prefix + ".model"


def build(work):
    source = train_spm(os.path.join(work, "src"), 1, 60)
    target = train_spm(os.path.join(work, "tgt"), 2, 70)
    pieces = ["</s>", "<unk>", ">>fr<<"]
    for path in (source, target):
        sp = spm.SentencePieceProcessor(model_file=path)
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if not sp.is_control(i) and not sp.is_unknown(i) and p not in pieces:
                pieces.append(p)
    pieces.append("<pad>")
    vocab_path = os.path.join(work, "vocab.json")
    with open(vocab_path, "w") as f:
        json.dump({p: i for i, p in enumerate(pieces)}, f, ensure_ascii=False)
    tokenizer = MarianTokenizer(source, target, vocab_path)
    pad = len(pieces) - 1
    config = MarianConfig(vocab_size=len(pieces), d_model=64, encoder_attention_heads=4, decoder_attention_heads=4,
                          encoder_layers=2, decoder_layers=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
                          activation_function="swish", scale_embedding=True, max_position_embeddings=128,
                          pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0,
                          bad_words_ids=[[pad]], init_std=0.08)
    torch.manual_seed(3)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_(0.0, 0.3)
        model.final_logits_bias[0, 0] += 1.5  # EOS: sentences end at different lengths
    out = os.path.join(work, "marian")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return MarianTokenizer.from_pretrained(out), model, out


def reference(tokenizer, model, beams, new_tokens):
    texts = [line for line in LINES if line]
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, num_beams=beams, do_sample=False, max_new_tokens=new_tokens,
                             length_penalty=1.0, early_stopping=True)
    decoded = iter(tokenizer.batch_decode(out, skip_special_tokens=True))
    return [next(decoded) if line else "" for line in LINES]


def translate(cli, model_dir, input_path, beams, new_tokens):
    """Greedy reads stdin and writes stdout; beam search --input and --output."""
    args = [cli, "translate", "--model", model_dir, "--beam", str(beams), "--length-penalty", "1", "--max-len",
            str(new_tokens), "--threads", "2"]
    output = input_path + ".out"
    with open(input_path, encoding="utf-8") as stdin:
        out = subprocess.run(args + (["--input", input_path, "--output", output] if beams > 1 else []),
                             stdin=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"halformer translate failed: {out.stderr}")
    if beams > 1:
        with open(output, encoding="utf-8") as f:
            return f.read().split("\n")[:-1]
    return out.stdout.split("\n")[:-1]


def main():
    cli, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    tokenizer, model, model_dir = build(work)
    input_path = os.path.join(work, "input.txt")
    with open(input_path, "w", encoding="utf-8") as f:
        f.write("\n".join(LINES) + "\n")
    failures = []
    for beams in (1, 4):
        want = reference(tokenizer, model, beams, 20)
        got = translate(cli, model_dir, input_path, beams, 20)
        same = sum(g == w for g, w in zip(got, want))
        print(f"beam {beams}: {same}/{len(LINES)} lines identical; e.g. {LINES[1]!r} -> {got[1]!r}")
        failures += differences(f"beam {beams} line", got, want)
    bad = os.path.join(work, "bad.txt")
    with open(bad, "wb") as f:
        f.write(b"the cat\n\xff\xfe broken\n")
    out = subprocess.run([cli, "translate", "--model", model_dir, "--input", bad], capture_output=True, text=True)
    print(f"invalid UTF-8: exit {out.returncode}, {out.stderr.strip()}")
    if out.returncode == 0 or "input line 2" not in out.stderr or "UTF-8" not in out.stderr:
        failures.append(f"invalid UTF-8 on line 2 was not an error naming the line: {out.stderr!r}")
    failures += bad_vocabularies(cli, model_dir, input_path, work)
    failures += target_prefixes(cli, tokenizer, model, model_dir, input_path, work)
    finish(failures)


def target_prefixes(cli, tokenizer, model, model_dir, input_path, work):
    """--target-prefix: line n's target text (tokenized as text_target, without
    </s>) starts line n's translation, as generate's decoder_input_ids; an empty
    line leaves its line alone; a file shorter than the input is an error."""
    prefixes = ["the cat" if i % 2 == 0 else "" for i in range(len(LINES))]
    path = os.path.join(work, "prefixes.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(prefixes) + "\n")
    args = [cli, "translate", "--model", model_dir, "--input", input_path, "--max-len", "20", "--threads", "2"]
    out = subprocess.run(args + ["--target-prefix", path], capture_output=True, text=True)
    if out.returncode != 0:
        return [f"translate --target-prefix failed: {out.stderr}"]
    got, want = out.stdout.split("\n")[:-1], []
    start = model.config.decoder_start_token_id
    for line, prefix in zip(LINES, prefixes):
        ids = tokenizer(text_target=prefix).input_ids[:-1] if prefix else []
        if not line:
            want.append("")
            continue
        with torch.no_grad():
            row = model.generate(**tokenizer([line], return_tensors="pt"), num_beams=1, do_sample=False,
                                 decoder_input_ids=torch.tensor([[start] + ids]), max_new_tokens=20 - len(ids))
        want.append(tokenizer.decode(row[0], skip_special_tokens=True))
    print(f"--target-prefix: e.g. {LINES[0]!r} -> {got[0]!r}")
    failures = differences("--target-prefix line", got, want)
    with open(path, "w", encoding="utf-8") as f:
        f.write("the\n")
    out = subprocess.run(args + ["--target-prefix", path], capture_output=True, text=True)
    if out.returncode == 0 or "none for input line 2" not in out.stderr:
        failures.append(f"a --target-prefix file of 1 line for {len(LINES)} was not an error: {out.stderr!r}")
    return failures


def bad_vocabularies(cli, model_dir, input_path, work):
    """vocab.json ids at the vocabulary's size and at 10^12: an error naming the piece, at load."""
    failures = []
    with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    piece = next(p for p in vocab if p not in ("</s>", "<unk>", "<pad>"))
    for bad_id in (len(vocab), 10**12):
        bad_dir = os.path.join(work, f"bad_vocab_{bad_id}")
        shutil.rmtree(bad_dir, ignore_errors=True)
        shutil.copytree(model_dir, bad_dir)
        with open(os.path.join(bad_dir, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump({**vocab, piece: bad_id}, f, ensure_ascii=False)
        out = subprocess.run([cli, "translate", "--model", bad_dir, "--input", input_path], capture_output=True,
                             text=True)
        print(f"vocab.json id {bad_id}: exit {out.returncode}, {out.stderr.strip()}")
        if out.returncode == 0 or piece not in out.stderr or "outside the vocabulary" not in out.stderr:
            failures.append(f"vocab.json id {bad_id} of {piece!r} was not an error naming it: {out.stderr!r}")
    return failures


if __name__ == "__main__":
    main()
