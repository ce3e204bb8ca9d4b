// Lowering: a DSL expression becomes Halide Funcs, one per named stage.
//
// Each dimension symbol is one Halide Var (named after the symbol) with one extent.
// The first input bound with a dimension defines its extent; every later input or
// output carrying the same symbol gets a buffer constraint to equal it, so a caller
// passing inconsistent shapes gets a Halide error code and message, not a wrong
// answer or a read out of bounds.
#pragma once

#include "halformer/dsl/expr.hpp"
#include "halformer/dsl/panels.hpp"

#include <Halide.h>

#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>
#include <vector>

namespace halformer::dsl {

// What attention's masks write into logits that may not be attended: finite, so
// that fast-math code never sees inf - inf, and far below any real logit.
inline constexpr float masked_logit = -1e30f;

struct lowered {
  Halide::Func f;
  std::vector<std::string> dims; // innermost first
};

class lowering {
public:
  // Algorithm parameters that shape the graph (e.g. attention's key-chunk size).
  std::map<std::string, int> options;
  // Extent estimates per dimension symbol (and values per scalar param name) for
  // Halide's autoschedulers; empty for hand-scheduled builds.
  std::map<std::string, int> estimates;
  // How int8 x int8 dot products sum (lower_quantize.hpp): int16 pairs, unsigned x signed
  // byte quads (x86 vpdpbusd) or signed ones (AArch64 sdot); the generator sets it from the target.
  enum class int8_form { pairs, unsigned_quads, signed_quads };
  int8_form int8_products = int8_form::pairs;
  // Whether an int8 input's GEMM sums byte quads, its stored input (lower_quantize.hpp).
  bool int8_quads(const Halide::Type& x, const void* w_sums) const;
  std::string int8_padded_stage(const std::string& x) const;
  // Whether int8 and bfloat16 GEMMs over panels get an AMX form beside their
  // vector one (lower_amx.hpp); the generator sets it from the target.
  bool amx_tiles = false;
  // The condition GEMM stage `name` takes its AMX sums under; undefined: it has none.
  Halide::Expr amx_condition(const std::string& name) const;

  // ---- binding --------------------------------------------------------------------

  template <class Op, class S, class E, class Buffer>
  requires requires(Buffer& b) { b.dim(0); }
  void bind(const tensor<Op, S, E>& leaf, Buffer& buf) {
    static_assert(std::is_same_v<Op, op::input>, "bind: only input leaves bind to buffers");
    bind_buffer(describe(leaf), buf);
  }

  // A buffer input by its description (name and dimension symbols).
  template <class Buffer> void bind_buffer(const argument& leaf, Buffer& buf);
  // A weight stored in panels (panels.hpp), lower_bind.hpp.
  template <class Buffer> void bind_panels(const argument& leaf, Buffer& buf);

  // A buffer input's parameter, for a schedule's prefetch of it; undefined when
  // the input was bound to a buffer without one.
  Halide::Parameter input_parameter(const std::string& name) const {
    auto p = input_params_.find(name);
    return p == input_params_.end() ? Halide::Parameter() : p->second;
  }

  // A scalar generator Input: bound, and given an estimate when autoscheduling.
  template <class Op, class E, class T>
  requires std::is_arithmetic_v<T>
  void bind(const tensor<Op, hana::tuple<>, E>& leaf, Halide::GeneratorInput<T>& in) {
    if (!estimates.empty()) {
      auto e = estimates.find(leaf.op.name);
      in.set_estimate(T(e != estimates.end() ? e->second : 0));
    }
    bind(leaf, Halide::Expr(in));
  }

