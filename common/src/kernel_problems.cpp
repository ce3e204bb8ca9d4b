// Every kernel's measuring problem: random inputs at the shape, the arguments by
// name (as the kernel's DSL definition names them), float64 verification of
// sampled rows against halformer/reference, the FLOP and byte counts, and the
// shapes the kernel tests run each kernel at.
#include "halformer/problems.hpp"

#include "int8_problems.hpp"

#include "halformer/dsl/kernels.hpp"
#include "halformer/dsl/panels.hpp"
#include "halformer/positions.hpp"
#include "halformer/reference/sampling.hpp"

#include <cmath>
#include <stdexcept>

namespace halformer::problems {

namespace {
scalar_input f32_scalar(std::string n, float v) { return {std::move(n), halformer::f32_type, {.f32 = v}}; }
scalar_input i32_scalar(std::string n, int32_t v) { return {std::move(n), halformer::i32_type, {.i32 = v}}; }
scalar_input bool_scalar(std::string n, bool v) { return {std::move(n), halformer::bool_type, {.boolean = v}}; }

// half_kv: k and v in float16 (attention_f16kv), compared with the float64
// attention of their float16 values, so the float32 arithmetic's tolerance holds.
// shared=1: rows read through a table that is not the identity (row b's key j in
// row (b + j) % batch, as beams share rows), own_rows false; else the identity,
// and own_rows says so.
problem attention(shape_args& s, bool half_kv) {
  problem p;
  const int DK = s["d_k"], H = s["heads"], T = s["t"], TK = s["tk"], B = s["batch"], causal = s["causal"];
  const int offset = causal ? TK - T : 0; // queries are the last T positions (decode: T = 1)
  const int step = s.get("step", 0);      // a decode step's queries: T beams of each source
  const bool shared = s.get("shared", 0) != 0;
  p.f_names = {"q", "k", "v", "out"}, p.i_names = {"kv_rows", "lengths"}, p.outputs = {"out"};
  if (half_kv)
    p.f_names = {"q", "out"}, p.f16_names = {"k", "v"};
  p.activations = {"q", "out", "kv_rows", "lengths"}; // the keys and values: a cache, from memory
  p.scalars = {bool_scalar("causal", causal != 0), i32_scalar("offset", offset), bool_scalar("decode_step", step != 0),
               bool_scalar("own_rows", !shared)};
  p.make = [=] {
    call_set c{{random({DK, T, H, B}, 1), fb(DK, T, H, B)}, {ib(TK, B), ib(B)}};
    if (half_kv)
      c.f16 = {random_f16({DK, TK, H, B}, 1), random_f16({DK, TK, H, B}, 1)};
    else
      c.f.insert(c.f.begin() + 1, {random({DK, TK, H, B}, 1), random({DK, TK, H, B}, 1)});
    c.i[0].for_each_element([&](int key, int row) { c.i[0](key, row) = shared ? (row + key) % B : row; });
    c.i[1].fill(TK);
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const fb& out = c.f.back();
    const auto kv = [&](int which, int b) {
      return half_kv ? f16_to_ref(gathered_row(c.f16[std::size_t(which)], c.i[0], b))
                     : ref::to_ref(gathered_row(c.f[std::size_t(1 + which)], c.i[0], b));
    };
    for (auto [t, b] : sample_rows(T, B)) {
      const auto q = ref::to_ref(c.f[0].cropped(1, t, 1).cropped(3, b, 1));
      const auto want = ref::attention(q, kv(0, b), kv(1, b), {TK}, causal != 0, offset + t);
      for (int h = 0; h < H; ++h)
        for (int j = 0; j < DK; ++j)
          m.add(out(j, t, h, b), want(j, 0, h, 0));
    }
  };
  const double kv_bytes = half_kv ? 2 : 4;
  p.flops = 4.0 * DK * T * TK * H * B * (causal ? 0.5 : 1.0), p.bytes = 2.0 * kv_bytes * DK * H * B * TK;
  return p;
}

problem layernorm(shape_args& s, bool residual) {
  problem p;
  const int D = s["d_model"], T = s["t"], B = s["batch"], r = residual ? 1 : 0;
  p.f_names = {"x", "gamma", "beta", "out"}, p.outputs = {"out"};
  p.activations = {"x", "residual", "out"};
  if (residual)
    p.f_names.insert(p.f_names.begin() + 1, "residual");
  else
    p.activations.erase(p.activations.begin() + 1);
  p.scalars = {f32_scalar("eps", 1e-5f)};
  p.make = [=] {
    call_set c{{random({D, T, B}, 1), random({D}, 1), random({D}, 1), fb(D, T, B)}};
    if (residual)
      c.f.insert(c.f.begin() + 1, random({D, T, B}, 1));
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto g = ref::to_ref(c.f[1 + r]), be = ref::to_ref(c.f[2 + r]);
    for (auto [t, b] : sample_rows(T, B)) {
      auto x = row3(c.f[0], t, b);
      if (residual)
        x = ref::add(x, row3(c.f[1], t, b));
      compare_row3(c.f[3 + r], ref::layernorm(x, g, be, 1e-5), t, b, m);
    }
  };
  p.flops = 8.0 * D * T * B, p.bytes = 8.0 * D; // gamma and beta
  return p;
}

problem softmax(shape_args& s, bool log) {
  problem p;
  const int N = s["n"], T = s["t"], B = s["batch"];
  p.f_names = {"x", "out"}, p.i_names = {"lengths"}, p.outputs = {"out"}, p.activations = {"x", "out", "lengths"};
  p.scalars = {bool_scalar("causal", false), i32_scalar("offset", 0)};
  p.make = [=] {
    call_set c{{random({N, T, B}, 3), fb(N, T, B)}, {ib(B)}};
    c.i[0].fill(N);
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    for (auto [t, b] : sample_rows(T, B))
      compare_row3(c.f[1], ref::softmax(row3(c.f[0], t, b), {N}, false, 0, log), t, b, m);
  };
  p.flops = 4.0 * N * T * B; // activations alone: no bytes from memory
  return p;
}

problem greedy_pick(shape_args& s) {
  problem p;
  const int V = s["vocab"], T = s["t"], B = s["batch"];
  p.f_names = {"x", "log_probs"}, p.i_names = {"ids"}, p.outputs = {"ids", "log_probs"};
  p.activations = {"x", "log_probs", "ids"}; // x: the logits kernel's output
  p.make = [=] { return call_set{{random({V, T, B}, 3), fb(T, B)}, {ib(T, B)}}; };
  p.verify = [=](call_set& c, error_meter& m) {
    for (auto [t, b] : sample_rows(T, B)) {
      const auto want = ref::greedy_pick(row3(c.f[0], t, b));
      m.add(c.i[0](t, b), want.ids[0]); // ids: exact, so any miss is a large error
      m.add(c.f[1](t, b), want.log_p[0]);
    }
  };
  p.flops = 4.0 * V * T * B; // activations alone
  return p;
}

problem beam_candidates(shape_args& s) {
  problem p;
  const int V = s["vocab"], T = s["t"], B = s["batch"], size = dsl::kernels::beam_candidates::chunk,
            C = (V + size - 1) / size;
  p.f_names = {"x", "chunk_max", "top_log_prob"}, p.outputs = {"chunk_max", "top_log_prob"};
  p.activations = p.f_names; // x: the logits kernel's output
  p.make = [=] { return call_set{{random({V, T, B}, 3), fb(C, T, B), fb(T, B)}}; };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto x = ref::to_ref(c.f[0]);
    const auto chunks = ref::chunk_maxima(x, size);
    const auto best = ref::greedy_pick(x);
    for (auto [t, b] : sample_rows(T, B)) {
      for (int k = 0; k < C; ++k)
        m.add(c.f[1](k, t, b), chunks(k, t, b)); // a maximum is exact: any miss is a large error
      m.add(c.f[2](t, b), best.log_p[std::size_t(b) * T + t]);
    }
  };
  p.flops = 4.0 * V * T * B; // activations alone
  return p;
}

// topk=K, topp=P (percent), temperature=T (percent), penalty=R (percent);
// rules=N: each row bans and penalizes N tokens (every 7th and 11th from a row
// offset). The token must hold the row's draw within 1e-5 of its interval in the
// float64 reference (reference/sampling.hpp), the log-probability as greedy's.
problem sample_pick(shape_args& s) {
  problem p;
  const int V = s["vocab"], T = s["t"], B = s["batch"], rules = std::max(1, s.get("rules", 4));
  ref::sampling_options o{s.get("topk", 0), s.get("topp", 100) / 100.0, s.get("temperature", 100) / 100.0,
                          s.get("penalty", 120) / 100.0};
  p.f_names = {"x", "draws", "log_probs"}, p.i_names = {"forced", "banned", "penalized", "ids"};
  p.outputs = {"ids", "log_probs"}, p.activations = {"x", "draws", "log_probs", "forced", "banned", "penalized", "ids"};
  p.scalars = {i32_scalar("top_k", o.top_k), f32_scalar("top_p", float(o.top_p)),
               f32_scalar("temperature", float(o.temperature)), f32_scalar("penalty", float(o.penalty))};
  p.make = [=] {
    call_set c{{random({V, T, B}, 3), fb(T, B), fb(T, B)}, {ib(T, B), ib(rules, T, B), ib(rules, T, B), ib(T, B)}};
    c.f[1].for_each_element([&](int t, int b) { c.f[1](t, b) = float((t * 37 + b * 101) % 997) / 997.0f; });
    c.i[0].fill(-1);
    for (int list = 1; list <= 2; ++list)
      c.i[std::size_t(list)].for_each_element([&](int i, int t, int b) {
        const int id = (t + b + i * (list == 1 ? 7 : 11)) % V;
        c.i[std::size_t(list)](i, t, b) = i < V - 1 ? id : -1; // a row keeps a token
      });
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    for (auto [t, b] : sample_rows(T, B)) {
      std::vector<double> row;
      std::vector<int> banned, penalized;
      for (int v = 0; v < V; ++v)
        row.push_back(c.f[0](v, t, b));
      for (int i = 0; i < rules; ++i)
        banned.push_back(c.i[1](i, t, b)), penalized.push_back(c.i[2](i, t, b));
      const auto want = ref::sample_row(row, banned, penalized, o);
      const int id = c.i[3](t, b);
      const double u = c.f[1](t, b);
      const auto [lo, hi] = want.draws_of(id);
      m.add(lo - 1e-5 <= u && u < hi + 1e-5 ? 0.0 : 1.0, 0.0); // a token the draw does not choose: error 1
      if (id >= 0 && id < V)
        m.add(c.f[2](t, b), want.log_prob(id));
    }
  };
  p.flops = 4.0 * V * T * B; // activations alone
  return p;
}

problem embedding(shape_args& s) {
  problem p;
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  const bool split = s.get("split", 0) != 0;     // positions' layout: sines then cosines
  const bool fairseq = s.get("fairseq", 0) != 0; // positions' frequencies as fairseq's
  p.f_names = {"table", "out"}, p.i_names = {"ids"}, p.outputs = {"out"}, p.activations = {"ids", "out"};
  p.scalars = {i32_scalar("vocab_size", V), f32_scalar("scale", std::sqrt(float(D))), i32_scalar("offset", 0),
               bool_scalar("split_positions", split),
               f32_scalar("frequency_step", float(sinusoid_frequency_step(D, fairseq)))};
  p.make = [=] {
    call_set c{{random_panels({D, V}, 1, 1), fb(D, T, B)}, {ib(T, B)}};
    std::uniform_int_distribution<int> id(0, V - 1);
    c.i[0].for_each_value([&](int32_t& x) { x = id(rng); });
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto table = ref::to_ref(dsl::panels::unpack<fb>(c.f[0], {D, V}, 1));
    for (auto [t, b] : sample_rows(T, B)) {
      const auto want = ref::embedding(table, {{c.i[0](t, b)}}, std::sqrt(double(D)), t, split, fairseq);
      compare_row3(c.f[1], want, t, b, m);
    }
  };
  p.flops = 2.0 * D * T * B, p.bytes = 4.0 * D * T * B; // the rows gathered
  // The float32 angle pos * freq errs by ~2 (pos + 1) 2^-24 and so does its
  // sin/cos (tests/kernels/embedding_test.cpp); values are O(sqrt(D)), rms ~1.
  p.tolerance = 1e-5 + 4.0 * T * std::ldexp(1.0, -24);
  return p;
}

using problem_table = std::map<std::string, std::function<problem(shape_args&)>>;

// The GEMM problems of compute type C (dsl/compute_types.hpp) under its kernels'
// names, over weights of its weight type.
template <class C> void add_gemm_problems(problem_table& all) {
  using dsl::name_in;
  constexpr dsl::dtype type = C::weight_type.value;
  static_assert(type == dsl::dtype::f32 || type == dsl::dtype::i8 || type == dsl::dtype::bf16);
  const gemm_weights w{type == dsl::dtype::i8     ? weight_type::int8
                       : type == dsl::dtype::bf16 ? weight_type::bf16
                                                  : weight_type::float32};
  const auto add = [&](std::string_view name, std::function<problem(shape_args&)> make) {
    all.emplace(std::string(name), std::move(make));
  };
  add(name_in<"logits", C>, [w](shape_args& a) { return logits(a, w); });
  add(name_in<"qkv_projection", C>, [w](shape_args& a) { return head_projections(a, "qkv", w); });
  add(name_in<"kv_projection", C>, [w](shape_args& a) { return head_projections(a, "kv", w); });
  add(name_in<"q_projection", C>, [w](shape_args& a) { return head_projections(a, "q", w); });
  add(name_in<"out_projection", C>, [w](shape_args& a) { return out_projection(a, w); });
  add(name_in<"ffn_relu", C>, [w](shape_args& a) { return ffn(a, w, ref::activation::relu); });
  add(name_in<"ffn_gelu", C>, [w](shape_args& a) { return ffn(a, w, ref::activation::gelu); });
  add(name_in<"ffn_silu", C>, [w](shape_args& a) { return ffn(a, w, ref::activation::silu); });
}

const problem_table& problems() {
  static const problem_table all = [] {
    problem_table t{{"embedding_int8", int8::embedding},
                    {"attention", [](shape_args& a) { return attention(a, false); }},
                    {"attention_f16kv", [](shape_args& a) { return attention(a, true); }},
                    {"kv_to_float16", f16::kv_to_float16},
                    {"layernorm", [](shape_args& a) { return layernorm(a, false); }},
                    {"add_layernorm", [](shape_args& a) { return layernorm(a, true); }},
                    {"softmax", [](shape_args& a) { return softmax(a, false); }},
                    {"log_softmax", [](shape_args& a) { return softmax(a, true); }},
                    {"greedy_pick", greedy_pick},
                    {"beam_candidates", beam_candidates},
                    {"sample_pick", sample_pick},
                    {"embedding", embedding}};
    add_gemm_problems<dsl::compute::float32>(t);
    add_gemm_problems<dsl::compute::int8>(t);
    add_gemm_problems<dsl::compute::bfloat16>(t);
    return t;
  }();
  return all;
}
} // namespace

