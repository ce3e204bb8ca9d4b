// What Halide 21's AMX lowering (MemoryType::AMXTile, Target::AVX512_SapphireRapids;
// src/ExtractTileOperations.cpp) makes of a GEMM over halformer's weight panels
// (dsl/panels.hpp), how fast, against the AMX peak measured beside it: the
// forms a kernel can be written in, before the kernels use AMX.
// - panel_view: the panels as one 3-D buffer (group member, lane, group + panel x
//   groups): the tile pattern matcher needs the panel's offset inside the group
//   coordinate; the kernels' 4-D weight (panel its own dim) puts it outside,
//   and Halide then rejects the store ("Store to AMX tile allocation of a
//   non-tile value").
// - packed: the kernels' 4-D weight, each panel copied (64-byte rows) into a
//   3-D buffer once per block of `--block` row tiles, which the tiles read.
// - flattened: the kernels' 4-D weight copied whole into the 3-D view once per
//   call (at root, in parallel), then read as panel_view reads it.
// One accumulator tile per allocation (16 rows x 16 outputs), the reduction in
// steps of 64 bytes; rows outermost in parallel blocks. JIT-compiled; int8 is
// u8 x s8 -> s32 (vpdpbusd's and the int8 kernels' form), bfloat16 -> float32.
// Prints JSON.
#include "halformer/dsl/panels.hpp"
#include "halformer/timing.hpp"

#include "halformer/machine.hpp"

#include <CLI/CLI.hpp>
#include <Halide.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

