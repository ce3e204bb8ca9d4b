/* The runtime's C API from C: load a fixture model, translate with greedy and
 * beam search (well-formed outputs, batch invariance, beam no worse than greedy;
 * exact tokens are checked by parity_test against the float64 reference), run
 * forward, see errors reported with messages, translate from several threads
 * at once on one model (the same results as one after another), and decode
 * with every option (halformer_translate_options). */
#include "../library/expect.h"
#include "halformer/halformer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One thread's call: beam 3 over two sentences, into its own outputs. */
enum { THREAD_MAX_LEN = 10 };
struct thread_call {
  halformer_model* model;
  const int32_t* const* src;
  const int32_t* lens;
  int32_t out[2 * THREAD_MAX_LEN], out_lens[2];
  float scores[2];
  int rc;
};
static void* translate_in_thread(void* arg) {
  struct thread_call* c = (struct thread_call*)arg;
  for (int repeat = 0; repeat < 3 && c->rc == 0; ++repeat)
    c->rc = halformer_translate(c->model, c->src, c->lens, 2, 3, THREAD_MAX_LEN, 1.0f, c->out, c->out_lens, c->scores);
  return NULL;
}

static void check_concurrent_calls(halformer_model* m, const int32_t* const* src, const int32_t* lens) {
  struct thread_call alone = {m, src, lens, {0}, {0}, {0}, 0};
  translate_in_thread(&alone);
  EXPECT(alone.rc == 0, "sequential: %s", halformer_last_error_message());
  enum { THREADS = 4 };
  struct thread_call calls[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    calls[t] = alone;
    memset(calls[t].out, 0, sizeof calls[t].out);
    EXPECT(pthread_create(&threads[t], NULL, translate_in_thread, &calls[t]) == 0, "pthread_create");
  }
  for (int t = 0; t < THREADS; ++t) {
    pthread_join(threads[t], NULL);
    EXPECT(calls[t].rc == 0, "thread %d failed", t);
    EXPECT(memcmp(calls[t].out_lens, alone.out_lens, sizeof alone.out_lens) == 0 &&
               memcmp(calls[t].out, alone.out, sizeof alone.out) == 0 &&
               memcmp(calls[t].scores, alone.scores, sizeof alone.scores) == 0,
           "thread %d's results differ from the sequential call's", t);
  }
}

/* The inputs every check shares. */
enum { MAX_LEN = 8 };
static int32_t src_a[] = {5, 6, 7, 8}, src_b[] = {9};
static const int32_t* src[] = {src_a, src_b};
static const int32_t lens[] = {4, 1};
static int64_t fsrc[] = {5, 6, 7}, ftgt[] = {1, 4};

/* The per-token callback's record of sentence 0. */
struct streamed {
  int32_t tokens[MAX_LEN];
  int count, others;
};
static void on_token(void* user, int sentence, int32_t token) {
  struct streamed* s = user;
  if (sentence != 0)
    ++s->others;
  else if (s->count < MAX_LEN)
    s->tokens[s->count++] = token;
}

/* halformer_translate_options: a prefix starts the hypothesis, a seeded sample
 * repeats, the callback sees the hypothesis, a bad option or size is an error. */
