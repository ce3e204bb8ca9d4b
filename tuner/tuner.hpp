// The per-hardware autotuner: a search over a kernel's declared knob space in
// which every candidate is compiled, linked and measured in child processes
// (generator, compiler, harness.cpp), verified against the float64 reference
// before it is timed, and recorded in the schedule database (also when it fails).
#pragma once

#include "database.hpp"
#include "export_knobs.hpp"
#include "hardware.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace halformer::tuner {

// Where the build put the tools the tuner drives (generated: tuner_paths.json).
struct toolchain {
  std::string generator;                     // halformer.generators
  std::string cxx;                           // the C++ compiler (links candidates)
  std::string harness_dir;                   // libtuner_harness_<kernel>.a
  std::string runtime_lib;                   // the Halide runtime candidates link against
  std::string knob_file;                     // default knob values
  std::string work_dir;                      // scratch for candidates
  std::string isa_lib;                       // ISA selection + error capture (runtime/kernels/isa.c)
  std::string kernel_header, runtime_header; // halformer_kernels.h, HalideRuntime.h
  std::string autoscheduler_dir;             // libautoschedule_*.so
  std::string blas_harness;                  // the BLAS baseline's measuring program
  std::string gpu_knob_file;                 // default knob values of the GPU schedules
  std::string arm64_knob_file;               // default knob values of the AArch64 CPU kernels
  std::string build_knob_file;               // the knob file the build chose for the CPU kernels
  std::vector<std::string> knob_choice;      // halformer_choose_knobs and its inputs, less OUT_FILE (host)
  std::string source_dir, cmake, make_program, halide_root,
      halide_dir; // build-lib's CMake build (cmake/kernel_library)
  static toolchain from_json_file(const std::string& path);
};

struct kernel_info {
  std::string name, generator, knob_section;
  std::vector<std::string> params;  // generator params: kernel=<name>
  int revision = 1;                 // its schedule's revision (knob_spaces.json)
  std::vector<std::string> buckets; // the shape buckets it runs in, each with a knob set (schedules/buckets.hpp)
  bool dot_products = false;        // also compiled for the dot-product ISAs (avx512_vnni: int8, bfloat16 GEMMs)
};
using knob_space = std::vector<std::pair<std::string, std::vector<int>>>;
using knob_set = std::map<std::string, int>;

struct catalog {
  std::vector<kernel_info> kernels;
  std::map<std::string, knob_space> spaces;     // by knob section
  std::map<std::string, int> revisions;         // by knob section
  std::map<std::string, knob_space> gpu_spaces; // the GPU schedules' (cuda, opencl)
  std::map<std::string, int> gpu_revisions;
  const kernel_info& kernel(const std::string& name) const;
  std::map<std::string, std::set<std::string>> algorithm_knobs; // by knob section (CPU schedules)
  section_phases knob_phases;                                   // by knob section (CPU schedules)
  std::map<std::string, bucket_plan> bucket_plans() const;      // kernels with shape buckets
  static catalog from_json_files(const std::string& kernels_json, const std::string& spaces_json);
};

// The knob sections whose schedule revision differs from the one the tuned knob
// file `path` was written for (every section if it names none: written before
// files did; none if it is not JSON). A stale file may hold knobs a changed
// schedule no longer declares.
std::vector<std::string> stale_sections(const std::string& path, const std::map<std::string, int>& revisions);

// export_knobs with the catalog's revisions, bucket plans, algorithm knobs and
// knob phases: the knob file the build would take from `base` and this
// hardware's records in `db` at `shapes`.
export_report export_catalog_knobs(const std::string& base, const database& db, const hardware& hw,
                                   const std::vector<preset_entry>& shapes, const std::string& out, const catalog& cat);