namespace {

using namespace Halide;

namespace panels = halformer::dsl::panels;
// A tile step reads one 64-byte group line of a panel (dsl/panels.hpp).
constexpr int lanes = panels::lanes, tile_rows = 16, step_bytes = panels::lanes * panels::group_bytes;

struct shape {
  int rows, inputs, outputs;
  int panels() const { return outputs / lanes; }
};

// Inputs per 4-byte group of the panels: 4 (int8), 2 (bfloat16).
int group_of(bool bf16) { return panels::group_inputs(bf16 ? 2 : 1); }

struct operands {
  Buffer<> x, w; // x (inputs, rows); w (member, lane, group, panel)
  int group;
};

operands random_operands(const shape& s, bool bf16) {
  const int g = group_of(bf16);
  operands o{Buffer<>(bf16 ? BFloat(16) : UInt(8), {s.inputs, s.rows}),
             Buffer<>(bf16 ? BFloat(16) : Int(8), {g, lanes, s.inputs / g, s.panels()}), g};
  std::mt19937 rng(7);
  if (bf16) {
    std::uniform_real_distribution<float> d(-1, 1);
    Buffer<bfloat16_t>(o.x).for_each_value([&](bfloat16_t& v) { v = bfloat16_t(d(rng)); });
    Buffer<bfloat16_t>(o.w).for_each_value([&](bfloat16_t& v) { v = bfloat16_t(d(rng)); });
  } else {
    Buffer<uint8_t>(o.x).for_each_value([&](uint8_t& v) { v = uint8_t(1 + rng() % 255); });
    Buffer<int8_t>(o.w).for_each_value([&](int8_t& v) { v = int8_t(int(rng() % 255) - 127); });
  }
  return o;
}

// A form's inputs: x (inputs, rows) and the weight, of rank 3 (the panel view)
// or 4 (the kernels' panels), with the panels' constant strides (the tile
// matcher needs them).
struct inputs {
  ImageParam x, w;
  inputs(bool bf16, int weight_rank)
      : x(bf16 ? BFloat(16) : UInt(8), 2, "x"), w(bf16 ? BFloat(16) : Int(8), weight_rank, "w") {
    w.dim(1).set_stride(group_of(bf16)).dim(2).set_stride(lanes * group_of(bf16));
  }
  Callable compile(const Func& out, const Target& t) { return Func(out).compile_to_callable({x, w}, t); }
};

// out(lane, panel, row) = the sums over a 1-D reduction in 64-byte steps, one
// AMX tile per (panel, 16 rows), computed in the loop over row tiles "ro"
// (`rows_inner`) or over panels "panel"; `weight(k, lane, panel)` reads the
// weights as the form does.
Func tile_gemm(const ImageParam& x, const shape& s, bool bf16, const std::function<Expr(Expr, Var, Var)>& weight,
               bool rows_inner) {
  const Type acc = bf16 ? Float(32) : Int(32);
  Var lane("lane"), panel("panel"), row("row"), ro("ro"), ri("ri"), rii("rii");
  RDom k(0, s.inputs, "k");
  Func sums("sums"), out("out");
  sums(lane, panel, row) = cast(acc, 0);
  sums(lane, panel, row) += cast(acc, x(k, row)) * cast(acc, weight(k, lane, panel));
  out(lane, panel, row) = sums(lane, panel, row);
  out.bound(lane, 0, lanes).bound(panel, 0, s.panels()).bound(row, 0, s.rows);
  RVar ko("ko"), ki("ki");
  const Var tile_loop = rows_inner ? ro : panel;
  sums.compute_at(out, tile_loop)
      .store_in(MemoryType::AMXTile)
      .update()
      .split(row, ro, rii, tile_rows)
      .split(k, ko, ki, step_bytes / (bf16 ? 2 : 1))
      .reorder(ki, lane, rii, ko, panel, ro)
      .atomic()
      .vectorize(ki)
      .vectorize(lane)
      .vectorize(rii);
  sums.compute_at(out, tile_loop).split(row, ro, rii, tile_rows).vectorize(lane).vectorize(rii);
  out.split(row, ro, ri, tile_rows).reorder(lane, ri, panel, ro).vectorize(lane).vectorize(ri);
  return out;
}

Callable panel_view_form(const shape& s, bool bf16, const Target& t) {
  const int g = group_of(bf16), groups = s.inputs / g;
  inputs in(bf16, 3);
  Func out = tile_gemm(
      in.x, s, bf16, [&](Expr k, Var lane, Var panel) { return in.w(k % g, lane, k / g + panel * groups); }, false);
  out.parallel(Var("ro")); // rows outer: a row tile's inputs stay in L1 while the panels stream from L2
  return in.compile(out, t);
}

Callable packed_form(const shape& s, bool bf16, int block, const Target& t) {
  const int g = group_of(bf16);
  inputs in(bf16, 4);
  Func packed("packed");
  Var m("m"), lane("lane"), group("group"), panel("panel"), ml("ml"), rb("rb"), ro("ro");
  packed(m, lane, group, panel) = in.w(m, lane, group, panel);
  Func out = tile_gemm(
      in.x, s, bf16, [&](Expr k, Var l, Var p) { return packed(k % g, l, k / g, p); }, true);
  out.split(ro, rb, ro, block).reorder(ro, panel, rb).parallel(rb);
  packed.compute_at(out, panel).fuse(m, lane, ml).vectorize(ml);
  return in.compile(out, t);
}

Callable flattened_form(const shape& s, bool bf16, const Target& t) {
  const int g = group_of(bf16), groups = s.inputs / g;
  inputs in(bf16, 4);
  Func flat("flat");
  Var m("m"), lane("lane"), at("at"), ml("ml");
  flat(m, lane, at) = in.w(m, lane, at % groups, at / groups);
  Func out = tile_gemm(
      in.x, s, bf16, [&](Expr k, Var l, Var p) { return flat(k % g, l, k / g + p * groups); }, false);
  out.parallel(Var("ro"));
  flat.compute_root().fuse(m, lane, ml).vectorize(ml).parallel(at, 64);
  return in.compile(out, t);
}

// The largest |error| over sampled outputs against a float64 reference, and
// the bound it must stay under: 0 for int8 (exact), float32 rounding of the
// sums of |products| for bfloat16 (whose products are exact in float32).
std::pair<double, double> verify(const operands& o, const Buffer<>& out, const shape& s, bool bf16) {
  double worst = 0, bound = 0;
  for (int r = 0; r < s.rows; r += 7)
    for (int n = 0; n < s.outputs; n += 5) {
      double sum = 0, magnitude = 0;
      for (int k = 0; k < s.inputs; ++k) {
        const int at[4] = {k % o.group, n % lanes, k / o.group, n / lanes};
        const double a = bf16 ? double(Buffer<bfloat16_t>(o.x)(k, r)) : double(Buffer<uint8_t>(o.x)(k, r));
        const double b = bf16 ? double(Buffer<bfloat16_t>(o.w)(at)) : double(Buffer<int8_t>(o.w)(at));
        sum += a * b, magnitude += std::abs(a * b);
      }
      const double got =
          bf16 ? Buffer<float>(out)(n % lanes, n / lanes, r) : Buffer<int32_t>(out)(n % lanes, n / lanes, r);
      worst = std::max(worst, std::abs(got - sum));
      bound = std::max(bound, bf16 ? magnitude * s.inputs * 0x1p-24 : 0.0);
    }
  return {worst, bound};
}

// Each form of one GEMM, interleaved, verified, appended to j["results"].
void measure_forms(const shape& s, bool bf16, int block, int samples, const Target& t, nlohmann::json& j) {
  operands o = random_operands(s, bf16);
  Buffer<> view(o.w.type(), o.w.data(), {o.group, lanes, s.inputs / o.group * s.panels()});
  Buffer<> out(bf16 ? Float(32) : Int(32), {lanes, s.panels(), s.rows});
  struct form {
    const char* name;
    Callable code;
    const Buffer<>& weights;
  };
  std::vector<form> forms{{"panel_view", panel_view_form(s, bf16, t), view},
                          {"packed", packed_form(s, bf16, block, t), o.w},
                          {"flattened", flattened_form(s, bf16, t), o.w}};
  std::vector<std::function<void()>> calls;
  for (form& f : forms)
    calls.push_back([&] { f.code(o.x, f.weights, out); });
  const auto times = halformer::timing::interleaved(calls, samples, 20);
  const double ops = 2.0 * s.rows * s.inputs * s.outputs, peak = j["peak_gops"][bf16 ? "amx_bf16" : "amx_int8"];
  for (std::size_t f = 0; f < forms.size(); ++f) {
    calls[f]();
    const auto [error, bound] = verify(o, out, s, bf16);
    if (error > bound)
      throw std::runtime_error(std::string("bench_amx_forms: ") + forms[f].name + ": wrong results (|error| " +
                               std::to_string(error) + ")");
    const double gops = ops / times[f].median_ms / 1e6;
    j["results"].push_back({{"form", forms[f].name},
                            {"type", bf16 ? "bf16" : "int8"},
                            {"rows", s.rows},
                            {"inputs", s.inputs},
                            {"outputs", s.outputs},
                            {"time", times[f].to_json()},
                            {"gops", gops},
                            {"percent_of_peak", 100 * gops / peak},
                            {"max_abs_error", error}});
  }
}

} // namespace

