// Every halformer kernel, written once as a DSL expression over formal operands.
//
// A kernel is a struct whose members are its operand leaves and whose inputs()
// and outputs() are its whole interface: inputs() lists the input and param
// leaves in the compiled function's argument order, outputs() names each result
// (result("q", expr)). The generic generator (generators/kernel_generator.cpp)
// adds one Halide Input or Output per entry; callers bind arguments by these
// names through the function's metadata. Stage names given here are the names
// schedules refer to; `schedule` names the schedule (and its knob-file section).
//
// Adding a kernel: a struct here (a GEMM kernel: a template over the compute
// types in kernels_gemm.hpp; attention: kernels_attention.hpp) and its entry in
// `all` below.
#pragma once

#include "halformer/dsl/expr_sampling.hpp"
#include "halformer/dsl/kernels_attention.hpp"
#include "halformer/dsl/kernels_gemm.hpp"

#include <stdexcept>

namespace halformer::dsl::kernels {

using namespace dims;

// token ids -> table(id) * scale + PE(t + offset), PE in the layout `split_positions`
// chooses (dsl::sinusoidal: false interleaved, true sines then cosines), pair i at
// the frequency exp(-i * frequency_step) (the paper's and Marian's step is
// 2 ln(10000) / d_model, fairseq's ln(10000) / (d_model / 2 - 1)). The table
// is stored as the logits' weight is, in panels (a token's row is one output's
// inputs): a tied output layer's weight is held once and read by both. Its
// vocabulary size is an argument: ids at or past it are an error.
struct embedding {
  static constexpr std::string_view name = "embedding", schedule = "embedding";
  decltype(panel_input("table", shape(d_model, vocab), 1, f32)) table =
      panel_input("table", shape(d_model, vocab), 1, f32);
  HF_LEAF(ids, input("ids", shape(t, batch), i32));
  HF_LEAF(vocab_size, extent_param(vocab)); // the table's panels pad it
  HF_LEAF(scale, param("scale"));
  HF_LEAF(offset, param("offset", i32));
  HF_LEAF(split_positions, param("split_positions", boolean));
  HF_LEAF(frequency_step, param("frequency_step"));

  auto algorithm() const {
    return add_broadcast("embedding", dsl::scale("scaled", gather("rows", table, ids), scale),
                         sinusoidal("positions", d_model, t, offset, split_positions, frequency_step));
  }
  auto inputs() const {
    return hana::make_tuple(table, ids, vocab_size, scale, offset, split_positions, frequency_step);
  }
  auto outputs() const { return hana::make_tuple(result("out", algorithm())); }
};

// The embedding with an int8 table in panels, one step per vocabulary entry (a
// token's row quantized at load as the GEMM weights are: a tied table is the
// logits' weight and steps); the same stages as embedding's. The steps' extent
// is the vocabulary's (the panels pad it); d_model is an argument, since int8
// panels store 4 inputs per line and so pad it too.
struct embedding_int8 {
  static constexpr std::string_view name = "embedding_int8", schedule = "embedding";
  decltype(panel_input("table", shape(d_model, vocab), 1, i8)) table =
      panel_input("table", shape(d_model, vocab), 1, i8);
  HF_LEAF(table_step, input("table_step", shape(vocab)));
  HF_LEAF(ids, input("ids", shape(t, batch), i32));
  HF_LEAF(width, extent_param(d_model));
  HF_LEAF(scale, param("scale"));
  HF_LEAF(offset, param("offset", i32));
  HF_LEAF(split_positions, param("split_positions", boolean));
  HF_LEAF(frequency_step, param("frequency_step"));

  auto algorithm() const {
    return add_broadcast("embedding", dsl::scale("scaled", gather("rows", table, table_step, ids), scale),
                         sinusoidal("positions", d_model, t, offset, split_positions, frequency_step));
  }
  auto inputs() const {
    return hana::make_tuple(table, table_step, ids, width, scale, offset, split_positions, frequency_step);
  }
  auto outputs() const { return hana::make_tuple(result("out", algorithm())); }
};

// LayerNorm over d_model.
struct layernorm {
  static constexpr std::string_view name = "layernorm", schedule = "layernorm";
  HF_LEAF(x, input("x", shape(d_model, t, batch)));
  HF_LEAF(gamma, input("gamma", shape(d_model)));
  HF_LEAF(beta, input("beta", shape(d_model)));
  HF_LEAF(eps, param("eps"));

