// Accumulates kernel times into a run_profile; a null profiler costs one branch
// per kernel call, so profiling off adds no clock reads and no allocation.
#pragma once

#include "halformer/profile.hpp"

#include <chrono>
#include <map>
#include <utility>

namespace halformer {

enum class phase { encode, decode };

class profiler {
public:
  using clock = std::chrono::steady_clock;
  static double since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

  void add(phase p, const std::string& kernel, double seconds);
  void add_wall(phase p, double seconds);
  void count_step() { ++profile_.decode_steps; }
  const run_profile& profile() const { return profile_; }

private:
  run_profile profile_;
  std::map<std::pair<phase, std::string>, std::size_t> index_;
};

// Times a scope into `p` when `p` is not null: as the time of `what` (a kernel or
// host step) in phase `ph`, or, without `what`, as the phase's wall time.
class scoped_time {
public:
  scoped_time(profiler* p, phase ph, const char* what = nullptr) : p_(p), ph_(ph), what_(what) {
    if (p_)
      t0_ = profiler::clock::now();
  }
  ~scoped_time() {
    if (!p_)
      return;
    if (what_)
      p_->add(ph_, what_, profiler::since(t0_));
    else
      p_->add_wall(ph_, profiler::since(t0_));
  }
  scoped_time(const scoped_time&) = delete;
  scoped_time& operator=(const scoped_time&) = delete;

private:
  profiler* p_;
  phase ph_;
  const char* what_;
  profiler::clock::time_point t0_{};
};

} // namespace halformer
