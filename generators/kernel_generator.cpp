// The one generator: any kernel of dsl/kernels.hpp, chosen by `kernel=<name>`.
//
// configure() adds one Halide Input per entry of the kernel's inputs() and one
// Output per entry of its outputs(), in that order, with their element types and
// ranks (as Halide's test/generator/configure_generator.cpp does), so the DSL is
// the only place an interface is written and the compiled function's arguments
// carry the DSL's names (its *_metadata() says so to every caller). generate()
// binds them and lowers the algorithm; schedule() applies the kernel's schedule
// with the knob values for the target (generators never contain schedule code):
// on a CPU, one specialize() branch per distinct knob set of the shape buckets
// (schedules/buckets.hpp), so one pipeline serves prefill and decode calls.
#include "prefetch_hint.hpp"

#include "halformer/dsl/halide_type.hpp"
#include "halformer/dsl/kernels.hpp"
#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/kernels.hpp"

#include <Halide.h>

namespace halformer::generators {

namespace {
Halide::Type halide_type(dsl::dtype t) { return Halide::Type(dsl::halide_type_of(t)); }
} // namespace

class Kernel : public Halide::Generator<Kernel> {
public:
  GeneratorParam<std::string> kernel{"kernel", ""};
  // JSON knob values per ISA and shape bucket (schedules/knobs/*.json, or the
  // knob file the build chose: tuner/export_knobs.hpp).
  GeneratorParam<std::string> knob_file{"knob_file", ""};
  // "name:value/..." overrides (the tuner's candidates): one knob set for every shape.
  GeneratorParam<std::string> knobs{"knobs", ""};
  // The knob file of the amx target (schedules::amx_tiles), instead of knob_file and
  // knobs: its AMX form is compiled into every branch of the GEMM and pruned where
  // Halide proves it unused, which some knob sets' tiles defeat ("Found non-tile
  // operations for AMX tile allocation"); the hand defaults compile.
  GeneratorParam<std::string> amx_knob_file{"amx_knob_file", ""};
  // "t:128/batch:8/...": extent estimates by dimension (and scalar values by
  // name), for Halide's autoschedulers.
  GeneratorParam<std::string> estimates{"estimates", ""};
  // The x86 prefetch instruction of the kernel's prefetches (nta, t0, t1, t2):
  // applied to the objects by the executable's main (generator_main.cpp).
  GeneratorParam<prefetch_hint> prefetch_hint_{"prefetch_hint", default_prefetch_hint, prefetch_hint_names()};

  void configure() {
    if (std::string(kernel).empty())
      throw std::invalid_argument("the halformer kernel generator needs kernel=<name>");
    interface_ = dsl::kernels::interface_of(std::string(kernel));
    for (const auto& a : interface_.inputs)
      if (a.dims.empty())
        scalars_.push_back(add_scalar(a));
      else
        buffers_.push_back(add_input<Buffer<>>(a.name, halide_type(a.type), a.rank()));
    for (const auto& a : interface_.outputs)
      outputs_.push_back(add_output<Buffer<>>(a.name, halide_type(a.type), int(a.dims.size())));
  }

  void generate() {
    const std::string name{interface_.name}, section{interface_.schedule};
    const auto& decls = schedules::knobs_of(section, get_target());
    const bool amx = schedules::amx_tiles(get_target()) && !amx_knob_file.value().empty();
    auto sets = schedules::load_kernel_knobs(name, section, decls, get_target(), amx ? amx_knob_file : knob_file,
                                             amx ? std::string() : std::string(knobs));
    if (schedules::family_of(get_target()) == schedules::family::gpu)
      sets.by_bucket.clear(); // GPU schedules have one knob set
    ctx_.estimates = schedules::parse_overrides(estimates);
    ctx_.int8_products = schedules::int8_products(get_target());
    ctx_.amx_tiles = schedules::amx_tiles(get_target());
    bind_inputs();
    if (!sets.by_bucket.empty() && !(ctx_.has_extent("t") && ctx_.has_extent("batch")))
      throw std::invalid_argument(name + ": the knob file has shape-bucket knobs, but the kernel has no t "
                                         "and batch dimensions to tell buckets apart");
    branches_ = schedules::plan_branches(name, decls, sets.by_bucket, sets.general,
                                         sets.by_bucket.empty() ? Halide::Expr() : ctx_.extent("t"),
                                         sets.by_bucket.empty() ? Halide::Expr() : ctx_.extent("batch"));
    ctx_.options = branches_.back().knobs.all(); // algorithm knobs (attention's kv_chunk), equal in every branch
    dsl::kernels::visit(interface_.name, [&](const auto& k) {
      std::size_t i = 0;
      dsl::hana::for_each(k.outputs(),
                          [&](const auto& r) { emit(ctx_.lower(r.value), r.value.op.name, *outputs_[i++]); });
    });
  }

  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    std::vector<schedules::output> outs;
    for (std::size_t i = 0; i < outputs_.size(); ++i)
      outs.push_back({stages_[i], Halide::Func(*outputs_[i])});
    const auto& section = schedules::sections(schedules::family_of(get_target())).at(std::string(interface_.schedule));
    // Specialized branches first: a specialization inherits the directives made
    // before it, so the general branch (the last) is scheduled after them.
    for (const auto& b : branches_)
      section.apply(ctx_, outs, get_target(), b.knobs,
                    b.condition.defined() ? schedules::bucket_scope(b.condition) : schedules::bucket_scope());
  }

private:
  // A scalar Input of the leaf's type; its estimate comes from `estimates` by name.
  Halide::GeneratorInput<Halide::Expr>* add_scalar(const dsl::argument& a) {
    return add_input<Halide::Expr>(a.name, halide_type(a.type));
  }

  void bind_inputs() {
    std::size_t b = 0, s = 0;
    for (const auto& a : interface_.inputs) {
      if (!a.dims.empty()) {
        ctx_.bind_buffer(a, *buffers_[b++]);
        continue;
      }
      auto* in = scalars_[s++];
      if (!ctx_.estimates.empty()) {
        auto e = ctx_.estimates.find(a.name);
        in->set_estimate(Halide::cast(halide_type(a.type), e != ctx_.estimates.end() ? e->second : 0));
      }
      ctx_.bind_scalar(a, Halide::Expr(*in));
    }
  }

  // out(dims...) = l(dims...), with out's extents constrained to the dimension symbols.
  void emit(const dsl::lowered& l, const std::string& stage, Halide::GeneratorOutput<Buffer<>>& out) {
    std::vector<Halide::Var> vars;
    for (const auto& d : l.dims)
      vars.push_back(ctx_.var(d));
    out(vars) = l.f(vars);
    for (std::size_t i = 0; i < l.dims.size(); ++i) {
      out.dim(i).set_min(0);
      out.dim(i).set_extent(ctx_.extent(l.dims[i]));
      if (auto e = ctx_.estimates.find(l.dims[i]); e != ctx_.estimates.end())
        out.dim(i).set_estimate(0, e->second);
    }
    stages_.push_back(stage);
  }

  dsl::kernels::interface interface_;
  std::vector<Halide::GeneratorInput<Buffer<>>*> buffers_;
  std::vector<Halide::GeneratorInput<Halide::Expr>*> scalars_;
  std::vector<Halide::GeneratorOutput<Buffer<>>*> outputs_;
  std::vector<std::string> stages_; // per output: the DSL stage it holds
  dsl::lowering ctx_;
  std::vector<schedules::bucket_branch> branches_; // one per distinct knob set, the general one last
};

} // namespace halformer::generators

HALIDE_REGISTER_GENERATOR(halformer::generators::Kernel, kernel)
