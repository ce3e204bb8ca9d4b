#!/usr/bin/env python3
"""A MarianMT of OPUS-MT's shape, text in and text out: halformer against CTranslate2.

    .venv/bin/python bench/marian_bench.py [run [--out DIR] [--threads 2] [--smoke]]

The model has the shape of Helsinki-NLP/opus-mt-en-de (d_model 512, 6 + 6
layers, 8 heads, FFN 2048, swish, post-norm, scaled and tied embeddings, a
vocabulary of 58101) and random weights: it is built with transformers' own
classes, since this machine cannot download a real one. Its SentencePiece
tokenizer is trained on a synthetic corpus (up to 8000 pieces; the rest of the
vocabulary are entries no text produces, as a real vocabulary's rare ones). EOS
is banned through final_logits_bias, so every sentence takes exactly
--new-tokens decode steps in both systems (halformer, as transformers, makes
the last of them the forced EOS of the Marian configuration). CTranslate2 reads it through its own
converter (TransformersConverter, what ct2-transformers-converter runs).

Timed, in each system's own process after loading: one call on `batch` text
lines, tokenization and detokenization included (halformer:
halformer.Translator.translate; CTranslate2: SentencePiece encode,
translate_batch, decode, as its documentation's Marian example). The two run
in alternating order, twice each; medians with min-max over every sample;
peak RSS per process. Writes marian.json and marian.md into --out (default:
bench/results/<cpu kind>, as bench/run.py names it).

Subcommands (each in the Python that has what it imports): make and convert
(.venv-ref: transformers, torch, CTranslate2's converter), halformer (.venv:
the halformer package), ctranslate2 (.venv-ref: sentencepiece, ctranslate2)."""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("HALFORMER_BUILD_DIR", "build"))
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
REF_PY = os.path.join(ROOT, ".venv-ref", "bin", "python")  # transformers over Debian's torch
VOCAB, PIECES = 58101, 8000  # opus-mt-en-de's vocabulary; the pieces the tokenizer makes


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def corpus_line(rng, words):
    return " ".join(rng.choice(words) for _ in range(rng.randint(12, 28))) + rng.choice([" .", " ?", " !", "."])