  auto inputs() const { return hana::make_tuple(x, gamma, beta, eps); }
  auto outputs() const { return hana::make_tuple(result("out", dsl::layernorm("norm", x, gamma, beta, eps))); }
};
// LayerNorm of (x + residual), post-LN's add & norm in one pass.
struct add_layernorm : layernorm {
  static constexpr std::string_view name = "add_layernorm";
  HF_LEAF(residual, input("residual", shape(d_model, t, batch)));

  auto inputs() const { return hana::make_tuple(x, residual, gamma, beta, eps); }
  auto outputs() const {
    return hana::make_tuple(result("out", dsl::layernorm("norm", add("sum", x, residual), gamma, beta, eps)));
  }
};

// Row softmax over dim 0 of (tk, t, batch), with the attention masks.
struct softmax {
  static constexpr std::string_view name = "softmax", schedule = "softmax";
  HF_LEAF(x, input("x", shape(tk, t, batch)));
  HF_LEAF(lengths, input("lengths", shape(batch), i32));
  HF_LEAF(causal, param("causal", boolean));
  HF_LEAF(offset, param("offset", i32));

  auto algorithm(bool log) const { return masked_softmax("softmax", x, lengths, causal, offset, log); }
  auto inputs() const { return hana::make_tuple(x, lengths, causal, offset); }
  auto outputs() const { return hana::make_tuple(result("out", algorithm(false))); }
};
// The same masks, log-probabilities (the decoder's scores).
struct log_softmax : softmax {
  static constexpr std::string_view name = "log_softmax";
  auto outputs() const { return hana::make_tuple(result("out", algorithm(true))); }
};

// Greedy decoding's choice per logits row: the best token (ties: the lowest id)
// and its log-probability, so that only two numbers per row leave the device.
struct greedy_pick {
  static constexpr std::string_view name = "greedy_pick", schedule = "greedy_pick";
  HF_LEAF(x, input("x", shape(vocab, t, batch)));

  auto inputs() const { return hana::make_tuple(x); }
  auto outputs() const {
    return hana::make_tuple(result("ids", argmax("pick_id", x)), result("log_probs", max_log_prob("pick_log_prob", x)));
  }
};

// Beam search's candidates per logits row: the largest logit of every chunk of
// `chunk` entries and the log-probability of the row's best entry (log p(v) =
// x(v) - max + that). A beam's best 2 x beam tokens lie in the chunks whose
// maximum is at least the (2 x beam)-th largest chunk maximum, so the host reads
// those few chunks' logits instead of a full log-softmax row (beam_search.cpp).
struct beam_candidates {
  static constexpr std::string_view name = "beam_candidates", schedule = "beam_candidates";
  static constexpr int chunk = 64; // entries per chunk: a few hundred chunks per 32000-entry row
  HF_LEAF(x, input("x", shape(vocab, t, batch)));

  auto inputs() const { return hana::make_tuple(x); }
  auto outputs() const {
    return hana::make_tuple(result("chunk_max", dsl::chunk_max("candidates_chunk", x, chunk)),
                            result("top_log_prob", max_log_prob("candidates_log_prob", x)));
  }
};

// Random sampling's choice per logits row (expr_sampling.hpp): the token and its
// log-probability, two numbers per row, as greedy_pick's. The host gives each row
// its draw in [0, 1), its forced token (-1: none) and its banned and penalized
// tokens (both lists of one length, -1 padding; a token at most once in each).
struct sample_pick {
  static constexpr std::string_view name = "sample_pick", schedule = "sample_pick";
  HF_LEAF(x, input("x", shape(vocab, t, batch)));
  HF_LEAF(draws, input("draws", shape(t, batch)));
  HF_LEAF(forced, input("forced", shape(t, batch), i32));
  HF_LEAF(banned, input("banned", shape(rule, t, batch), i32));
  HF_LEAF(penalized, input("penalized", shape(rule, t, batch), i32));
  HF_LEAF(top_k, param("top_k", i32));
  HF_LEAF(top_p, param("top_p"));
  HF_LEAF(temperature, param("temperature"));
  HF_LEAF(penalty, param("penalty"));

