#include "base/parallel.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace h0::base {
namespace {

// A job: chunks of [0, n) handed out by an atomic counter to the pool's threads and the caller.
struct Job {
  size_t n = 0, grain = 1, chunks = 0;
  const std::function<void(size_t, size_t, size_t)>* fn = nullptr;
  std::atomic<size_t> next{0}, done{0};
};

// Worker threads kept for the life of the process (thread creation per call cost ~50 us per
// op). Jobs run one at a time; a parallel_for from inside a job runs inline. A child made by
// fork() (the runner's case isolation) has no threads: it builds its own pool on first use.
class Pool {
 public:
  static Pool& get() {
    static std::unique_ptr<Pool> pool;
    static pid_t owner = 0;
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    if (!pool || owner != ::getpid()) {
      if (pool && owner != ::getpid())
        (void)pool.release();  // the parent's threads do not exist here
      pool = std::make_unique<Pool>(worker_threads() - 1);
      owner = ::getpid();
    }
    return *pool;
  }

  explicit Pool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void run(Job& job) {
    std::unique_lock<std::mutex> serial(run_mu_);  // one job at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    in_pool = true;  // a parallel_for inside fn runs inline on this thread too
    work(job);
    in_pool = false;
    std::unique_lock<std::mutex> lock(mu_);
    finished_.wait(lock, [&] { return job.done.load() == job.chunks && active_ == 0; });
    job_ = nullptr;
  }

  static thread_local bool in_pool;

 private:
  static void work(Job& job) {
    for (size_t c; (c = job.next.fetch_add(1)) < job.chunks;) {
      (*job.fn)(c, c * job.grain, std::min(job.n, (c + 1) * job.grain));
      job.done.fetch_add(1);
    }
  }

  void loop() {
    in_pool = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || (job_ != nullptr && generation_ != seen); });
      if (stop_) return;
      seen = generation_;
      Job* job = job_;
      ++active_;
      lock.unlock();
      work(*job);
      lock.lock();
      --active_;
      finished_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_, run_mu_;
  std::condition_variable wake_, finished_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  int active_ = 0;
  bool stop_ = false;
};

thread_local bool Pool::in_pool = false;

}  // namespace

int worker_threads() {
  static const int threads = [] {
    if (const char* env = std::getenv("HARNESS_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return threads;
}

void parallel_for(size_t n, size_t grain,
                  const std::function<void(size_t chunk, size_t begin, size_t end)>& fn) {
  if (grain == 0) grain = 1;
  const size_t chunks = (n + grain - 1) / grain;
  if (chunks <= 1 || worker_threads() <= 1 || Pool::in_pool) {
    for (size_t c = 0; c < chunks; ++c) fn(c, c * grain, std::min(n, (c + 1) * grain));
    return;
  }
  Job job;
  job.n = n;
  job.grain = grain;
  job.chunks = chunks;
  job.fn = &fn;
  Pool::get().run(job);
}

}  // namespace h0::base