static void check_decode_options(halformer_model* m) {
  static const int32_t prefix_a[] = {7, 11}, *prefixes[] = {prefix_a, NULL};
  static const int32_t prefix_lens[] = {2, 0};
  halformer_decode_options o;
  halformer_decode_options_init(&o);
  o.max_len = MAX_LEN, o.target_prefix = prefixes, o.target_prefix_lengths = prefix_lens;
  o.sampling_topk = 0, o.has_seed = 1, o.seed = 9;
  struct streamed seen = {{0}, 0, 0};
  o.on_token = on_token, o.user = &seen;
  int32_t out[2 * MAX_LEN], again[2 * MAX_LEN], out_lens[2], again_lens[2];
  EXPECT(halformer_translate_options(m, src, lens, 2, &o, out, out_lens, NULL) == 0, "options: %s",
         halformer_last_error_message());
  EXPECT(out_lens[0] >= 2 && out[0] == 7 && out[1] == 11, "the prefix does not start the hypothesis");
  EXPECT(seen.count == out_lens[0] && memcmp(seen.tokens, out, sizeof(int32_t) * seen.count) == 0,
         "the callback saw %d tokens, not the hypothesis' %d", seen.count, out_lens[0]);
  EXPECT(seen.others == out_lens[1], "sentence 1's tokens: %d calls for %d", seen.others, out_lens[1]);
  o.on_token = NULL;
  EXPECT(halformer_translate_options(m, src, lens, 2, &o, again, again_lens, NULL) == 0, "again");
  EXPECT(memcmp(out_lens, again_lens, sizeof out_lens) == 0 && memcmp(out, again, sizeof(int32_t) * out_lens[0]) == 0,
         "seed 9 gave another sample");
  /* A forced first token comes before each prefix: 5 7 11 ... and 5 ... */
  o.forced_bos_id = 5;
  EXPECT(halformer_translate_options(m, src, lens, 2, &o, out, out_lens, NULL) == 0, "forced_bos_id: %s",
         halformer_last_error_message());
  EXPECT(out_lens[0] >= 3 && out[0] == 5 && out[1] == 7 && out[2] == 11 && out_lens[1] >= 1 && out[MAX_LEN] == 5,
         "forced_bos_id 5 is not each hypothesis' first token");
  o.forced_bos_id = 1 << 30;
  EXPECT(halformer_translate_options(m, src, lens, 2, &o, out, out_lens, NULL) != 0, "forced_bos_id 2^30 accepted");
  o.forced_bos_id = -1;
  o.sampling_topp = 2.0f;
  EXPECT(halformer_translate_options(m, src, lens, 2, &o, out, out_lens, NULL) != 0, "topp 2 accepted");
  EXPECT(strstr(halformer_last_error_message(), "sampling_topp must be in (0, 1]") != NULL, "message: %s",
         halformer_last_error_message());
  o.size = 8;
  EXPECT(halformer_translate_options(m, src, lens, 2, &o, out, out_lens, NULL) != 0, "a wrong size accepted");
}

/* Greedy and beam search give well-formed outputs, batch-invariant, beam at
 * least as likely as greedy; concurrent calls give the sequential results. */
static void check_translation(halformer_model* m, int tgt_vocab, int eos) {
  int32_t out[2 * MAX_LEN], out_lens[2];
  float scores[2];
  EXPECT(halformer_translate(m, src, lens, 2, 1, MAX_LEN, 1.0f, out, out_lens, scores) == 0, "greedy: %s",
         halformer_last_error_message());
  for (int i = 0; i < 2; ++i) {
    EXPECT(out_lens[i] >= 1 && out_lens[i] <= MAX_LEN, "length %d", out_lens[i]);
    EXPECT(scores[i] <= 0, "a log-probability score %f", scores[i]);
    for (int j = 0; j < out_lens[i]; ++j)
      EXPECT(out[i * MAX_LEN + j] >= 0 && out[i * MAX_LEN + j] < tgt_vocab, "id");
    EXPECT(out[i * MAX_LEN + out_lens[i] - 1] == eos || out_lens[i] == MAX_LEN, "ends without EOS before max_len");
  }
  /* Greedy alone equals greedy in the batch. */
  int32_t out1[MAX_LEN], len1;
  EXPECT(halformer_translate(m, src + 1, lens + 1, 1, 1, MAX_LEN, 1.0f, out1, &len1, NULL) == 0, "alone");
  EXPECT(len1 == out_lens[1] && memcmp(out1, out + MAX_LEN, sizeof(int32_t) * len1) == 0, "batch variance");
  /* Beam search returns a hypothesis at least as likely (normalised) as greedy. */
  float beam_scores[2];
  EXPECT(halformer_translate(m, src, lens, 2, 3, MAX_LEN, 1.0f, out, out_lens, beam_scores) == 0, "beam: %s",
         halformer_last_error_message());
  for (int i = 0; i < 2; ++i)
    EXPECT(beam_scores[i] >= scores[i] - 1e-5f, "beam %f < greedy %f", beam_scores[i], scores[i]);
  check_concurrent_calls(m, src, lens);
  check_decode_options(m);
}

/* Forward: logits are finite (sanity); they are returned for the int8 check. */
static void check_forward(halformer_model* m, float logits[2 * 29]) {
  float memory[3 * 24];
  EXPECT(halformer_forward(m, fsrc, 1, 3, ftgt, 2, logits, memory) == 0, "forward: %s", halformer_last_error_message());
  for (int i = 0; i < 2 * 29; ++i)
    EXPECT(logits[i] == logits[i] && logits[i] < 1e30f && logits[i] > -1e30f, "logit");
}

