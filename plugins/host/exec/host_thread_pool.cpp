// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_thread_pool.hpp"

#include "fork_thread_gate.hpp"

namespace gpuhal::host {

struct ThreadPool::Job {
  const std::function<void(uint64_t)> *fn = nullptr;
  uint64_t count = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::mutex mu;
  std::condition_variable cv;

  void run() {
    uint64_t mine = 0;
    for (uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count; ++mine) (*fn)(i);
    if (mine && done.fetch_add(mine, std::memory_order_acq_rel) + mine == count) {
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    }
  }
};

ThreadPool::ThreadPool(unsigned threads) {
  // Started and joined through the fork gate (fork_thread_gate.hpp).
  for (unsigned i = 1; i < threads; ++i) workers_.push_back(plugin::start_thread([this] { work(); }));
}

ThreadPool::~ThreadPool() {
  plugin::ThreadTransition transition;  // telling the workers to return and joining them
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto &t : workers_) t.join();
}

void ThreadPool::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    std::shared_ptr<Job> job = jobs_.front();
    if (job->next.load(std::memory_order_relaxed) >= job->count) {
      jobs_.pop_front();  // all handed out
      continue;
    }
    lock.unlock();
    job->run();
    lock.lock();
  }
}

std::atomic<int> ThreadPool::spread_jobs_{0};

void ThreadPool::parallel_for(uint64_t count, const std::function<void(uint64_t)> &fn) {
  if (count == 0) return;
  if (workers_.empty() || count == 1) {
    for (uint64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  spread_jobs_.fetch_add(1, std::memory_order_relaxed);
  struct Spread {
    ~Spread() { spread_jobs_.fetch_sub(1, std::memory_order_relaxed); }
  } spread;
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->count = count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
  }
  cv_.notify_all();
  job->run();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
      if (*it == job) {
        jobs_.erase(it);
        break;
      }
  }
  std::unique_lock<std::mutex> lock(job->mu);
  job->cv.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == count; });
}

}  // namespace gpuhal::host