struct tune_options {
  std::string shape;          // canonical
  std::string isa = "avx512"; // avx512 | avx2 | sse41 | opencl (the GPU schedules, on the OpenCL device)
  // The ISA the dot-product kernels run on this CPU with `isa`'s knobs: avx512_vnni
  // where the CPU has it and `isa` is avx512 (its knob section serves both), else `isa`.
  std::string dot_product_isa;
  double budget_s = 300;
  int max_trials = 1000;
  int threads = 0; // 0: all cores
  int samples = 7;
  double min_sample_ms = 20;
  double candidate_timeout_s = 180;
  unsigned seed = 1;
  int initial_random = 6;
  // The confirmation round: the best `finalists` knob sets and the default are
  // re-measured side by side, `confirm_rounds` harness runs each in turn.
  int finalists = 3;
  int confirm_rounds = 3;
  // The confirmed winner replaces the default only when faster by this fraction.
  double adopt_margin = 0.03;
  // No child step (compile, link, run) outlives this point; tune() sets it to
  // budget_s from its start. A step cut short by it is recorded "over_budget".
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// A child step's time limit: the per-step limit, or what is left before the deadline.
struct step_limit {
  double seconds;
  bool by_deadline; // the deadline is the tighter of the two
};
step_limit step_limit_of(const tune_options& o);

std::string target_of_isa(const std::string& isa); // Halide target string
// The Halide target a candidate of `k` is compiled and measured with: the code
// this CPU runs with `o.isa`'s knobs (tune_options::dot_product_isa).
std::string measured_target(const kernel_info& k, const tune_options& o);
bool is_gpu(const std::string& isa); // opencl (cuda: not measurable yet)
// Whether `r` was measured with its section's current schedule revision (the GPU
// schedules' for a GPU target): only such records can reach a build.
bool measured_with_current_schedule(const catalog& c, const record& r);
// The kernel as measured with `isa`: its GPU schedule's revision for a GPU.
kernel_info kernel_for(const catalog& c, const std::string& name, const std::string& isa);
// The knob space of a kernel's schedule for `isa`.
const knob_space& space_for(const catalog& c, const kernel_info& k, const std::string& isa);
// The knobs of that space that change the kernel's calls at `shape` (knob_phase):
// what a search at `shape` varies; the others keep the knob file's values.
knob_space space_at(const catalog& c, const kernel_info& k, const std::string& isa, const std::string& shape);
// `knobs` without those outside `space`.
knob_set restricted_to(const knob_set& knobs, const knob_space& space);
// A knob section's hand values for `isa` (the section alone, whatever the shape).
knob_set default_knobs(const toolchain& t, const std::string& section, const std::string& isa);
// The hand knob set the kernel runs at `shape`: its shape bucket's set in the hand
// knob file over the section's values (common/bucket_knobs.hpp), as a build with
// that file runs it. Every baseline a search or `compare` measures is this set.
knob_set hand_knobs_at(const toolchain& t, const kernel_info& k, const std::string& shape, const std::string& isa);

// A candidate compiled and linked into its measuring harness (in a child process
// each), ready to be run any number of times; `r` holds its identity, or why it
// could not be built (status compile_error / link_error).
struct built_candidate {
  record r;
  std::string dir, exe;
  bool ok() const { return !exe.empty(); }
  built_candidate() = default;
  built_candidate(const built_candidate&) = delete;
  built_candidate(built_candidate&&) noexcept;
  built_candidate& operator=(built_candidate&&) noexcept;
  ~built_candidate(); // removes its directory
};
built_candidate build(const toolchain& t, const kernel_info& k, const knob_set& knobs, const tune_options& o,
                      const hardware& hw, const std::string& source,
                      const std::vector<std::string>& generator_args = {});
// One harness run (verify, then time `o.samples` samples): the record with its
// status and timings.
record run(const built_candidate& c, const tune_options& o);
// Several runs of one candidate as one record: the median of the runs' medians,
// the lowest minimum and the highest maximum, and how far its runs' medians
// spread (settings.run_spread: (highest - lowest) / median); not verified if
// any run was not.
record pool(const std::vector<record>& runs);
// One harness run of something being timed (a candidate, a baseline), by name.
struct timed_run {
  std::string name;
  std::function<record()> once;
};
// Runs each of `runs` `rounds` times, in turn (round r starts at the r-th), so
// that drift in the machine's speed is shared by all of them; one that fails is
// not run again. Returns each one's runs pooled.
std::vector<record> interleaved(const std::vector<timed_run>& runs, int rounds, const std::string& what);

// The gap a confirmed candidate must beat the default by: `margin`, or the
// spread of the default's own runs in the round where that is larger (a host
// whose identical runs differ by 15% cannot tell a 5% gain from its noise).
double adopt_margin(const record& defaults, double margin);

// The confirmation round's choice: the fastest verified record, unless the
// default's is within adopt_margin of it (a smaller gap is this machine's noise,
// and the hand default is the schedule with a stated reason).
const record* choose_confirmed(const std::vector<record>& confirmed, const knob_set& defaults, double margin);

// Measures one candidate (compile, link, verify, time) and returns its record,
// with the seconds its build and its run took (settings build_s, run_s); an
// autoscheduler's knob set is generated by that autoscheduler (build()).
record measure(const toolchain& t, const kernel_info& k, const knob_set& knobs, const tune_options& o,
               const hardware& hw, const std::string& source);
// As measure(), handing the built candidate to `built` so that it can run again
// (a confirmation round) without being rebuilt.
record measure(const toolchain& t, const kernel_info& k, const knob_set& knobs, const tune_options& o,
               const hardware& hw, const std::string& source, built_candidate& built);

struct tune_result {
  record best, defaults; // best: the confirmation round's winner (or the search's, without one)
  int trials = 0, failed = 0;
  std::vector<std::string> stopped; // candidates the budget's end stopped, and why
};
// Searches until the budget or the trial count is spent; resumes from the database.
tune_result tune(const toolchain& t, const catalog& c, const std::string& kernel, const tune_options& o,
                 const database& db, const hardware& hw);

// When this machine has no records of a kernel at a shape, the knob sets that the
// most similar other hardware tuned there: the same Halide target first, then the
// most vector features in common, then the nearest core count; its chosen record
// first, then its fastest verified ones, at most `n`, each inside `space`. They are
// candidates to measure here, never adopted unmeasured.
struct seed {
  knob_set knobs;
  std::string hardware; // the key it was tuned on
};
std::vector<seed> seeds_from_similar_hardware(const std::vector<record>& records, const kernel_info& k,
                                              const std::string& shape, const std::string& target,
                                              const std::string& this_hardware, const knob_space& space, std::size_t n);

std::string now_iso();                     // "2026-11-22T21:52:47Z", records' time
std::string knobs_text(const knob_set& k); // "a=1,b=2"
std::string join(const std::vector<std::string>& items, const std::string& separator);
std::string generator_knobs(const knob_set& k); // "a:1/b:2", the generator's knobs= value

// Autoscheduler candidates live in the same space as knob sets: the knob set
// {"_autoscheduler:<Name>": 1} means "Halide's <Name> schedules this kernel".
extern const std::vector<std::string> autoschedulers; // Adams2019, Mullapudi2016, Li2018
std::string autoscheduler_of(const knob_set& k);      // "" for a knob set
// A knob-set record (not an autoscheduler's) of exactly this kernel, shape,
// target, machine and schedule revision: what a build or `compare` may call tuned.
bool tuned_candidate(const record& r, const std::string& kernel, const std::string& shape, const std::string& target,
                     const std::string& hardware, int revision);
// A shape's extents under the DSL's dimension names, as generator estimates ("a:1/b:2").
std::string estimates_of(const std::string& shape);

} // namespace halformer::tuner