static void check_opencl(const char* dir, halformer_model* m) {
  /* The same model on OpenCL (PoCL here) translates to the same tokens. */
  halformer_model* g = NULL;
  EXPECT(halformer_model_load_on(dir, 0, "tpu", &g) != 0, "device 'tpu' accepted");
  EXPECT(strstr(halformer_last_error_message(), "unknown device 'tpu'") != NULL, "message: %s",
         halformer_last_error_message());
  if (halformer_model_load_on(dir, 0, "opencl", &g) != 0) {
    EXPECT(0, "opencl load: %s", halformer_last_error_message());
  } else {
    EXPECT(strcmp(halformer_model_device(g), "opencl") == 0, "device %s", halformer_model_device(g));
    int32_t gout[2 * MAX_LEN], glens[2], cout_[2 * MAX_LEN], clens[2];
    EXPECT(halformer_translate(m, src, lens, 2, 3, MAX_LEN, 1.0f, cout_, clens, NULL) == 0, "cpu beam");
    EXPECT(halformer_translate(g, src, lens, 2, 3, MAX_LEN, 1.0f, gout, glens, NULL) == 0, "opencl beam: %s",
           halformer_last_error_message());
    for (int i = 0; i < 2; ++i)
      EXPECT(glens[i] == clens[i] && memcmp(gout + i * MAX_LEN, cout_ + i * MAX_LEN, sizeof(int32_t) * clens[i]) == 0,
             "sentence %d differs on opencl", i);
    halformer_model_free(g);
  }
}

static void check_int8(const char* dir, halformer_model* m, const float logits[2 * 29], int eos) {
  /* int8 GEMMs through the C API: the compute type is reported, translation gives
   * well-formed outputs, and the logits are float32's up to int8's error (at most
   * 16% of their rms on this fixture; the exact quantized arithmetic is checked by
   * int8_parity.py); an unknown compute type is an error naming it. */
  halformer_model* q = NULL;
  EXPECT(halformer_model_load_with(dir, 0, "cpu", "int4", &q) != 0, "compute type 'int4' accepted");
  EXPECT(strstr(halformer_last_error_message(), "unknown compute type 'int4'") != NULL, "message: %s",
         halformer_last_error_message());
  if (halformer_model_load_with(dir, 0, "cpu", "int8", &q) != 0) {
    EXPECT(0, "int8 load: %s", halformer_last_error_message());
  } else {
    EXPECT(strcmp(halformer_model_compute_type(q), "int8") == 0, "compute type %s", halformer_model_compute_type(q));
    EXPECT(strcmp(halformer_model_compute_type(m), "float32") == 0, "compute type %s", halformer_model_compute_type(m));
    int32_t qout[2 * MAX_LEN], qlens[2];
    EXPECT(halformer_translate(q, src, lens, 2, 1, MAX_LEN, 1.0f, qout, qlens, NULL) == 0, "int8 greedy: %s",
           halformer_last_error_message());
    for (int i = 0; i < 2; ++i)
      EXPECT(qout[i * MAX_LEN + qlens[i] - 1] == eos || qlens[i] == MAX_LEN, "int8: ends without EOS");
    float qlogits[2 * 29];
    EXPECT(halformer_forward(q, fsrc, 1, 3, ftgt, 2, qlogits, NULL) == 0, "int8 forward: %s",
           halformer_last_error_message());
    double ss = 0, worst = 0;
    for (int i = 0; i < 2 * 29; ++i)
      ss += (double)logits[i] * logits[i];
    for (int i = 0; i < 2 * 29; ++i) {
      const double d = qlogits[i] > logits[i] ? qlogits[i] - logits[i] : logits[i] - qlogits[i];
      worst = d > worst ? d : worst;
    }
    const double rms = ss > 0 ? __builtin_sqrt(ss / (2 * 29)) : 1;
    EXPECT(worst > 0 && worst < 0.5 * rms, "int8 logits differ from float32's by %g (rms %g)", worst, rms);
    halformer_model_free(q);
  }
}