int run(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) { // Halide's errors too
    std::fprintf(stderr, "bench_amx_forms: %s\n", e.what());
    return 1;
  }
}

int run(int argc, char** argv) {
  int rows = 512, samples = 7, block = 4;
  std::vector<std::string> gemms{"512x2048", "2048x512", "512x512"};
  CLI::App app{"bench_amx_forms: Halide 21's AMX GEMM forms over weight panels (JSON on stdout)"};
  app.add_option("--rows", rows, "token rows (a multiple of 16)")->check(CLI::Range(16, 1 << 16));
  app.add_option("--gemms", gemms, "inputs x outputs, each a multiple of 64");
  app.add_option("--block", block, "packed: row tiles per packed panel")->check(CLI::Range(1, 64));
  app.add_option("--samples", samples)->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  nlohmann::json j;
  j["threads"] = halformer::machine::online_cpus();
  for (const char* kind : {"amx_int8", "amx_bf16"})
    j["peak_gops"][kind] = halformer::machine::dot_peak_gops(kind, 0);
  if (j["peak_gops"]["amx_int8"] == 0.0) {
    std::fprintf(stderr, "bench_amx_forms: this CPU or OS has no usable AMX tiles: not run\n");
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  const Target t = get_host_target().with_feature(Target::AVX512_SapphireRapids);
  for (const std::string& gemm : gemms) {
    const shape s{rows, std::stoi(gemm.substr(0, gemm.find('x'))), std::stoi(gemm.substr(gemm.find('x') + 1))};
    if (s.rows % tile_rows || s.inputs % step_bytes || s.outputs % step_bytes)
      throw std::invalid_argument("bench_amx_forms: --rows must be a multiple of 16, each GEMM's sizes of 64");
    for (bool bf16 : {false, true})
      measure_forms(s, bf16, block, samples, t, j);
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