  template <class Op, class E> void bind(const tensor<Op, hana::tuple<>, E>& leaf, Halide::Expr value) {
    static_assert(std::is_same_v<Op, op::param>, "bind: scalars bind to param leaves");
    bind_scalar(describe(leaf), std::move(value));
  }
  // A scalar by its description; an extent_param's value is its dimension's extent.
  void bind_scalar(const argument& leaf, Halide::Expr value) {
    if (!leaf.extent_of.empty() && !extents_.emplace(leaf.extent_of, value).second)
      throw std::logic_error("bind " + leaf.name + ": an input already defines the extent of " + leaf.extent_of);
    scalars_[leaf.name] = std::move(value);
  }

  Halide::Var var(const std::string& dim) const { return Halide::Var(dim); }
  Halide::Expr extent(const std::string& dim) const {
    auto e = extents_.find(dim);
    if (e == extents_.end())
      throw std::logic_error("lowering: no input defines the extent of dimension '" + dim + "'");
    return e->second;
  }
  bool has_extent(const std::string& dim) const { return extents_.count(dim) != 0; }

  // Whether the attention call takes the direct algorithm (lower_attention.hpp):
  // a decode step (its `decode_step` scalar) or a call of one query. Not by the
  // query count alone: the choice must not depend on a batch's padding, or a
  // sentence's bits would differ alone and in a batch (tests/runtime/
  // parity_test.cpp), and a 4-token source's encoder has t = 4 as a source's 4
  // beams in cross-attention do. A decode step's t is the beam count, which no
  // padding changes; one query passes, as the encoder sees t = 1 only for a
  // one-token source, whose one key gives both algorithms exactly v. A source's
  // 4 beams (Zen 5, 2 threads, 8 heads, 128 keys, 32 sources): 1.24 ms chunked,
  // whose per-head transposition of the keys gathers them one by one, 0.78
  // direct.
  Halide::Expr attention_takes_direct() const {
    if (!attention_decode_step_.defined())
      throw std::logic_error("lowering: attention_takes_direct() before an attention was lowered");
    return extent("t") <= 1 || attention_decode_step_;
  }
  // The lowered attention's own_rows scalar (dsl::attention), a boolean Param: a
  // branch specialised on it reads k and v by address.
  Halide::Expr attention_own_rows() const {
    if (!attention_own_rows_.defined())
      throw std::logic_error("lowering: attention_own_rows() before an attention was lowered");
    return attention_own_rows_;
  }

  // ---- stages -------------------------------------------------------------------

  Halide::Func stage(const std::string& name) const {
    auto s = stages_.find(name);
    if (s == stages_.end()) {
      std::string known;
      for (const auto& [n, l] : stages_)
        known += " " + n;
      throw std::logic_error("schedule refers to unknown stage '" + name + "'; stages:" + known);
    }
    return s->second.f;
  }
  // The name stage `f` is registered under (the inverse of stage()).
  std::string stage_name(const Halide::Func& f) const {
    for (const auto& [n, l] : stages_)
      if (l.f.function().same_as(f.function()))
        return n;
    throw std::logic_error("schedule asks for the stage name of Func '" + f.name() + "', which is not a stage");
  }
  Halide::RDom rdom(const std::string& stage_name) const {
    auto r = rdoms_.find(stage_name);
    if (r == rdoms_.end())
      throw std::logic_error("stage '" + stage_name + "' has no reduction");
    return r->second;
  }
  // True when the contraction computed by `acc` (a stage, by identity) has an
  // innermost reduced dimension of whole blocks (contraction_domain's `block`), so
  // no block reads past its end: a schedule specializes on it to drop the
  // zero-padded last block, whose gathers' addresses LLVM would otherwise compute
  // (and spill) once per output tile. Stages without blocks always do.
  Halide::Expr whole_blocks(const Halide::Func& acc) const {
    auto w = whole_blocks_.find(stage_name_of({acc, {}}));
    return w == whole_blocks_.end() ? Halide::Expr(true) : w->second;
  }
  bool has_stage(const std::string& name) const { return stages_.count(name) != 0; }

  // ---- lowering -----------------------------------------------------------------