static void check_load_options(const char* dir) {
  /* Every setting through halformer_load_options: int8 GEMMs take float16 keys
   * and values by default ("auto") and float32 ones on request; the two models'
   * logits differ by float16's rounding of the keys and values (2^-11 of each;
   * 3e-5 of the logits' rms on these inputs): not at all would mean the option
   * never reached the kernels, 1% would be far more than rounding (a wrong key
   * or value moves them by O(1)). Bad settings are errors naming them. */
  halformer_load_options o;
  halformer_load_options_init(&o);
  EXPECT(o.size == sizeof o && o.threads == 0 && strcmp(o.device, "cpu") == 0 &&
             strcmp(o.compute_type, "float32") == 0 && strcmp(o.kv_cache, "auto") == 0,
         "load option defaults");
  halformer_model *half = NULL, *full = NULL;
  o.compute_type = "int8";
  o.kv_cache = "float8";
  EXPECT(halformer_model_load_options(dir, &o, &half) != 0, "kv cache 'float8' accepted");
  EXPECT(strstr(halformer_last_error_message(), "unknown kv cache type 'float8'") != NULL, "message: %s",
         halformer_last_error_message());
  o.kv_cache = NULL; /* the default, auto */
  o.size = 8;
  EXPECT(halformer_model_load_options(dir, &o, &half) != 0, "options of another size accepted");
  EXPECT(strstr(halformer_last_error_message(), "halformer_load_options_init") != NULL, "message: %s",
         halformer_last_error_message());
  o.size = sizeof o;
  const int half_ok = halformer_model_load_options(dir, &o, &half) == 0;
  EXPECT(half_ok, "int8 load, auto keys and values: %s", halformer_last_error_message());
  o.kv_cache = "float32";
  const int full_ok = halformer_model_load_options(dir, &o, &full) == 0;
  EXPECT(full_ok, "int8 load, float32 keys and values: %s", halformer_last_error_message());
  if (half_ok && full_ok) {
    EXPECT(strcmp(halformer_model_kv_cache(half), "float16") == 0, "auto chose %s", halformer_model_kv_cache(half));
    EXPECT(strcmp(halformer_model_kv_cache(full), "float32") == 0, "kv cache %s", halformer_model_kv_cache(full));
    EXPECT(strcmp(halformer_model_compute_type(half), "int8") == 0, "compute type %s",
           halformer_model_compute_type(half));
    float hl[2 * 29], fl[2 * 29];
    EXPECT(halformer_forward(half, fsrc, 1, 3, ftgt, 2, hl, NULL) == 0, "float16 forward: %s",
           halformer_last_error_message());
    EXPECT(halformer_forward(full, fsrc, 1, 3, ftgt, 2, fl, NULL) == 0, "float32 forward: %s",
           halformer_last_error_message());
    double ss = 0, worst = 0;
    for (int i = 0; i < 2 * 29; ++i) {
      const double d = hl[i] > fl[i] ? hl[i] - fl[i] : fl[i] - hl[i];
      ss += (double)fl[i] * fl[i], worst = d > worst ? d : worst;
    }
    const double rms = __builtin_sqrt(ss / (2 * 29));
    EXPECT(worst > 0 && worst < 0.01 * rms, "float16 keys and values move the logits by %g (rms %g)", worst, rms);
  }
  halformer_model_free(half);
  halformer_model_free(full);
}

static void check_errors(halformer_model* m) {
  int32_t out[MAX_LEN], out_lens[1];
  float logits[29];
  /* Errors: an out-of-range id, with its message. */
  int32_t bad[] = {5, 99};
  const int32_t* bad_src[] = {bad};
  const int32_t bad_len[] = {2};
  EXPECT(halformer_translate(m, bad_src, bad_len, 1, 1, MAX_LEN, 1.0f, out, out_lens, NULL) != 0, "accepted id 99");
  EXPECT(strstr(halformer_last_error_message(), "token id 99") != NULL, "message: %s", halformer_last_error_message());
  int64_t huge[] = {(int64_t)1 << 33};
  EXPECT(halformer_forward(m, huge, 1, 1, ftgt, 1, logits, NULL) != 0, "accepted id 2^33");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    printf("usage: c_runtime_test MODEL_DIR\n");
    return 2;
  }
  halformer_model* m = NULL;
  EXPECT(halformer_model_load("/nonexistent", 1, &m) != 0, "loading a missing model succeeded");
  EXPECT(strstr(halformer_last_error_message(), "/nonexistent") != NULL, "message: %s", halformer_last_error_message());
  if (halformer_model_load(argv[1], 0, &m) != 0) {
    printf("load failed: %s\n", halformer_last_error_message());
    return 1;
  }
  int d_model = 0, src_vocab = 0, tgt_vocab = 0, bos = 0, eos = 0, pad = 0;
  EXPECT(halformer_model_dims(m, &d_model, &src_vocab, &tgt_vocab, &bos, &eos, &pad) == 0, "dims failed");
  EXPECT(d_model == 24 && src_vocab == 23 && tgt_vocab == 29 && eos == 2, "dims %d %d %d %d", d_model, src_vocab,
         tgt_vocab, eos);
  float logits[2 * 29];
  check_translation(m, tgt_vocab, eos);
  check_forward(m, logits);
  check_opencl(argv[1], m);
  check_int8(argv[1], m, logits, eos);
  check_load_options(argv[1]);
  check_errors(m);
  halformer_model_free(m);
  printf("%d failures\n", failures);
  return failures != 0;
}
