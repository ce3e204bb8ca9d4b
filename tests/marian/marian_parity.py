"""halformer on Hugging Face MarianMT directories against transformers' MarianMTModel.

Each case builds a MarianConfig with random weights (transformers' own init, with a
wider init_std so that logits are decisive, and a random final_logits_bias), saves
it with save_pretrained (model.safetensors, config.json, generation_config.json),
and runs the same token ids through both:
- teacher-forced logits (`halformer forward` against model(...).logits): the worst
  |difference| within 1e-4 of the largest |logit| (float32 through a few layers:
  1e-6-1e-5 seen; a wrong layout, scale or position is >= 1e-2);
- greedy ids identical to generate(num_beams=1, max_new_tokens=N);
- beam-4 top hypothesis identical to generate(num_beams=4, length_penalty=1.0,
  early_stopping=True), `halformer run --beam 4 --length-penalty 1`.
One case is saved as pytorch_model.bin and converted by tools/convert_marian_bin.py.
The cases cover: swish and gelu, scaled and unscaled embeddings, shared and separate
source/target vocabularies (then untied: transformers ties a separate-vocabulary
lm_head to the source table), a tied and an untied output layer, a pad id that
transformers bans (bad_words_ids, with a logit bias that makes it the argmax so the
ban decides), forced EOS at the last step, an EOS bias so that sentences end at
different lengths, and one case at Transformer-base width (d_model 512).

usage: marian_parity.py HALFORMER_CLI WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np
import torch
from transformers import MarianConfig, MarianMTModel

from comparison import differences, finish

CASES = {
    # name: MarianConfig arguments, biases added to final_logits_bias, new tokens
    "swish_shared_tied": (
        dict(d_model=64, encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=2, decoder_layers=2,
             encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=300, activation_function="swish",
             scale_embedding=True, max_position_embeddings=64, pad_token_id=299, decoder_start_token_id=299,
             eos_token_id=0, forced_eos_token_id=0, bad_words_ids=[[299]], init_std=0.08),
        {299: 6.0, 0: 1.0}, 24),
    "gelu_separate_vocab": (
        dict(d_model=48, encoder_attention_heads=3, decoder_attention_heads=3, encoder_layers=1, decoder_layers=3,
             encoder_ffn_dim=96, decoder_ffn_dim=96, vocab_size=250, decoder_vocab_size=180,
             share_encoder_decoder_embeddings=False, tie_word_embeddings=False, activation_function="gelu",
             scale_embedding=False,
             max_position_embeddings=48, pad_token_id=179, decoder_start_token_id=179, eos_token_id=1,
             forced_eos_token_id=1, bad_words_ids=[[179]], init_std=0.1),
        {1: 0.8}, 20),
    "relu_untied_no_forced_eos": (
        dict(d_model=32, encoder_attention_heads=2, decoder_attention_heads=2, encoder_layers=2, decoder_layers=1,
             encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=130, activation_function="relu",
             scale_embedding=True, tie_word_embeddings=False, max_position_embeddings=40, pad_token_id=5,
             decoder_start_token_id=5, eos_token_id=2, forced_eos_token_id=None, init_std=0.1),
        {2: 0.5}, 16),
    "base_width": (
        dict(d_model=512, encoder_attention_heads=8, decoder_attention_heads=8, encoder_layers=2, decoder_layers=2,
             encoder_ffn_dim=2048, decoder_ffn_dim=2048, vocab_size=1000, activation_function="swish",
             scale_embedding=True, max_position_embeddings=128, pad_token_id=999, decoder_start_token_id=999,
             eos_token_id=0, forced_eos_token_id=0, bad_words_ids=[[999]], init_std=0.04),
        {0: 1.0}, 24),
}

BIN_CHECKPOINTS = {"relu_untied_no_forced_eos"}
TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")


def build(name, work):
    args, biases, new_tokens = CASES[name]
    torch.manual_seed(sum(map(ord, name)))
    config = MarianConfig(**args)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        bias = model.final_logits_bias
        bias.normal_(0.0, 0.3)
        for token, b in biases.items():
            bias[0, token] += b
    out = os.path.join(work, name)
    if name in BIN_CHECKPOINTS:  # pytorch_model.bin, converted as a user would
        model.save_pretrained(out, safe_serialization=False)
        subprocess.run([sys.executable, os.path.join(TOOLS, "convert_marian_bin.py"), out], check=True)
    else:
        model.save_pretrained(out)
    return model, out, new_tokens


def sources(config, rng, n=6):
    """Random ids (no pad, no EOS inside), EOS appended as MarianTokenizer does; lengths 1 .. 17."""
    special = {config.pad_token_id, config.eos_token_id}
    pool = [i for i in range(config.vocab_size) if i not in special]
    rows = [list(rng.choice(pool, size=int(rng.integers(1, 17)))) + [config.eos_token_id] for _ in range(n)]
    rows[0] = [config.eos_token_id]  # an empty sentence: EOS alone
    return rows


def padded(rows, pad):
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return ids, mask


def generated(model, rows, beams, new_tokens):
    ids, mask = padded(rows, model.config.pad_token_id)
    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), num_beams=beams,
                             do_sample=False, max_new_tokens=new_tokens, length_penalty=1.0, early_stopping=True)
    hyps = []
    for row in out.tolist():
        row = row[1:]  # the decoder start token
        eos = model.config.eos_token_id
        hyps.append(row[:row.index(eos) + 1] if eos in row else row)
    return hyps


def halformer_run(cli, model_dir, rows, beams, new_tokens):
    text = "".join(" ".join(map(str, r)) + "\n" for r in rows)
    out = subprocess.run([cli, "run", "--model", model_dir, "--beam", str(beams), "--length-penalty", "1",
                          "--max-len", str(new_tokens), "--threads", "2"], input=text, capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"halformer run failed: {out.stderr}")
    return [[int(x) for x in line.split()] for line in out.stdout.splitlines()]


def check_logits(cli, model, model_dir, rows, targets, work):
    src, mask = padded(rows, model.config.pad_token_id)
    start = model.config.decoder_start_token_id
    tgt, _ = padded([[start] + t[:-1] if t else [start] for t in targets], model.config.pad_token_id)
    np.save(os.path.join(work, "src.npy"), src)
    np.save(os.path.join(work, "tgt.npy"), tgt)
    logits_path = os.path.join(work, "logits.npy")
    subprocess.run([cli, "forward", "--model", model_dir, "--src", os.path.join(work, "src.npy"), "--tgt",
                    os.path.join(work, "tgt.npy"), "--out-logits", logits_path, "--threads", "2"], check=True)
    got = np.load(logits_path)
    with torch.no_grad():
        want = model(input_ids=torch.tensor(src), attention_mask=torch.tensor(mask),
                     decoder_input_ids=torch.tensor(tgt)).logits.double().numpy()
    error = np.abs(got - want).max() / np.abs(want).max()
    return error


def main():
    cli, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []
    for name in CASES:
        model, model_dir, new_tokens = build(name, work)
        rows = sources(model.config, np.random.default_rng(len(name)))
        greedy_want = generated(model, rows, 1, new_tokens)
        greedy_got = halformer_run(cli, model_dir, rows, 1, new_tokens)
        beam_want = generated(model, rows, 4, new_tokens)
        beam_got = halformer_run(cli, model_dir, rows, 4, new_tokens)
        error = check_logits(cli, model, model_dir, rows, greedy_want, work)
        lengths = sorted({len(h) for h in greedy_want})
        same_greedy = sum(a == b for a, b in zip(greedy_got, greedy_want))
        same_beam = sum(a == b for a, b in zip(beam_got, beam_want))
        print(f"{name}: logits error {error:.2e} of the largest; greedy {same_greedy}/{len(rows)} identical, "
              f"beam 4 {same_beam}/{len(rows)} identical; output lengths {lengths}")
        if error > 1e-4:
            failures.append(f"{name}: teacher-forced logits differ by {error:.2e} of the largest logit (> 1e-4)")
        failures += differences(f"{name}: greedy sentence", greedy_got, greedy_want)
        failures += differences(f"{name}: beam 4 sentence", beam_got, beam_want)
    finish(failures)


if __name__ == "__main__":
    main()
