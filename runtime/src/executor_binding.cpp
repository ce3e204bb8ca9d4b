// Binding: the layer descriptions become plans of kernel calls, each operand
// resolved by its role and each kernel bound by argument name (executor.hpp).
#include "executor.hpp"
#include "halformer/dsl/halide_type.hpp"

#include <algorithm>
#include <iterator>

namespace halformer {

namespace layers = dsl::layers;

namespace {
// The layers of a configuration whose GEMMs run in `gemms` (a compute type, dsl::compute)
// and whose decoder attends to keys and values of type `kv` (a layers::kv_c tag).
template <class G, class KV> layer_descriptions described(const model_config& c, G gemms, KV kv) {
  using dsl::hana::false_c, dsl::hana::true_c;
  layer_descriptions d;
  if (c.norm_first) {
    d.encoder = layers::flatten(layers::encoder_layer(true_c, c.activation, gemms));
    d.decoder = layers::flatten(layers::decoder_layer(true_c, c.activation, gemms, kv));
  } else {
    d.encoder = layers::flatten(layers::encoder_layer(false_c, c.activation, gemms));
    d.decoder = layers::flatten(layers::decoder_layer(false_c, c.activation, gemms, kv));
  }
  d.encoder_input = layers::flatten(layers::encoder_input(gemms));
  if (c.final_norm) // without one the executor copies the last layer's "x" to the memory
    d.encoder_output = layers::flatten(layers::encoder_output());
  d.decoder_input = layers::flatten(layers::decoder_input(gemms));
  d.decoder_output = c.final_norm ? layers::flatten(layers::decoder_output(true_c, gemms))
                                  : layers::flatten(layers::decoder_output(false_c, gemms));
  d.candidates = layers::flatten(layers::beam_choice());
  d.pick = layers::flatten(layers::greedy_choice());
  d.sampling = layers::flatten(layers::sampling_choice());
  return d;
}

template <class G> layer_descriptions described(const model_config& c, G gemms, kv_type kv) {
  return kv == kv_type::float16 ? described(c, gemms, layers::float16_kv) : described(c, gemms, layers::float32_kv);
}
} // namespace

kv_type default_kv(device d, gemm_weights gemms) {
  return d == device::cpu && gemms != gemm_weights::float32 ? kv_type::float16 : kv_type::float32;
}

layer_descriptions layer_descriptions::of(const model_config& c, gemm_weights gemms, kv_type kv) {
  switch (gemms) {
  case gemm_weights::int8:
    return described(c, layers::int8_gemms, kv);
  case gemm_weights::bfloat16:
    return described(c, layers::bf16_gemms, kv);
  case gemm_weights::float32:
    break;
  }
  return described(c, layers::float32_gemms, kv);
}

executor::executor(const model_config& c, const model_weights& w, device d)
    : executor(c, w, d, default_kv(d, w.gemms)) {}
executor::executor(const model_config& c, const model_weights& w, device d, kv_type kv)
    : executor(c, w, d, layer_descriptions::of(c, w.gemms, kv)) {}

executor::executor(const model_config& c, const model_weights& w, device d, const layer_descriptions& layers)
    : config_(c), weights_(w), device_(d), iface_(interface_of(d)) {
  for (int l = 0; l < c.num_encoder_layers; ++l)
    encoder_.push_back(bind(layers.encoder, w.encoder[l], "encoder layer " + std::to_string(l), false));
  for (int l = 0; l < c.num_decoder_layers; ++l) {
    plan p = bind(layers.decoder, w.decoder[l], "decoder layer " + std::to_string(l), true);
    // Steps whose outputs are all per-source depend on the source only: run once per source.
    auto per_source = [](const step& s) {
      return std::all_of(s.args.begin(), s.args.end(),
                         [](const operand& o) { return !o.is_output || from_source(o.kind); });
    };
    std::copy_if(p.begin(), p.end(), std::back_inserter(cross_), per_source);
    p.erase(std::remove_if(p.begin(), p.end(), per_source), p.end());
    decoder_.push_back(std::move(p));
  }
  bind_top(layers);
}

// The model's top binds like a layer, its weights named as model_weights holds them.
void executor::bind_top(const layer_descriptions& layers) {
  const layer_tensors& top = weights_.top;
  encoder_input_ = bind(layers.encoder_input, top, "encoder input", false);
  encoder_output_ = bind(layers.encoder_output, top, "encoder output", false);
  decoder_input_ = bind(layers.decoder_input, top, "decoder input", true);
  decoder_output_ = bind(layers.decoder_output, top, "decoder output", true);
  candidates_ = bind(layers.candidates, top, "beam candidates", true);
  pick_ = bind(layers.pick, top, "greedy pick", true);
  sampling_ = bind(layers.sampling, top, "sampling", true);
  const auto handed_over = [&](const std::string& key) {
    auto a = acts_.find(key);
    if (a == acts_.end())
      throw error("the model description has no activation '" + key + "'");
    return &a->second;
  };
  encoder_x_ = handed_over("encoder.x"), memory_ = handed_over("decoder.memory");
  logits_ = handed_over("decoder.logits"), chunk_max_ = handed_over("decoder.chunk_max");
  top_log_prob_ = handed_over("decoder.top_log_prob");
}

namespace {
std::string type_name(halide_type_t t) {
  return t.code == halide_type_bfloat  ? std::string("bfloat16")
         : t.code == halide_type_float ? "float" + std::to_string(t.bits)
         : t.code == halide_type_int   ? "int" + std::to_string(t.bits)
                                       : "uint" + std::to_string(t.bits);
}
} // namespace

abuffer& executor::activation(const std::string& key, const std::vector<std::string>& dims, halide_type_t type,
                              role kind) {
  auto [it, fresh] = acts_.try_emplace(key);
  if (!fresh && act_types_.at(key) != type)
    throw error("activation '" + key + "' is described as " + type_name(act_types_.at(key)) + " and as " +
                type_name(type));
  if (!fresh && act_dims_.at(key) != dims) {
    std::string a, b;
    for (const auto& d : act_dims_.at(key))
      a += " " + d;
    for (const auto& d : dims)
      b += " " + d;
    throw error("activation '" + key + "' is described with dims (" + a + " ) and (" + b + " )");
  }
  if (fresh) {
    act_dims_[key] = dims, act_types_[key] = type;
    if (kind == role::cache)
      caches_.push_back(key);
    if (kind == role::per_source)
      per_source_.push_back(key);
    if (kind == role::source_scratch)
      source_scratch_.push_back(key);
  }
  return it->second;
}

executor::plan executor::bind(const std::vector<layers::flat_step>& steps, const layer_tensors& weights,
                              const std::string& scope, bool decoder) {
  plan p;
  for (const auto& s : steps) {
    const std::string where = scope + ", " + s.function;
    if (s.operands.size() > max_step_args)
      throw error(where + ": more than " + std::to_string(max_step_args) + " operands");
    step st;
    std::vector<arg_spec> specs;
    for (const auto& o : s.operands) {
      try {
        st.args.push_back(bind_operand(o, weights, scope, decoder));
      } catch (const error& e) {
        throw error(where + ", argument '" + o.formal + "': " + e.what());
      }
      const int rank = o.rank();
      specs.push_back(rank == 0     ? scalar_arg(o.formal, dsl::halide_type_of(o.type))
                      : o.is_output ? output_arg(o.formal, dsl::halide_type_of(o.type), rank)
                                    : input_arg(o.formal, dsl::halide_type_of(o.type), rank));
    }
    st.reads_per_source = std::any_of(st.args.begin(), st.args.end(),
                                      [](const operand& o) { return !o.is_output && from_source(o.kind); });
    try {
      st.call = bind_kernel(device_, s.function, specs);
    } catch (const error& e) {
      throw error(scope + ": " + e.what());
    }
    p.push_back(std::move(st));
  }
  return p;
}

namespace {
// The weight a kernel argument names, of the type the kernel takes.
const weight_buffer& weight_of(const std::string& name, halide_type_t type, const layer_tensors& weights,
                               const std::string& scope) {
  auto w = weights.find(name);
  if (w == weights.end())
    throw error("the model has no weight '" + name + "' in " + scope);
  if (w->second.type() != type)
    throw error("weight '" + name + "' in " + scope + " holds " + type_name(w->second.type()) +
                " values, the kernel takes " + type_name(type));
  return w->second;
}
} // namespace

executor::operand executor::bind_operand(const layers::flat_operand& o, const layer_tensors& weights,
                                         const std::string& scope, bool decoder) {
  operand op{o.kind, o.is_output, dsl::halide_type_of(o.type)};
  switch (o.kind) {
  case role::weight:
    op.weight = &weight_of(o.actual, op.type, weights, scope);
    return op;
  case role::lengths:
    op.integers = &lengths_named(o.actual);
    return op;
  case role::kv_rows:
  case role::own_rows: { // a table, or whether it is the identity
    ibuffer* table = o.actual == "src_rows" ? &src_rows_ : o.actual == "tgt_rows" ? &tgt_rows_ : nullptr;
    if (!table)
      throw error("unknown k/v row table '" + o.actual + "' (src_rows or tgt_rows)");
    if (o.kind == role::kv_rows)
      op.integers = table;
    else
      op.table = table;
    return op;
  }
  case role::tokens:
    op.integers = &tokens_;
    return op;
  case role::picked: // one position per row, rows contiguous: what pick() hands out
    if (o.type == dsl::dtype::i32)
      op.integers = &pick_ids_;
    else
      op.act = &pick_lp_, op.seq_dim = 0, op.seq_is_tgt = true, op.batch_dim = 1;
    return op;
  case role::choice_input: { // filled by sample() (executor_sampling.cpp)
    if (o.actual == "draws") {
      op.act = &sample_draws_, op.seq_dim = 0, op.seq_is_tgt = true, op.batch_dim = 1;
      return op;
    }
    ibuffer* b = o.actual == "forced"      ? &sample_forced_
                 : o.actual == "banned"    ? &sample_banned_
                 : o.actual == "penalized" ? &sample_penalized_
                                           : nullptr;
    if (!b)
      throw error("unknown decode choice input '" + o.actual + "' (draws, forced, banned or penalized)");
    op.integers = b;
    return op;
  }
  case role::decode_option: {
    auto v = sample_options_.find(o.actual);
    if (v == sample_options_.end())
      throw error("unknown decoding option '" + o.actual + "'");
    op.option = &v->second;
    return op;
  }
  case role::constant:
    op.value = o.value;
    return op;
  case role::vocabulary:
    if (o.actual != "src_vocab" && o.actual != "tgt_vocab")
      throw error("unknown vocabulary '" + o.actual + "' (src_vocab or tgt_vocab)");
    op.value = o.actual == "src_vocab" ? config_.src_vocab : config_.tgt_vocab;
    return op;
  case role::model_width:
    op.value = config_.d_model;
    return op;
  case role::position:
  case role::decode_step:
  case role::layer_norm_eps:
  case role::embedding_scale:
  case role::split_positions:
  case role::frequency_step:
  case role::first_position:
  case role::target_position:
    return op;
  case role::cache:
  case role::per_source:
  case role::source_scratch:
    if (!decoder)
      throw error("'" + o.actual + "': only decoder layers keep caches and per-source tensors");
    break;
  case role::activation:
    break;
  }
  bind_activation(o, scope, decoder, op);
  return op;
}

ibuffer& executor::lengths_named(const std::string& name) {
  if (name != "src_lengths" && name != "tgt_lengths" && name != "vocab_lengths")
    throw error("unknown lengths '" + name + "' (src_lengths, tgt_lengths or vocab_lengths)");
  return name == "src_lengths" ? src_lengths_ : name == "tgt_lengths" ? tgt_lengths_ : vocab_lengths_;
}

void executor::bind_activation(const layers::flat_operand& o, const std::string& scope, bool decoder, operand& op) {
  // Keys: per phase ("encoder.", "decoder."; a name with a phase is kept as it
  // is), and per decoder layer for what persists across steps (caches,
  // cross-attention keys and values).
  const bool qualified = o.actual.rfind("encoder.", 0) == 0 || o.actual.rfind("decoder.", 0) == 0;
  const bool per_layer = o.kind == role::cache || o.kind == role::per_source;
  const std::string prefix = per_layer ? scope + "." : qualified ? "" : decoder ? "decoder." : "encoder.";
  op.act = &activation(prefix + o.actual, o.dims, op.type, o.kind);
  for (std::size_t d = 0; d < o.dims.size(); ++d) {
    if (o.dims[d] == "src" || o.dims[d] == "tgt")
      op.seq_dim = int(d), op.seq_is_tgt = o.dims[d] == "tgt";
    if (o.dims[d] == "batch")
      op.batch_dim = int(d);
  }
}

} // namespace halformer
