#include "executor_pool.hpp"

namespace halformer {

executor_pool::lease::lease(executor_pool& pool, profiler* prof) : pool_(pool) {
  if (prof)
    profiled_ = std::unique_lock<std::mutex>(pool.profile_lock_);
  {
    std::lock_guard<std::mutex> g(pool.idle_lock_);
    if (!pool.idle_.empty()) {
      exec_ = std::move(pool.idle_.back());
      pool.idle_.pop_back();
    }
  }
  if (!exec_)
    exec_ = std::make_unique<executor>(pool.config_, pool.weights_, pool.device_, pool.kv_);
  exec_->set_profiler(prof);
}

executor_pool::lease::~lease() {
  exec_->set_profiler(nullptr);
  std::lock_guard<std::mutex> g(pool_.idle_lock_);
  pool_.idle_.push_back(std::move(exec_));
}

} // namespace halformer
