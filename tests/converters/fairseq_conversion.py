"""tools/convert_fairseq.py on fairseq-shaped checkpoints, against transformers'
ports of fairseq's transformer.

fairseq itself is not installed here (its releases need a source build against
torch), so the checkpoints are made in the test as fairseq writes them: a dict
with the options (cfg['model'], or an argparse Namespace `args`) and the
state_dict under fairseq's names (encoder.layers.N.self_attn.k_proj.weight, ...,
decoder.output_projection.weight, encoder.version). Their weights come from
transformers models with the same arithmetic, which are the references:
- post-norm (`transformer_wmt_en_de`): FSMTForConditionalGeneration
  (transformers' port of fairseq's transformer), separate vocabularies;
- pre-norm with shared embeddings (`transformer`, encoder/decoder_normalize_before):
  M2M100ForConditionalGeneration;
- `transformer_vaswani_wmt_en_de_big` read from its options as a Namespace, which
  the weights_only loader refuses: an error naming --trust-pickle, then converted
  with it.
Each converted directory: teacher-forced logits within 1e-4 of the largest
|logit| (`halformer forward`), greedy and beam-4 ids identical to generate()
with fairseq's rules (the pad never generated, EOS forced at the last step).
Unsupported options (learned positions) are errors naming them.

usage: fairseq_conversion.py HALFORMER_CLI WORK_DIR
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
from transformers import FSMTConfig, FSMTForConditionalGeneration, M2M100Config, M2M100ForConditionalGeneration

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "marian"))
sys.path.insert(0, os.path.join(HERE, "..", "multilingual"))
from comparison import differences, expect_error, finish  # noqa: E402
from m2m100_parity import logits_error  # noqa: E402

CONVERTER = os.path.join(HERE, "..", "..", "tools", "convert_fairseq.py")
NEW_TOKENS = 16


def options(arch, d, heads, ffn, layers, **extra):
    o = dict(arch=arch, encoder_embed_dim=d, decoder_embed_dim=d, encoder_attention_heads=heads,
             decoder_attention_heads=heads, encoder_ffn_embed_dim=ffn, decoder_ffn_embed_dim=ffn,
             encoder_layers=layers, decoder_layers=layers, activation_fn="relu", max_source_positions=128,
             max_target_positions=128)
    o.update(extra)
    return o


def fairseq_state(model):
    """transformers' state_dict under fairseq's names."""
    state = {}
    for name, t in model.state_dict().items():
        if ".embed_positions." in name:
            continue
        name = name.removeprefix("model.")
        if name == "shared.weight":  # M2M100's one table: fairseq's share_all_embeddings
            state["encoder.embed_tokens.weight"] = state["decoder.embed_tokens.weight"] = t
        elif name != "lm_head.weight" and name not in state:  # lm_head: tied to that table
            state[name] = t
    state["encoder.version"] = state["decoder.version"] = torch.tensor([3.0])
    return state


def post_norm_model():
    config = FSMTConfig(langs=["en", "de"], src_vocab_size=90, tgt_vocab_size=70, d_model=32,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=2, decoder_layers=2,
                        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, init_std=0.1)
    torch.manual_seed(11)
    return FSMTForConditionalGeneration(config).eval()


def pre_norm_model():
    config = M2M100Config(vocab_size=80, d_model=32, encoder_attention_heads=4, decoder_attention_heads=4,
                          encoder_layers=2, decoder_layers=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                          max_position_embeddings=128, scale_embedding=True, init_std=0.1)
    torch.manual_seed(12)
    return M2M100ForConditionalGeneration(config).eval()


def convert(checkpoint, out, trust=False):
    args = [sys.executable, CONVERTER, checkpoint, out] + (["--trust-pickle"] if trust else [])
    return subprocess.run(args, capture_output=True, text=True)


def sources(vocab, rng, n=6):
    rows = [[int(x) for x in rng.integers(4, vocab, size=int(rng.integers(1, 17)))] + [2] for _ in range(n)]
    rows[0] = [2]
    return rows


def generated(model, rows, beams):
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [1] * (width - len(r)) for r in rows])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=(ids != 1).long(), num_beams=beams, do_sample=False,
                             max_new_tokens=NEW_TOKENS, length_penalty=1.0, early_stopping=beams > 1,
                             bad_words_ids=[[1]], forced_eos_token_id=2)
    hyps = []
    for row in out.tolist():
        row = row[1:]
        hyps.append(row[:row.index(2) + 1] if 2 in row else row)
    return hyps


def halformer_ids(cli, model_dir, rows, beams):
    text = "".join(" ".join(map(str, r)) + "\n" for r in rows)
    out = subprocess.run([cli, "run", "--model", model_dir, "--beam", str(beams), "--length-penalty", "1",
                          "--max-len", str(NEW_TOKENS), "--threads", "2"], input=text, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"halformer run failed: {out.stderr}")
    return [[int(x) for x in line.split()] for line in out.stdout.splitlines()]


def check(cli, name, model, model_dir, work, vocab):
    rows = sources(vocab, np.random.default_rng(len(name)))
    failures = []
    for beams in (1, 4):
        want, got = generated(model, rows, beams), halformer_ids(cli, model_dir, rows, beams)
        print(f"{name} beam {beams}: {sum(a == b for a, b in zip(got, want))}/{len(rows)} identical")
        failures += differences(f"{name} beam {beams} sentence", got, want)
    targets = [[2] + h[:-1] if h[-1:] == [2] else [2] + h for h in generated(model, rows, 1)]
    error = logits_error(cli, model, model_dir, rows, targets, work)
    print(f"{name}: teacher-forced logits error {error:.2e} of the largest")
    if error > 1e-4:
        failures.append(f"{name}: logits differ by {error:.2e} of the largest (> 1e-4)")
    return failures


def main():
    cli, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(2)
    failures = []

    post = post_norm_model()
    path = os.path.join(work, "post_norm.pt")
    torch.save({"cfg": {"model": options("transformer_wmt_en_de", 32, 4, 64, 2)}, "model": fairseq_state(post)}, path)
    out = convert(path, os.path.join(work, "post_norm"))
    if out.returncode != 0:
        finish([f"post-norm conversion failed: {out.stderr}"])
    failures += check(cli, "transformer_wmt_en_de (post-norm, FSMT)", post, os.path.join(work, "post_norm"), work, 90)

    pre = pre_norm_model()
    path = os.path.join(work, "pre_norm.pt")
    torch.save({"cfg": {"model": options("transformer", 32, 4, 64, 2, encoder_normalize_before=True,
                                         decoder_normalize_before=True, share_all_embeddings=True)},
                "model": fairseq_state(pre)}, path)
    out = convert(path, os.path.join(work, "pre_norm"))
    if out.returncode != 0:
        finish([f"pre-norm conversion failed: {out.stderr}"])
    failures += check(cli, "transformer (pre-norm, M2M100)", pre, os.path.join(work, "pre_norm"), work, 80)

    path = os.path.join(work, "namespace.pt")
    torch.save({"args": argparse.Namespace(**options("transformer_vaswani_wmt_en_de_big", 32, 4, 64, 2)),
                "model": fairseq_state(post)}, path)
    out = convert(path, os.path.join(work, "namespace"))
    print(f"a Namespace checkpoint without --trust-pickle: exit {out.returncode}: {out.stderr.strip()[:160]}")
    failures += expect_error(out, "--trust-pickle", "a pickled Namespace without --trust-pickle")
    out = convert(path, os.path.join(work, "namespace"), trust=True)
    if out.returncode != 0:
        finish(failures + [f"--trust-pickle conversion failed: {out.stderr}"])
    failures += check(cli, "transformer_vaswani_wmt_en_de_big (Namespace)", post, os.path.join(work, "namespace"),
                      work, 90)

    path = os.path.join(work, "learned.pt")
    torch.save({"cfg": {"model": options("transformer", 32, 4, 64, 2, encoder_learned_pos=True)},
                "model": fairseq_state(post)}, path)
    failures += expect_error(convert(path, os.path.join(work, "learned")), "encoder_learned_pos", "learned positions")
    finish(failures)


if __name__ == "__main__":
    main()
