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

// Times a scope into `p`'s phase wall time when `p` is not null.
class phase_timer {
public:
  phase_timer(profiler* p, phase ph) : p_(p), ph_(ph) {
    if (p_)
      t0_ = profiler::clock::now();
  }
  ~phase_timer() {
    if (p_)
      p_->add_wall(ph_, profiler::since(t0_));
  }
  phase_timer(const phase_timer&) = delete;
  phase_timer& operator=(const phase_timer&) = delete;

private:
  profiler* p_;
  phase ph_;
  profiler::clock::time_point t0_{};
};

} // namespace halformer