problem make_problem(const std::string& name, shape_args& s) {
  auto p = problems().find(name);
  if (p == problems().end())
    throw std::runtime_error("no problem is defined for kernel '" + name + "'");
  problem result = p->second(s);
  s.check_all_used();
  for (const std::string& a : result.activations)
    if (!result.is_argument(a))
      throw std::logic_error(name + "'s problem names an activation '" + a + "' it has no argument for");
  return result;
}

std::vector<std::string> problem_kernels() {
  std::vector<std::string> names;
  for (const auto& [name, make] : problems())
    names.push_back(name);
  return names;
}

// Per shape family: prefill (t > 1), decode (t = 1, batch > 1), decode1 and
// decode_wide (t = 1, batch >= 64: 65-70 rows); decode GEMMs of 150+ KiB of
// weights, which take several decode tasks (cpu/panels.hpp: 128 KiB each; 11
// heads: groups of heads and a partial one); widths that are not multiples of
// any vector width, and d_k 64 and 32 (attention has branches of its own for
// them); batch 3, 5, 7 and 9 reach decode tiles of fewer rows than the knobs'
// and tails shifted inwards (cpu/panels.hpp tile_height_suits), outputs of 7-47
// features partial panels and panel groups, prefill of 19-37 and 150 rows
// partial row tiles.
namespace {
const std::map<std::string, std::vector<std::string>>& shape_table() {
  static const std::map<std::string, std::vector<std::string>> shapes{
      {"logits",
       {"d_model=33,vocab=333,t=7,batch=2", "d_model=64,vocab=100,t=1,batch=5", "d_model=17,vocab=47,t=1,batch=1",
        "d_model=40,vocab=333,t=1,batch=7", "d_model=257,vocab=800,t=37,batch=5", "d_model=40,vocab=333,t=1,batch=3",
        "d_model=40,vocab=333,t=1,batch=70", "d_model=512,vocab=600,t=1,batch=3",
        // prefill of >= 64 rows over whole 64-byte steps: the int8 and bfloat16
        // GEMMs' AMX form (dsl/lower_amx.hpp), 70 rows a shifted last tile; 96
        // inputs are not whole steps (the vector form)
        "d_model=128,vocab=333,t=70,batch=2", "d_model=96,vocab=100,t=64,batch=1"}},
      {"ffn",
       {"d_model=33,d_ff=47,t=7,batch=2", "d_model=64,d_ff=128,t=1,batch=5", "d_model=20,d_ff=70,t=1,batch=1",
        "d_model=300,d_ff=333,t=1,batch=9", "d_model=100,d_ff=300,t=37,batch=1", "d_model=260,d_ff=777,t=19,batch=9",
        "d_model=260,d_ff=777,t=150,batch=1", "d_model=64,d_ff=300,t=1,batch=67", "d_model=256,d_ff=700,t=1,batch=1",
        "d_model=128,d_ff=704,t=80,batch=2"}}, // AMX (both GEMMs' inputs whole 64-byte steps)
      {"heads",
       {"d_k=7,heads=3,t=7,batch=2", "d_k=64,heads=2,t=1,batch=5", "d_k=16,heads=3,t=1,batch=1",
        "d_k=64,heads=5,t=1,batch=9", "d_k=16,heads=7,t=37,batch=2", "d_k=64,heads=5,t=19,batch=3",
        "d_k=64,heads=3,t=1,batch=65", "d_k=64,heads=11,t=1,batch=2", "d_k=64,heads=3,t=66,batch=2"}},
      {"attention",
       {"d_k=7,heads=3,t=7,tk=7,batch=2,causal=0", "d_k=64,heads=2,t=5,tk=13,batch=2,causal=1",
        "d_k=64,heads=2,t=1,tk=13,batch=5,causal=1", "d_k=9,heads=1,t=1,tk=1,batch=1,causal=1",
        "d_k=32,heads=2,t=9,tk=11,batch=2,causal=1", "d_k=32,heads=3,t=1,tk=40,batch=3,causal=0",
        "d_k=64,heads=2,t=1,tk=9,batch=66,causal=1", "d_k=64,heads=8,t=4,tk=37,batch=3,causal=0,step=1",
        // decode tasks of several heads (cpu/attention.hpp), fewer where the rows
        // leave a core without one: 9 heads of one row, 8 of three, d_k 32; and
        // rows through a table that is not the identity (shared=1)
        "d_k=64,heads=9,t=1,tk=41,batch=1,causal=1", "d_k=32,heads=8,t=1,tk=70,batch=3,causal=1",
        "d_k=64,heads=8,t=1,tk=37,batch=3,causal=1,shared=1", "d_k=64,heads=3,t=5,tk=11,batch=2,causal=1,shared=1",
        "d_k=64,heads=8,t=4,tk=37,batch=3,causal=0,step=1,shared=1"}},
      {"layernorm",
       {"d_model=333,t=7,batch=2", "d_model=64,t=1,batch=5", "d_model=7,t=1,batch=1", "d_model=33,t=1,batch=65"}},
      {"softmax", {"n=333,t=7,batch=2", "n=64,t=1,batch=5", "n=1,t=1,batch=1", "n=333,t=1,batch=65"}},
      {"greedy_pick",
       {"vocab=333,t=7,batch=2", "vocab=64,t=1,batch=5", "vocab=1,t=1,batch=1", "vocab=333,t=1,batch=65"}},
      // 333: five whole chunks and a short one; 64 and 65: one chunk, one entry over.
      {"beam_candidates",
       {"vocab=333,t=7,batch=2", "vocab=64,t=1,batch=5", "vocab=65,t=1,batch=3", "vocab=1,t=1,batch=1",
        "vocab=333,t=1,batch=65"}},
      // whole rows, top-k, top-p, both (cutting through ties at 1000 of scale 3 is
      // unlikely: tests/kernels/sample_pick_test.cpp has those)
      {"sample_pick",
       {"vocab=333,t=7,batch=2,topk=10", "vocab=64,t=1,batch=5,topp=90,temperature=70", "vocab=1,t=1,batch=1",
        "vocab=1000,t=1,batch=3,topk=50,topp=80,penalty=80", "vocab=333,t=1,batch=65,rules=9"}},
      {"embedding",
       {"d_model=34,vocab=50,t=7,batch=2", "d_model=64,vocab=10,t=1,batch=5", "d_model=8,vocab=1,t=1,batch=1",
        "d_model=512,vocab=1000,t=7,batch=4", "d_model=35,vocab=50,t=9,batch=2,split=1",
        "d_model=64,vocab=10,t=1,batch=3,split=1", "d_model=64,vocab=10,t=1,batch=65"}}};
  return shapes;
}

// The table's name for a kernel: its float32 kernel's (a compute type's suffix
// dropped), then the family that shares its shapes.
std::string family_of(std::string kernel) {
  for (const std::string_view suffix :
       {std::string_view(dsl::compute::int8::suffix.chars), std::string_view(dsl::compute::bfloat16::suffix.chars)})
    if (kernel.ends_with(suffix))
      kernel.resize(kernel.size() - suffix.size());
  static const std::map<std::string, std::string> family{{"ffn_relu", "ffn"},
                                                         {"ffn_gelu", "ffn"},
                                                         {"ffn_silu", "ffn"},
                                                         {"qkv_projection", "heads"},
                                                         {"kv_projection", "heads"},
                                                         {"q_projection", "heads"},
                                                         {"out_projection", "heads"},
                                                         {"kv_to_float16", "heads"},
                                                         {"attention_f16kv", "attention"},
                                                         {"add_layernorm", "layernorm"},
                                                         {"log_softmax", "softmax"}};
  const auto f = family.find(kernel);
  return f != family.end() ? f->second : kernel;
}
} // namespace

const std::vector<std::string>& test_shapes(const std::string& kernel) {
  static const std::vector<std::string> none;
  const auto it = shape_table().find(family_of(kernel));
  return it != shape_table().end() ? it->second : none;
}

} // namespace halformer::problems
