// `halformer compare`: one kernel at one shape under several schedules, measured
// side by side in one run by the same harness (default, this machine's tuned
// record, Halide's autoschedulers) plus a BLAS baseline for GEMM-shaped kernels;
// a table, CSV/JSON, and an SVG chart.
#pragma once

#include "tuner.hpp"

#include <string>
#include <vector>

namespace halformer::tuner {

struct compare_row {
  std::string schedule; // default | tuned | adams2019 | mullapudi2016 | li2018 | blas | onednn | opencl | opencl-tuned
  record r;             // status "ok" when measured and verified (BLAS: measured)
  std::string note;     // why a row has no numbers
};

struct compare_options {
  std::string kernel, shape, db_dir;
  std::vector<std::string> schedules{"default", "tuned", "adams2019", "mullapudi2016",
                                     "li2018",  "blas",  "onednn",    "onednn-fused"};
  tune_options measure; // isa, threads, samples, min_sample_ms, timeout
  int rounds = 3;       // harness runs per schedule, taken in turn; the median of their medians is reported
};

std::vector<compare_row> compare(const toolchain& t, const catalog& c, const compare_options& o, const hardware& hw);

// A fixed-width table; `peak` for the % of peak column.
std::string table(const std::string& title, const std::vector<compare_row>& rows, double peak);
// Writes DIR/<name>.csv, .json and .svg.
void write_reports(const std::string& dir, const std::string& name, const std::string& title,
                   const std::vector<compare_row>& rows, double peak);

} // namespace halformer::tuner