  template <class Op, class S, class E, class... A> lowered lower(const tensor<Op, S, E, A...>& t) {
    constrain_panels();
    if constexpr (std::is_same_v<Op, op::input>) {
      auto in = inputs_.find(t.op.name);
      if (in == inputs_.end())
        throw std::logic_error("lowering: input '" + t.op.name + "' was not bound");
      return in->second;
    } else if constexpr (std::is_same_v<Op, op::param>) {
      Halide::Func f(t.op.name + "_param");
      f() = scalar(t.op.name);
      return {f, {}};
    } else {
      if (auto s = stages_.find(t.op.name); s != stages_.end())
        return s->second;
      std::vector<lowered> args;
      hana::for_each(t.args, [&](const auto& a) { args.push_back(lower(a)); });
      const auto names = dim_names(S{});
      std::vector<std::string> out{names.begin(), names.end()};
      lowered result{Halide::Func(t.op.name), out};
      if constexpr (is_dot_product<Op, std::decay_t<decltype(t.args)>>())
        build_dot_product_contract(t.op, result, args);
      else
        build(t.op, result, args, t.args);
      stages_[t.op.name] = result;
      return result;
    }
  }

  Halide::Expr scalar(const std::string& name) const {
    auto s = scalars_.find(name);
    if (s == scalars_.end())
      throw std::logic_error("lowering: param '" + name + "' was not bound");
    return s->second;
  }

private:
  struct panel_input {
    Halide::Func stored;
    std::vector<std::string> dims; // logical, (inputs..., outputs...)
    int inputs;
    int group; // inputs per output in one 64-byte group (panels::group_inputs)
  };
  std::map<std::string, panel_input> panel_inputs_;
  std::vector<std::function<void()>> pending_panels_;
  void constrain_panels() {
    for (auto& c : pending_panels_)
      c();
    pending_panels_.clear();
  }
  // The panel input whose logical view is `l`, if it is one.
  const panel_input* panels_of(const lowered& l) const {
    for (const auto& [n, p] : panel_inputs_)
      if (inputs_.at(n).f.function().same_as(l.f.function()))
        return &p;
    return nullptr;
  }

  std::map<std::string, Halide::Expr> extents_;
  std::map<std::string, lowered> inputs_;
  std::map<std::string, Halide::Parameter> input_params_;
  std::map<std::string, Halide::Expr> scalars_;
  std::map<std::string, lowered> stages_;
  std::map<std::string, Halide::RDom> rdoms_;
  std::map<std::string, Halide::Expr> whole_blocks_; // by stage: see whole_blocks()

  // A new Func registered as stage `name` (Halide may uniquify Func::name(); the
  // registry keeps the name schedules use).
  Halide::Func new_stage(const std::string& name) {
    Halide::Func f(name);
    stages_[name] = {f, {}};
    return f;
  }

  // Pure Vars of a lowered tensor, in its order.
  std::vector<Halide::Var> vars(const lowered& l) const {
    std::vector<Halide::Var> v;
    for (const auto& d : l.dims)
      v.push_back(var(d));
    return v;
  }
  std::vector<Halide::Expr> exprs(const lowered& l) const {
    std::vector<Halide::Expr> v;
    for (const auto& d : l.dims)
      v.push_back(var(d));
    return v;
  }
  // Calls `l` with each dimension bound to `at[dim]` if given, else its Var.
  Halide::Expr call(const lowered& l, const std::map<std::string, Halide::Expr>& at = {}) const {
    std::vector<Halide::Expr> a;
    for (const auto& d : l.dims) {
      auto it = at.find(d);
      a.push_back(it != at.end() ? it->second : Halide::Expr(var(d)));
    }
    return l.f(a);
  }
  Halide::Expr scalar_of(const lowered& l) const { return l.f(); }