  auto ids() const {
    return sample_token("sample", x, draws, forced, banned, penalized, top_k, top_p, temperature, penalty);
  }
  auto inputs() const {
    return hana::make_tuple(x, draws, forced, banned, penalized, top_k, top_p, temperature, penalty);
  }
  auto outputs() const {
    return hana::make_tuple(result("ids", ids()),
                            result("log_probs", token_log_prob("sample_log_prob", x, penalized, penalty, ids())));
  }
};

// The registry: every kernel the libraries hold, by its struct. The build's kernel
// list (cmake/HalformerKernels.cmake) names these.
inline constexpr auto all =
    hana::tuple_t<embedding, qkv_projection, kv_projection, q_projection, attention, attention_f16kv, kv_to_float16,
                  out_projection, ffn_relu, ffn_gelu, ffn_silu, layernorm, add_layernorm, softmax, log_softmax, logits,
                  greedy_pick, beam_candidates, sample_pick, embedding_int8, logits_int8, qkv_projection_int8,
                  kv_projection_int8, q_projection_int8, out_projection_int8, ffn_relu_int8, ffn_gelu_int8,
                  ffn_silu_int8, logits_bf16, qkv_projection_bf16, kv_projection_bf16, q_projection_bf16,
                  out_projection_bf16, ffn_relu_bf16, ffn_gelu_bf16, ffn_silu_bf16>;

// Each kernel of the registry has a name of its own (visit() finds the first of
// a name; GEMM kernels' names are joined from a base and a compute type's suffix).
inline constexpr bool names_are_distinct = hana::unpack(all, [](auto... kernel) {
  const std::array<std::string_view, sizeof...(kernel)> names{decltype(kernel)::type::name...};
  for (std::size_t i = 0; i < names.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (names[i] == names[j])
        return false;
  return true;
});
static_assert(names_are_distinct, "halformer::dsl::kernels::all: two kernels share a name");

// Kernels the GPU libraries leave out (cmake/HalformerKernels.cmake: CPU_ONLY):
// those declaring `cpu_only`.
template <class K> constexpr bool cpu_only_v = false;
template <class K>
requires requires { K::cpu_only; }
constexpr bool cpu_only_v<K> = K::cpu_only;

// Calls f(kernel) with the kernel named `name`; an unknown name is an error
// listing the known ones.
template <class F> void visit(std::string_view name, F&& f) {
  bool found = false;
  std::string known;
  hana::for_each(all, [&](auto type) {
    using K = typename decltype(type)::type;
    known += " " + std::string(K::name);
    if (!found && K::name == name) {
      found = true;
      f(K{});
    }
  });
  if (!found)
    throw std::invalid_argument("no kernel named '" + std::string(name) + "'; kernels:" + known);
}

// A kernel's interface with its types erased: arguments in the compiled
// function's order (inputs, then outputs).
struct interface {
  std::string_view name, schedule;
  std::vector<argument> inputs, outputs;
};
template <class K>
requires requires { K::name; }
interface interface_of(const K& k) {
  interface i {
    K::name, K::schedule, {}, {}
  };
  hana::for_each(k.inputs(), [&](const auto& leaf) { i.inputs.push_back(describe(leaf)); });
  hana::for_each(k.outputs(), [&](const auto& r) { i.outputs.push_back(describe(r)); });
  return i;
}
inline interface interface_of(std::string_view name) {
  interface i;
  visit(name, [&](const auto& k) { i = interface_of(k); });
  return i;
}

inline bool cpu_only(std::string_view name) {
  bool only = false;
  visit(name, [&](const auto& k) { only = cpu_only_v<std::decay_t<decltype(k)>>; });
  return only;
}

} // namespace halformer::dsl::kernels
