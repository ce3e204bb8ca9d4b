// Binding: the layer descriptions become plans of kernel calls, each operand
// resolved by its role and each kernel bound by argument name (executor.hpp).
#include "executor.hpp"

#include <algorithm>
#include <iterator>

namespace halformer {

namespace layers = dsl::layers;

layer_descriptions layer_descriptions::of(const model_config& c) {
  using dsl::hana::false_c, dsl::hana::true_c;
  return c.norm_first ? layer_descriptions{layers::flatten(layers::encoder_layer(true_c, c.activation)),
                                           layers::flatten(layers::decoder_layer(true_c, c.activation))}
                      : layer_descriptions{layers::flatten(layers::encoder_layer(false_c, c.activation)),
                                           layers::flatten(layers::decoder_layer(false_c, c.activation))};
}

executor::executor(const model_config& c, const model_weights& w, device d)
    : executor(c, w, d, layer_descriptions::of(c)) {}

executor::executor(const model_config& c, const model_weights& w, device d, const layer_descriptions& layers)
    : config_(c), weights_(w), device_(d), iface_(interface_of(d)) {
  for (int l = 0; l < c.num_encoder_layers; ++l)
    encoder_.push_back(bind(layers.encoder, w.encoder[l], "encoder layer " + std::to_string(l), false));
  for (int l = 0; l < c.num_decoder_layers; ++l) {
    plan p = bind(layers.decoder, w.decoder[l], "decoder layer " + std::to_string(l), true);
    // Steps whose outputs are all per-source depend on the source only: run once per source.
    auto per_source = [](const step& s) {
      return std::all_of(s.args.begin(), s.args.end(),
                         [](const operand& o) { return !o.is_output || o.kind == role::per_source; });
    };
    std::copy_if(p.begin(), p.end(), std::back_inserter(cross_), per_source);
    p.erase(std::remove_if(p.begin(), p.end(), per_source), p.end());
    decoder_.push_back(std::move(p));
  }
  // The model's top: embeddings, final norm, logits and what decoding reads of them.
  const halide_type_t f32 = f32_type, i32 = i32_type;
  embedding_call_ = bind_kernel(d, "embedding",
                                {input_arg("table", f32, 2), input_arg("ids", i32, 2), scalar_arg("scale", f32),
                                 scalar_arg("offset", i32), output_arg("out", f32, 3)});
  final_norm_call_ = bind_kernel(d, "layernorm",
                                 {input_arg("x", f32, 3), input_arg("gamma", f32, 1), input_arg("beta", f32, 1),
                                  scalar_arg("eps", f32), output_arg("out", f32, 3)});
  logits_call_ = bind_kernel(
      d, "logits", {input_arg("x", f32, 3), input_arg("w", f32, 2), input_arg("b", f32, 1), output_arg("out", f32, 3)});
  log_softmax_call_ =
      bind_kernel(d, "log_softmax",
                  {input_arg("x", f32, 3), input_arg("lengths", i32, 1), scalar_arg("causal", bool_type),
                   scalar_arg("offset", i32), output_arg("out", f32, 3)});
  greedy_pick_call_ = bind_kernel(d, "greedy_pick",
                                  {input_arg("x", f32, 3), output_arg("ids", i32, 2), output_arg("log_probs", f32, 2)});
}

fbuffer& executor::activation(const std::string& key, const std::vector<std::string>& dims, bool cache) {
  auto [it, fresh] = acts_.try_emplace(key);
  if (fresh) {
    act_dims_[key] = dims;
    if (cache)
      caches_.push_back(key);
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
      const int rank = int(o.dims.size());
      specs.push_back(rank == 0     ? scalar_arg(o.formal, argument_type(o.type))
                      : o.is_output ? output_arg(o.formal, argument_type(o.type), rank)
                                    : input_arg(o.formal, argument_type(o.type), rank));
    }
    try {
      st.call = bind_kernel(device_, s.function, specs);
    } catch (const error& e) {
      throw error(scope + ": " + e.what());
    }
    p.push_back(std::move(st));
  }
  return p;
}

executor::operand executor::bind_operand(const layers::flat_operand& o, const layer_tensors& weights,
                                         const std::string& scope, bool decoder) {
  operand op{o.kind, o.is_output, argument_type(o.type)};
  switch (o.kind) {
  case role::weight: {
    auto w = weights.find(o.actual);
    if (w == weights.end())
      throw error("the model has no weight '" + o.actual + "' in " + scope);
    op.weight = &w->second;
    return op;
  }
  case role::lengths:
    if (o.actual != "src_lengths" && o.actual != "tgt_lengths")
      throw error("unknown lengths '" + o.actual + "' (src_lengths or tgt_lengths)");
    op.lengths = o.actual == "src_lengths" ? &src_lengths_ : &tgt_lengths_;
    return op;
  case role::constant:
    op.value = o.value;
    return op;
  case role::position:
  case role::layer_norm_eps:
    return op;
  case role::cache:
  case role::per_source:
    if (!decoder)
      throw error("'" + o.actual + "': only decoder layers keep caches and per-source tensors");
    break;
  case role::activation:
    break;
  }
  // Keys: per phase ("encoder.", "decoder."), and per decoder layer for what
  // persists across steps (caches, cross-attention keys and values).
  const bool per_layer = o.kind == role::cache || o.kind == role::per_source;
  op.act = &activation((per_layer ? scope + "." : std::string(decoder ? "decoder." : "encoder.")) + o.actual, o.dims,
                       o.kind == role::cache);
  for (std::size_t d = 0; d < o.dims.size(); ++d) {
    if (o.dims[d] == "src" || o.dims[d] == "tgt")
      op.seq_dim = int(d), op.seq_is_tgt = o.dims[d] == "tgt";
    if (o.dims[d] == "batch")
      op.batch_dim = int(d);
  }
  return op;
}

} // namespace halformer