  // The dimensions a contraction sums over: those of both operands that the result lacks.
  std::vector<std::string> reduced_dims(const lowered& r, const lowered& lhs, const lowered& rhs) const {
    std::vector<std::string> reduced;
    for (const auto& d : lhs.dims)
      if (std::find(rhs.dims.begin(), rhs.dims.end(), d) != rhs.dims.end() &&
          std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end())
        reduced.push_back(d);
    return reduced;
  }
  // The reduction of a contraction, and over whole dims (lower_domains.hpp).
  std::map<std::string, Halide::Expr> contraction_domain(const std::string& name, const lowered& r, const lowered& lhs,
                                                         const lowered& rhs, int block = 1);
  std::map<std::string, Halide::Expr> reduction_over(const std::string& name, const std::vector<std::string>& dims);
  template <class Args> void build(const op::contract& o, lowered& r, std::vector<lowered>& a, const Args&) {
    const bool has_bias = o.third == op::contract_third::bias;
    if (const panel_input* w = panels_of(a[1])) {
      build_panel_contract(o, r, a[0], *w, has_bias ? &a[2] : nullptr, nullptr);
      return;
    }
    const auto at = contraction_domain(o.name, r, a[0], a[1]);
    r.f(vars(r)) = has_bias ? call(a[2]) : Halide::Expr(0.0f);
    r.f(vars(r)) += call(a[0], at) * call(a[1], at);
  }
  // A contraction of int8 or bfloat16 operands.
  template <class Op, class Args> static constexpr bool is_dot_product() {
    if constexpr (std::is_same_v<Op, op::contract>)
      return dtype_v<std::decay_t<decltype(hana::front(std::declval<Args>()))>> != dtype::f32;
    else
      return false;
  }
  // int8 x int8 and bfloat16 x bfloat16 (lower_quantize.hpp).
  static constexpr int dot_product_block = 64;
  void build_dot_product_contract(const op::contract& o, lowered& r, std::vector<lowered>& a);
  void build_panel_contract(const op::contract& o, lowered& r, const lowered& x, const panel_input& w,
                            const lowered* bias, const lowered* w_sums);
  Halide::Expr at_panel_lanes(const lowered& per_output, const std::string& out0, const Halide::Var& panel,
                              const Halide::Var& lane);
  bool takes_amx_form(const panel_input& w, bool quads, bool bf16) const;
  Halide::Func amx_sums(const std::string& name, const lowered& x, const panel_input& w,
                        const std::vector<std::string>& rows, const Halide::Expr& stored_panels);
  std::map<std::string, Halide::Expr> amx_conditions_;
  Halide::Expr pair_sums(const std::string& name, const Halide::Var& pair, const std::vector<Halide::Expr>& lanes,
                         const Halide::Expr& xv, const Halide::Expr& wv);
  lowered zero_padded(const lowered& l, const std::string& dim);
  // `l` reading zeros past the end of `dim` (a boundary wrapper, no stage).
  lowered zeros_past(const lowered& l, const std::string& dim) const {
    Halide::Region inside;
    for (const auto& d : l.dims)
      inside.push_back(d == dim ? Halide::Range(0, extent(d)) : Halide::Range());
    return {Halide::BoundaryConditions::constant_exterior(l.f, Halide::cast(l.f.type(), 0), inside), l.dims};
  }
  lowered int8_as_int16(const lowered& l);
  lowered int8_as_uint8(const lowered& l);
  lowered int8_quad_operand(const lowered& l);
  Halide::Expr int8_quad_start(const Halide::Expr& w_sum) const;
  std::string stage_name_of(const lowered& l) const;
  template <class Args> void build(const op::transpose&, lowered& r, std::vector<lowered>& a, const Args&) {
    r.f(vars(r)) = call(a[0]);
  }
  template <class Args> void build(const op::add&, lowered& r, std::vector<lowered>& a, const Args&) {
    r.f(vars(r)) = call(a[0]) + call(a[1]);
  }
  template <class Args> void build(const op::add_broadcast&, lowered& r, std::vector<lowered>& a, const Args&) {
    r.f(vars(r)) = call(a[0]) + call(a[1]);
  }
  template <class Args> void build(const op::scale&, lowered& r, std::vector<lowered>& a, const Args&) {
    r.f(vars(r)) = call(a[0]) * scalar_of(a[1]);
  }
  template <class Args> void build(const op::unary& o, lowered& r, std::vector<lowered>& a, const Args&) {
    Halide::Expr x = call(a[0]);
    if (o.fn == op::activation::relu)
      r.f(vars(r)) = Halide::max(x, 0.0f);
    else if (o.fn == op::activation::silu) // x sigmoid(x), as torch.nn.functional.silu
      r.f(vars(r)) = x / (1.0f + Halide::exp(-x));
    else // exact GELU, as PyTorch's default: x/2 (1 + erf(x / sqrt 2))
      r.f(vars(r)) = 0.5f * x * (1.0f + Halide::erf(x * float(M_SQRT1_2)));
  }

