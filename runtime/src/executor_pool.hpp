// Executors for concurrent calls on one loaded model. An executor holds a call's
// activations, KV caches and decoding state; the weights are shared and read-only.
// Each call leases one (a new one if every other is busy) and returns it when done,
// so calls from several threads run at once and an idle executor keeps its
// buffers for the next call.
#pragma once

#include "executor.hpp"

#include <memory>
#include <mutex>
#include <vector>

namespace halformer {

class executor_pool {
public:
  executor_pool(const model_config& c, const model_weights& w, device d, kv_type kv)
      : config_(c), weights_(w), device_(d), kv_(kv) {}

  class lease {
  public:
    lease(executor_pool& pool, profiler* prof);
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease();
    executor& operator*() const { return *exec_; }
    executor* operator->() const { return exec_.get(); }

  private:
    executor_pool& pool_;
    std::unique_lock<std::mutex> profiled_; // a profile records one call at a time
    std::unique_ptr<executor> exec_;
  };
  // An executor for one call, recording into `prof` (null: none).
  lease acquire(profiler* prof) { return lease(*this, prof); }

private:
  const model_config& config_;
  const model_weights& weights_;
  const device device_;
  const kv_type kv_;
  std::mutex idle_lock_, profile_lock_;
  std::vector<std::unique_ptr<executor>> idle_;
};

} // namespace halformer
