"""halformer on NLLB and M2M100 directories (model_type m2m_100) against
transformers 4.40.2's M2M100ForConditionalGeneration, NllbTokenizer and
M2M100Tokenizer.

Each family's directory is built here as transformers saves one: a SentencePiece
BPE model trained on a small synthetic corpus; NllbTokenizer over it (fairseq's
ids: <s> <pad> </s> <unk>, the pieces at their id + 1, then the 202 language
codes and <mask>) or M2M100Tokenizer over it and a vocab.json (the 100 __xx__
codes after it, listed as additional_special_tokens as the published
directories list them); an M2M100Config model (pre-norm layers with final norms,
ReLU, scaled embeddings, fairseq's positions from pad + 1, a tied output layer)
trained briefly (150 steps, about 20 s) to copy lines into the target language's slot, and
saved with save_pretrained. Checked, greedy and beam 4 (length penalty 1):
- `halformer translate --source-lang L --target-lang L` text identical to
  generate(forced_bos_token_id=the target code) + batch_decode(skip_special_tokens);
- `halformer run` ids identical where generation_config.json names
  forced_bos_token_id (generate's own default);
- teacher-forced logits (`halformer forward`) within 1e-4 of the largest |logit|
  (float32 through a few layers: ~1e-6 seen; a wrong position offset or
  frequency is >= 1e-2), also for a random model at d_model 512;
- the same text where tokenizer_config.json only lists the codes
  (additional_special_tokens, as the published directories' older files do);
- Python's Translator.translate(..., source_lang=, target_lang=) as the CLI, and
  translate_stream's increments joined;
- errors: no --target-lang, an unknown code, an added token id outside the
  vocabulary, each naming it.

usage: m2m100_parity.py HALFORMER_CLI WORK_DIR
"""
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import sentencepiece as spm
import torch
from transformers import GenerationConfig, M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer, NllbTokenizer
from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "marian"))
from comparison import differences, finish  # noqa: E402

WORDS = ("the cat dog house river tree small large green blue runs sleeps eats quickly slowly café naïve "
         "Zürich über straße don't it's 12 345").split()
LINES = ["the cat runs quickly .", "Zürich's café isn't small , it's large !", "", "we're eating 漢字 under the tree ?",
         "a line with </s> inside", "don't", "naïve straße über 345 ."]
FAMILIES = {"nllb": ("eng_Latn", "fra_Latn"), "m2m100": ("en", "fr")}


def corpus(rng, n):
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))) + rng.choice([" .", " ?", " !", ""])
            for _ in range(n)]