  // Mask shared by softmax and attention (see expr.hpp).
  Halide::Expr valid(Halide::Expr key, Halide::Expr query, Halide::Expr length, Halide::Expr causal,
                     Halide::Expr offset) const {
    return key < length && (causal == 0 || key <= query + offset);
  }

  // Row operations: lower_rows.hpp.
  template <class Args> void build(const op::softmax& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::layernorm& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::gather& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::sinusoidal&, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::argmax& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::max_log_prob& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::chunk_max& o, lowered& r, std::vector<lowered>& a, const Args&);

  // Random sampling (lower_sampling.hpp).
  template <class Args> void build(const op::sample_token& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::token_log_prob& o, lowered& r, std::vector<lowered>& a, const Args&);
  struct sampling_row;
  struct sampling_kept;
  using expr = Halide::Expr;
  using sampling_term = std::function<expr(const expr&)>;
  Halide::Func sampling_sum(const sampling_row& s, const std::string& stage, const expr& extent,
                            const sampling_term& f);
  expr sampling_search(const sampling_row& s, const std::string& name, const expr& active, expr lo, expr hi,
                       const expr& target, const sampling_term& term);
  Halide::Func sampling_logits(const sampling_row& s, const std::string& name, const lowered& x, const lowered& banned,
                               const lowered& penalized, const expr& penalty);
  sampling_kept sampling_thresholds(const sampling_row& s, const std::string& n, const expr& k, const expr& p);
  expr sampling_draw(const sampling_row& s, const std::string& n, const sampling_kept& kept, const expr& u);

  // Quantization (lower_quantize.hpp).
  template <class Args> void build(const op::quant_step& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::quantize& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::dequantize& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::to_bfloat16& o, lowered& r, std::vector<lowered>& a, const Args&);
  template <class Args> void build(const op::to_float16& o, lowered& r, std::vector<lowered>& a, const Args&);

  // Attention: lower_attention.hpp.
  template <class Args> void build(const op::attention& o, lowered& r, std::vector<lowered>& a, const Args&);
  struct attention_operands;
  Halide::Expr attention_decode_step_; // the lowered attention's decode_step scalar
  Halide::Expr attention_own_rows_;    // and its own_rows scalar
  struct chunk_keys;
  Halide::Func chunk_logits(const std::string& name, const chunk_keys& keys);
  Halide::Expr attention_chunked(const std::string& name, const attention_operands& at);
  Halide::Expr attention_rows(const std::string& name, const chunk_keys& keys, int lanes);
  Halide::Expr attention_direct(const std::string& name, const attention_operands& at, int lanes);
};

} // namespace halformer::dsl

#include "halformer/dsl/lower_amx.hpp"
#include "halformer/dsl/lower_attention.hpp"
#include "halformer/dsl/lower_bind.hpp"
#include "halformer/dsl/lower_domains.hpp"
#include "halformer/dsl/lower_panels.hpp"
#include "halformer/dsl/lower_quantize.hpp"
#include "halformer/dsl/lower_rows.hpp"
#include "halformer/dsl/lower_sampling.hpp"
