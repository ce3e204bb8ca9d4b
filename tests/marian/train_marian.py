"""Trains a tiny MarianMT model on a copy task, so that `halformer translate` is
checked against the text it should produce, not only against transformers.

A SentencePiece model is trained on a synthetic corpus (words with accents,
contractions and punctuation), used as both source.spm and target.spm, with
vocab.json as a Marian conversion writes it (</s>, <unk>, the pieces, <pad>).
MarianMTModel (d_model 64, 2+2 layers, swish, scaled embeddings, the pad banned,
forced EOS) learns to copy lines of 2-8 words, on fresh random lines each step,
for 400 steps (about 90 s on 2 cores; loss ~0.04). Writes OUT/ (save_pretrained
of the model and the tokenizer), OUT/sources.txt (held-out lines) and
OUT/expected.txt (their copies, as batch_decode cleans up spaces before
punctuation).

usage: train_marian.py OUT [--steps N] [--threads N]
"""
import argparse
import json
import os
import random
import time

import sentencepiece as spm
import torch
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

WORDS = ("the cat dog house river tree small large green blue runs sleeps eats quickly slowly café naïve "
         "Zürich über straße don't isn't we're it's 12 345").split()


def line(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))) + rng.choice([" .", " ?", " !", ""])


def tokenizer_files(out, rng):
    prefix = os.path.join(out, "spm")
    spm.SentencePieceTrainer.train(sentence_iterator=iter([line(rng) for _ in range(2000)]), model_prefix=prefix,
                                   vocab_size=60, character_coverage=1.0, model_type="unigram", minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    pieces = ["</s>", "<unk>"] + [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                                  if not sp.is_control(i) and not sp.is_unknown(i)] + ["<pad>"]
    with open(os.path.join(out, "vocab-source.json"), "w") as f:
        json.dump({p: i for i, p in enumerate(pieces)}, f, ensure_ascii=False)
    return prefix + ".model", os.path.join(out, "vocab-source.json"), len(pieces)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    rng = random.Random(0)
    os.makedirs(a.out, exist_ok=True)
    model_file, vocab_file, vocab = tokenizer_files(a.out, rng)
    tokenizer = MarianTokenizer(model_file, model_file, vocab_file)
    pad = vocab - 1
    config = MarianConfig(vocab_size=vocab, d_model=64, encoder_attention_heads=4, decoder_attention_heads=4,
                          encoder_layers=2, decoder_layers=2, encoder_ffn_dim=256, decoder_ffn_dim=256,
                          activation_function="swish", scale_embedding=True, max_position_embeddings=64,
                          pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0,
                          bad_words_ids=[[pad]], dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    model = MarianMTModel(config)
    opt = torch.optim.AdamW(model.parameters(), lr=4e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=4e-3, total_steps=a.steps, pct_start=0.1)
    start, loss_value = time.time(), float("nan")
    for step in range(a.steps):
        texts = [line(rng) for _ in range(32)]
        batch = tokenizer(texts, text_target=texts, return_tensors="pt", padding=True)
        batch["labels"][batch["labels"] == pad] = -100
        loss = model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        loss_value = loss.item()
        if step % 100 == 0:
            print(f"step {step}: loss {loss_value:.4f} ({time.time() - start:.0f} s)", flush=True)
        if loss_value < 0.01:
            break
    print(f"trained {step + 1} steps in {time.time() - start:.0f} s, loss {loss_value:.4f}")
    model.eval().save_pretrained(a.out)
    tokenizer.save_pretrained(a.out)
    held_out = random.Random(1)
    sources = [line(held_out) for _ in range(32)]
    # The copy as batch_decode writes text: spaces before punctuation cleaned up.
    expected = [tokenizer.clean_up_tokenization(s) for s in sources]
    for name, lines in (("sources.txt", sources), ("expected.txt", expected)):
        with open(os.path.join(a.out, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
