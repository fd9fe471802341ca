#pragma once
// N ranks of a distributed sim run as N threads of one process (tests): the Ranks collectives
// (common/runtime/ranks.h) through shared memory, so the runner's and the fabric's rank logic
// runs in the unit/scenario suites and under the sanitizers, without MPI.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/runtime/ranks.h"

namespace rocefab::testing {

class ThreadRanks final : public Ranks {
 public:
  // The ranks of one run: Group(n)[r] is rank r (each used by one thread).
  static std::vector<std::unique_ptr<ThreadRanks>> Group(int n) {
    auto shared = std::make_shared<Shared>();
    shared->n = n;
    shared->slots.resize(static_cast<size_t>(n));
    std::vector<std::unique_ptr<ThreadRanks>> g;
    for (int r = 0; r < n; ++r)
      g.push_back(std::unique_ptr<ThreadRanks>(new ThreadRanks(shared, r)));
    return g;
  }
  int rank() const override { return rank_; }
  int size() const override { return s_->n; }
  int64_t Min(int64_t v) override {
    int64_t m = v;
    for (const auto& o : Gather({Bytes(v)})) m = std::min(m, FromBytes<int64_t>(o[0]));
    return m;
  }
  void Or(std::vector<uint8_t>* v) override {
    Fold(v, [](uint8_t a, uint8_t b) { return a | b; });
  }
  void Sum(std::vector<uint64_t>* v) override {
    Fold(v, [](uint64_t a, uint64_t b) { return a + b; });
  }
  void Max(std::vector<int64_t>* v) override {
    Fold(v, [](int64_t a, int64_t b) { return std::max(a, b); });
  }
  using Ranks::Max;
  std::vector<std::string> AllToAll(std::vector<std::string> out) override {
    const auto all = Gather(out);
    std::vector<std::string> in;
    for (const auto& from : all) in.push_back(from[static_cast<size_t>(rank_)]);
    return in;
  }
  uint64_t collectives() const { return collectives_; }

 private:
  struct Shared {
    std::mutex m;
    std::condition_variable cv;
    int n = 0, arrived = 0;
    uint64_t gen = 0;
    std::vector<std::vector<std::string>> slots;  // by rank: what it put in this round
  };
  ThreadRanks(std::shared_ptr<Shared> s, int rank) : s_(std::move(s)), rank_(rank) {}
  template <class T>
  static std::string Bytes(const T& v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <class T>
  static T FromBytes(const std::string& b) {
    T v;
    std::memcpy(&v, b.data(), sizeof v);
    return v;
  }
  template <class T, class F>
  void Fold(std::vector<T>* v, F f) {
    const std::string mine(reinterpret_cast<const char*>(v->data()), v->size() * sizeof(T));
    const auto all = Gather({mine});
    std::vector<T> acc(v->size());
    std::memcpy(acc.data(), all[0][0].data(), acc.size() * sizeof(T));  // rank 0's, then the rest
    for (size_t r = 1; r < all.size(); ++r) {
      const auto& o = all[r];
      for (size_t i = 0; i < acc.size(); ++i) {
        T x;
        std::memcpy(&x, o[0].data() + i * sizeof(T), sizeof(T));
        acc[i] = f(acc[i], x);
      }
    }
    *v = acc;
  }
  void Barrier(std::unique_lock<std::mutex>& l) {
    const uint64_t gen = s_->gen;
    if (++s_->arrived == s_->n) {
      s_->arrived = 0;
      ++s_->gen;
      s_->cv.notify_all();
    } else {
      s_->cv.wait(l, [&] { return s_->gen != gen; });
    }
  }
  // Every rank's `mine`, by rank (collective).
  std::vector<std::vector<std::string>> Gather(std::vector<std::string> mine) {
    ++collectives_;
    std::unique_lock<std::mutex> l(s_->m);
    s_->slots[static_cast<size_t>(rank_)] = std::move(mine);
    Barrier(l);
    std::vector<std::vector<std::string>> all = s_->slots;
    Barrier(l);  // nobody overwrites a slot before everyone has read it
    return all;
  }
  std::shared_ptr<Shared> s_;
  int rank_;
  uint64_t collectives_ = 0;
};

}  // namespace rocefab::testing