def tokenizer_for(family, work):
    prefix = os.path.join(work, "spm")
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus(random.Random(1), 600)), model_prefix=prefix,
                                   vocab_size=80, character_coverage=1.0, model_type="bpe", minloglevel=2)
    if family == "nllb":
        return NllbTokenizer(prefix + ".model", src_lang="eng_Latn", tgt_lang="fra_Latn")
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for i in range(sp.get_piece_size()):
        vocab.setdefault(sp.id_to_piece(i), len(vocab))
    with open(os.path.join(work, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    codes = [f"__{c}__" for c in FAIRSEQ_LANGUAGE_CODES["m2m100"]]
    return M2M100Tokenizer(os.path.join(work, "vocab.json"), prefix + ".model", src_lang="en", tgt_lang="fr",
                           additional_special_tokens=codes)


def model_for(tokenizer, d_model=64, layers=2, train_steps=150):
    config = M2M100Config(vocab_size=len(tokenizer), d_model=d_model, encoder_attention_heads=4,
                          decoder_attention_heads=4, encoder_layers=layers, decoder_layers=layers,
                          encoder_ffn_dim=2 * d_model, decoder_ffn_dim=2 * d_model, max_position_embeddings=128,
                          scale_embedding=True, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                          encoder_layerdrop=0.0, decoder_layerdrop=0.0, init_std=0.05)
    torch.manual_seed(d_model)
    model = M2M100ForConditionalGeneration(config)
    rng, opt = random.Random(2), torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(train_steps):  # a copy task: enough to make outputs sentence-like
        texts = corpus(rng, 16)
        batch = tokenizer(texts, text_target=texts, return_tensors="pt", padding=True)
        batch["labels"][batch["labels"] == config.pad_token_id] = -100
        loss = model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def cli_translate(cli, model_dir, input_path, beams, extra=()):
    args = [cli, "translate", "--model", model_dir, "--input", input_path, "--beam", str(beams), "--length-penalty",
            "1", "--max-len", "20", "--threads", "2", *extra]
    return subprocess.run(args, capture_output=True, text=True)


def reference_text(tokenizer, model, beams, target):
    texts = [line for line in LINES if line]
    with torch.no_grad():
        out = model.generate(**tokenizer(texts, return_tensors="pt", padding=True), num_beams=beams, do_sample=False,
                             max_new_tokens=20, length_penalty=1.0, early_stopping=beams > 1,
                             forced_bos_token_id=tokenizer.convert_tokens_to_ids(target))
    decoded = iter(tokenizer.batch_decode(out, skip_special_tokens=True))
    return [next(decoded) if line else "" for line in LINES], out


def check_text(cli, family, tokenizer, model, model_dir, work):
    source, target = FAMILIES[family]
    input_path = os.path.join(work, "input.txt")
    with open(input_path, "w", encoding="utf-8") as f:
        f.write("\n".join(LINES) + "\n")
    failures = []
    for beams in (1, 4):
        want, _ = reference_text(tokenizer, model, beams, target if family == "nllb" else f"__{target}__")
        out = cli_translate(cli, model_dir, input_path, beams, ["--source-lang", source, "--target-lang", target])
        if out.returncode != 0:
            return [f"{family}: translate failed: {out.stderr}"]
        got = out.stdout.split("\n")[:-1]
        print(f"{family} beam {beams}: {sum(g == w for g, w in zip(got, want))}/{len(LINES)} lines identical; "
              f"e.g. {LINES[0]!r} -> {got[0]!r}")
        failures += differences(f"{family} beam {beams} line", got, want)
        if beams == 1:
            failures += check_python(family, model_dir, want, source, target)
            failures += check_listed_codes(cli, family, model_dir, work, input_path, want)
    return failures


def check_listed_codes(cli, family, model_dir, work, input_path, want):
    """Older tokenizer_config.json files without added_tokens_decoder: the ids from
    tokenizer.json's added_tokens (the fast tokenizer's file) give the same text;
    with the codes only listed (additional_special_tokens), M2M100's are numbered
    after vocab.json's ids (the same text) and NLLB's in fairseq's order, the codes
    after the pieces and <mask> after them (as NLLB-200's vocabulary has them;
    transformers 4.40 puts a fresh tokenizer's <mask> first, as the model here was
    trained, so only the ids are checked)."""
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    added = [{"id": int(i), "content": t["content"], "special": True} for i, t in config.pop("added_tokens_decoder").items()]
    source, target = FAMILIES[family]
    failures = []
    for name, fast in (("tokenizer.json", {"added_tokens": added}), ("codes listed only", None)):
        copy = os.path.join(work, name.replace(" ", "_"))
        shutil.copytree(model_dir, copy, dirs_exist_ok=True)
        with open(os.path.join(copy, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f)
        if fast:
            with open(os.path.join(copy, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(fast, f)
        if family == "nllb" and not fast:
            failures += nllb_fairseq_ids(copy, config)
            continue
        out = cli_translate(cli, copy, input_path, 1, ["--source-lang", source, "--target-lang", target])
        if out.returncode != 0:
            return [f"{family} {name}: translate failed: {out.stderr}"]
        failures += differences(f"{family} {name}, line", out.stdout.split("\n")[:-1], want)
    return failures


def nllb_fairseq_ids(model_dir, config):
    import halformer
    pieces = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "sentencepiece.bpe.model")).get_piece_size()
    t = halformer.Tokenizer(model_dir)
    codes = config["additional_special_tokens"]
    got = [t.language_id(c) for c in codes] + [t.encode("<mask>", codes[0])[1]]
    want = list(range(pieces + 1, pieces + 2 + len(codes)))
    return [] if got == want else [f"nllb codes listed only: ids {got[:3]}..{got[-2:]} != fairseq's {want[:3]}..{want[-2:]}"]


def check_python(family, model_dir, want, source, target):
    try:
        import halformer
    except ImportError as e:
        return [f"{family}: the halformer package does not import ({e})"]
    translator = halformer.Translator(model_dir, threads=2)
    got = translator.translate(LINES, max_len=20, source_lang=source, target_lang=target)
    failures = differences(f"{family} Python translate line", got, want)
    streamed = ["".join(translator.translate_stream(line, max_len=20, source_lang=source, target_lang=target))
                if line else "" for line in LINES]
    failures += differences(f"{family} Python translate_stream line", streamed, want)
    try:
        translator.translate_batch([[1, 2]], source_lang=source)
        failures.append(f"{family}: translate_batch took source_lang")
    except halformer.Error as e:
        if "source_lang" not in str(e):
            failures.append(f"{family}: translate_batch's source_lang error does not name it: {e}")
    return failures


def check_ids_and_logits(cli, family, tokenizer, model, model_dir, work):
    """run (ids) with generation_config's forced_bos_token_id, and forward's logits."""
    target = FAMILIES[family][1] if family == "nllb" else f"__{FAMILIES[family][1]}__"
    lang = tokenizer.convert_tokens_to_ids(target)
    ids_dir = os.path.join(work, "forced")
    shutil.copytree(model_dir, ids_dir, dirs_exist_ok=True)
    GenerationConfig.from_model_config(model.config).save_pretrained(ids_dir)
    with open(os.path.join(ids_dir, "generation_config.json")) as f:
        generation = json.load(f)
    generation["forced_bos_token_id"] = lang
    with open(os.path.join(ids_dir, "generation_config.json"), "w") as f:
        json.dump(generation, f)
    rows = [tokenizer(line).input_ids for line in LINES if line]
    failures = []
    for beams in (1, 4):
        _, out = reference_text(tokenizer, model, beams, target)
        want = []
        for row in out.tolist():
            row = row[1:]  # the decoder start
            want.append(row[:row.index(2) + 1] if 2 in row else row)
        text = "".join(" ".join(map(str, r)) + "\n" for r in rows)
        run = subprocess.run([cli, "run", "--model", ids_dir, "--beam", str(beams), "--length-penalty", "1",
                              "--max-len", "20", "--threads", "2"], input=text, capture_output=True, text=True)
        if run.returncode != 0:
            return [f"{family}: run failed: {run.stderr}"]
        got = [[int(x) for x in line.split()] for line in run.stdout.splitlines()]
        failures += differences(f"{family} run beam {beams} sentence", got, want)
    error = logits_error(cli, model, model_dir, rows, [[2, lang] + r[1:] for r in rows], work)
    print(f"{family}: teacher-forced logits error {error:.2e} of the largest")
    if error > 1e-4:
        failures.append(f"{family}: teacher-forced logits differ by {error:.2e} of the largest logit (> 1e-4)")
    return failures


def padded(rows, pad=1):
    ids = np.full((len(rows), max(len(r) for r in rows)), pad, dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
    return ids


def logits_error(cli, model, model_dir, rows, targets, work):
    src, tgt = padded(rows), padded(targets)
    for name, a in (("src", src), ("tgt", tgt)):
        np.save(os.path.join(work, f"{name}.npy"), a)
    logits = os.path.join(work, "logits.npy")
    subprocess.run([cli, "forward", "--model", model_dir, "--src", os.path.join(work, "src.npy"), "--tgt",
                    os.path.join(work, "tgt.npy"), "--out-logits", logits, "--threads", "2"], check=True)
    got = np.load(logits)
    with torch.no_grad():
        # use_cache=False: FSMT (tests/converters) builds its causal mask only then
        want = model(input_ids=torch.tensor(src), attention_mask=torch.tensor(src != 1).long(),
                     decoder_input_ids=torch.tensor(tgt), use_cache=False).logits.double().numpy()
    # Rows past a target's length see pads as decoder inputs: compared only inside each.
    worst = max(np.abs(got[i, :len(t)] - want[i, :len(t)]).max() for i, t in enumerate(targets))
    return worst / np.abs(want).max()


def check_errors(cli, family, model_dir, work):
    input_path = os.path.join(work, "input.txt")
    source, target = FAMILIES[family]
    failures = []
    for extra, needle in ((["--source-lang", source], "target_lang"),
                          (["--source-lang", source, "--target-lang", "xx_Nope"], "xx_Nope"),
                          (["--source-lang", "yy_Nope", "--target-lang", target], "yy_Nope")):
        out = cli_translate(cli, model_dir, input_path, 1, extra)
        print(f"{family} {' '.join(extra)}: exit {out.returncode}, {out.stderr.strip()}")
        if out.returncode == 0 or needle not in out.stderr:
            failures.append(f"{family}: {extra} was not an error naming {needle!r}: {out.stderr!r}")
    bad_dir = os.path.join(work, "bad_added")
    shutil.copytree(model_dir, bad_dir, dirs_exist_ok=True)
    path = os.path.join(bad_dir, "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config["added_tokens_decoder"][str(10**12)] = {"content": "__bad__", "special": True}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    out = cli_translate(cli, bad_dir, input_path, 1, ["--source-lang", source, "--target-lang", target])
    if out.returncode == 0 or "__bad__" not in out.stderr or "outside the vocabulary" not in out.stderr:
        failures.append(f"{family}: an added token id of 10^12 was not an error naming it: {out.stderr!r}")
    return failures


def wide_model_logits(cli, work):
    """A random M2M100 at d_model 512 (2 + 2 layers): teacher-forced logits."""
    config = M2M100Config(vocab_size=500, d_model=512, encoder_attention_heads=8, decoder_attention_heads=8,
                          encoder_layers=2, decoder_layers=2, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                          max_position_embeddings=256, scale_embedding=True, init_std=0.04)
    torch.manual_seed(5)
    model = M2M100ForConditionalGeneration(config).eval()
    model_dir = os.path.join(work, "wide")
    model.save_pretrained(model_dir)
    rng = np.random.default_rng(5)
    rows = [[int(x) for x in rng.integers(4, 500, size=n)] + [2] for n in (1, 7, 60, 33)]
    error = logits_error(cli, model, model_dir, rows, [[2] + list(rng.integers(4, 500, size=n)) for n in (1, 9, 40, 17)],
                         work)
    print(f"d_model 512: teacher-forced logits error {error:.2e} of the largest")
    return [] if error <= 1e-4 else [f"d_model 512: teacher-forced logits differ by {error:.2e} (> 1e-4)"]


def main():
    cli, work = sys.argv[1], sys.argv[2]
    torch.set_num_threads(2)
    failures = []
    for family in FAMILIES:
        family_work = os.path.join(work, family)
        os.makedirs(family_work, exist_ok=True)
        tokenizer = tokenizer_for(family, family_work)
        model = model_for(tokenizer)
        model_dir = os.path.join(family_work, "model")
        model.save_pretrained(model_dir)
        tokenizer.save_pretrained(model_dir)
        failures += check_text(cli, family, tokenizer, model, model_dir, family_work)
        failures += check_ids_and_logits(cli, family, tokenizer, model, model_dir, family_work)
        failures += check_errors(cli, family, model_dir, family_work)
    failures += wide_model_logits(cli, work)
    finish(failures)


if __name__ == "__main__":
    main()