def synthetic_words(rng, n=20000):
    """Pseudo-words of 1-4 syllables, some capitalised or with digits: enough
    distinct text for a tokenizer of PIECES pieces."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ei", "ou", "ä", "ü")]
    words = set()
    while len(words) < n:
        w = "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
        words.add(w.capitalize() if rng.random() < 0.1 else w)
    return sorted(words) + [str(i) for i in range(100)]


def make(out):
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    rng = random.Random(0)
    torch.manual_seed(0)
    os.makedirs(out, exist_ok=True)
    words = synthetic_words(rng)
    prefix = os.path.join(out, "spm")
    spm.SentencePieceTrainer.train(sentence_iterator=iter([corpus_line(rng, words) for _ in range(30000)]),
                                   model_prefix=prefix, vocab_size=PIECES, character_coverage=1.0,
                                   model_type="unigram", hard_vocab_limit=False, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i) and not sp.is_unknown(i)]
    # A Marian conversion's vocab.json: </s>, <unk>, the pieces, then <pad> last.
    fillers = [f"<unused{i}>" for i in range(VOCAB - 3 - len(pieces))]
    vocab = ["</s>", "<unk>"] + pieces + fillers + ["<pad>"]
    with open(os.path.join(out, "vocab-source.json"), "w") as f:
        json.dump({p: i for i, p in enumerate(vocab)}, f, ensure_ascii=False)
    tokenizer = MarianTokenizer(prefix + ".model", prefix + ".model", os.path.join(out, "vocab-source.json"))
    pad = VOCAB - 1
    config = MarianConfig(vocab_size=VOCAB, d_model=512, encoder_layers=6, decoder_layers=6,
                          encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                          decoder_ffn_dim=2048, activation_function="swish", scale_embedding=True,
                          max_position_embeddings=512, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
                          forced_eos_token_id=0, bad_words_ids=[[pad]], dropout=0.0, attention_dropout=0.0,
                          activation_dropout=0.0)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        model.final_logits_bias[0, 0] = -1e4  # EOS never wins: fixed-length outputs in both systems
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    held_out = random.Random(1)
    with open(os.path.join(out, "sources.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(corpus_line(held_out, words) for _ in range(64)) + "\n")
    print(f"wrote {out}: MarianMT of opus-mt-en-de's shape, vocabulary {VOCAB}, {len(pieces)} pieces")


def convert(model, out):
    import ctranslate2

    class Converter(ctranslate2.converters.TransformersConverter):
        # CTranslate2 4.8 passes from_pretrained(dtype=...), the name transformers
        # took after 4.40 (whose MarianMT parity the tests pin); 4.40 calls it torch_dtype.
        def load_model(self, model_class, model_name_or_path, **kwargs):
            kwargs["torch_dtype"] = kwargs.pop("dtype", None)
            return super().load_model(model_class, model_name_or_path, **kwargs)

    Converter(model).convert(out, force=True)
    print(f"wrote {out} (CTranslate2 {ctranslate2.__version__}'s TransformersConverter)")


def read_lines(path, n):
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    return (lines * (n // len(lines) + 1))[:n]


def timed(a, translate, load_s, system):
    lines = read_lines(a.sources, a.batch)
    translate(lines[:1], 2)  # warm-up
    secs = []
    for s in range(a.samples):
        t0 = time.perf_counter()
        translate(lines, a.new_tokens)
        secs.append(time.perf_counter() - t0)
    tokens = a.batch * a.new_tokens * a.beam  # every hypothesis runs new_tokens steps
    print(json.dumps({"system": system, "batch": a.batch, "beam": a.beam, "compute_type": a.compute_type,
                      "median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs),
                      "samples": a.samples, "steps": a.new_tokens, "hypothesis_tokens": tokens,
                      "peak_rss_mb": peak_rss_mb(), "load_s": load_s}))


def time_halformer(a):
    import halformer

    t0 = time.perf_counter()
    tr = halformer.Translator(a.model, compute_type=a.compute_type, threads=a.threads)
    load_s = time.perf_counter() - t0
    timed(a, lambda lines, n: tr.translate(lines, beam=a.beam, max_len=n), load_s, "halformer")


def time_ctranslate2(a):
    import ctranslate2
    import sentencepiece as spm

    t0 = time.perf_counter()
    tr = ctranslate2.Translator(a.model, device="cpu", compute_type=a.compute_type, inter_threads=1,
                                intra_threads=a.threads)
    sp = spm.SentencePieceProcessor(model_file=a.spm)
    load_s = time.perf_counter() - t0

    def translate(lines, n):
        pieces = [p + ["</s>"] for p in sp.encode(lines, out_type=str)]
        r = tr.translate_batch(pieces, beam_size=a.beam, max_decoding_length=n, max_batch_size=0)
        return [sp.decode(x.hypotheses[0]) for x in r]

    timed(a, translate, load_s, "ctranslate2")


# ---- the orchestrating run ---------------------------------------------------------

# bench/run.py's: the results directory's name, the machine's state, running a
# child for its JSON line, pooling runs (median of medians, overall min and max).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import combine, cpu_kind, machine_state, run_json  # noqa: E402

COMPUTE = {"float32": "float32", "int8": "int8_float32"}  # halformer's compute type -> CTranslate2's


def prepared():
    """The model (made once per build directory) and its CTranslate2 conversion."""
    model, ct2 = os.path.join(BUILD, "bench-marian"), os.path.join(BUILD, "bench-marian-ct2")
    me = os.path.abspath(__file__)
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        print("making the OPUS-MT-shaped MarianMT (transformers)", file=sys.stderr, flush=True)
        subprocess.run([REF_PY, me, "make", model], check=True)
    if not os.path.exists(os.path.join(ct2, "model.bin")):
        subprocess.run([REF_PY, me, "convert", model, ct2], check=True)
    return model, ct2


def case(a, model, ct2, compute, beam, batch):
    me, common = os.path.abspath(__file__), ["--batch", str(batch), "--beam", str(beam), "--threads", str(a.threads),
                                              "--samples", str(a.samples), "--new-tokens", str(a.new_tokens)]
    sources = os.path.join(model, "sources.txt")
    cmds = {"halformer": [VENV_PY, me, "halformer", model, sources, "--compute-type", compute] + common,
            "ctranslate2": [REF_PY, me, "ctranslate2", ct2, sources, "--spm", os.path.join(model, "source.spm"),
                            "--compute-type", COMPUTE[compute]] + common}
    runs = {name: [] for name in cmds}
    for r in range(a.rounds):  # alternating order: A B, then B A
        for name in (list(cmds) if r % 2 == 0 else list(cmds)[::-1]):
            print(f"{compute} beam {beam} batch {batch}: {name}", file=sys.stderr, flush=True)
            runs[name].append(run_json(cmds[name]))
    row = {"compute": compute, "beam": beam, "batch": batch, "steps": a.new_tokens}
    for name, rs in runs.items():
        row[name] = {**combine(rs), "peak_rss_mb": max(x["peak_rss_mb"] for x in rs),
                     "load_s": statistics.median(x["load_s"] for x in rs)}
    row["ratio"] = row["ctranslate2"]["median_s"] / row["halformer"]["median_s"]
    return row


def report(a, rows, cpu_text, state):
    lines = [f"# OPUS-MT-shaped MarianMT, text to text: halformer and CTranslate2 ({cpu_text})", "",
             f"Measured at {state['git']} on {state['date']}, CTranslate2 {state['ctranslate2']}, load average "
             f"{state['loadavg_before'][0]:.2f} before and {state['loadavg_after'][0]:.2f} after; command "
             f"(from the repository): `.venv/bin/python bench/marian_bench.py run --threads {a.threads}"
             f"{' --smoke' if a.smoke else ''}`.", "",
             "Made by `bench/marian_bench.py` (its docstring says how): random weights of opus-mt-en-de's shape, "
             f"EOS banned, {a.new_tokens} decode steps per sentence, {a.threads} threads, one call on `batch` lines "
             "with tokenization; medians (min-max) over "
             f"{a.rounds} alternating runs x {a.samples} samples. Ratio > 1: halformer faster.", "",
             "| compute | case | halformer s | CTranslate2 s | ratio | peak RSS MB (halformer / CT2) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        h, c = r["halformer"], r["ctranslate2"]
        kind = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
        lines.append(f"| {r['compute']} (CT2 {COMPUTE[r['compute']]}) | {kind}, batch {r['batch']} | "
                     f"{h['median_s']:.3f} ({h['min_s']:.3f}-{h['max_s']:.3f}) | "
                     f"{c['median_s']:.3f} ({c['min_s']:.3f}-{c['max_s']:.3f}) | {r['ratio']:.2f}x | "
                     f"{h['peak_rss_mb']:.0f} / {c['peak_rss_mb']:.0f} |")
    return "\n".join(lines) + "\n"


def run(a):
    kind, cpu_text = cpu_kind()
    state = machine_state(a.threads)
    out = a.out or os.path.join(ROOT, "bench", "results", kind)
    os.makedirs(out, exist_ok=True)
    model, ct2 = prepared()
    cases = [(c, 1, 1) for c in COMPUTE] if a.smoke else [
        (c, beam, batch) for c in COMPUTE for beam, batch in ((1, 1), (1, 8), (1, 32), (4, 8))]
    rows = [case(a, model, ct2, *c) for c in cases]
    state["loadavg_after"] = os.getloadavg()
    with open(os.path.join(out, "marian.json"), "w") as f:
        json.dump({"cpu": cpu_text, "machine": state, "steps": a.new_tokens, "rows": rows}, f, indent=1)
    text = report(a, rows, cpu_text, state)
    with open(os.path.join(out, "marian.md"), "w") as f:
        f.write(text)
    print(text)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="what")
    r = sub.add_parser("run")
    r.add_argument("--out")
    r.add_argument("--threads", type=int, default=os.cpu_count())
    r.add_argument("--smoke", action="store_true", help="greedy batch 1 of each compute type, 4 steps, once")
    sub.add_parser("make").add_argument("model")
    c = sub.add_parser("convert")
    c.add_argument("model")
    c.add_argument("out")
    for name in ("halformer", "ctranslate2"):
        t = sub.add_parser(name)
        t.add_argument("model")
        t.add_argument("sources")
        t.add_argument("--spm")
        t.add_argument("--compute-type", default="float32")
        for opt, default in (("--batch", 1), ("--beam", 1), ("--threads", 2), ("--samples", 3),
                             ("--new-tokens", 64)):
            t.add_argument(opt, type=int, default=default)
    a = p.parse_args(sys.argv[1:] or ["run"])
    if a.what == "run":
        a.samples, a.rounds, a.new_tokens = (1, 1, 4) if a.smoke else (3, 2, 64)
        run(a)
    elif a.what == "make":
        make(a.model)
    elif a.what == "convert":
        convert(a.model, a.out)
    else:
        (time_halformer if a.what == "halformer" else time_ctranslate2)(a)


if __name__ == "__main__":
    main()
