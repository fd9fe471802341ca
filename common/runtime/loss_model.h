#pragma once
/// @file loss_model.h
/// Frame loss on one direction of a link, shared by both runners: every `every_n`-th frame
/// (deterministic), the frames with the listed 1-based indices, and/or each frame with probability
/// `rate` (seeded). With a `filter`, only frames it matches are counted and can be lost (the
/// 3rd CNP, every 10th READ response, the frame with IP-ID 77). A lost frame still occupies the
/// wire.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"
#include "common/wire/frame_class.h"

namespace rocefab {

struct LossModel {
  uint64_t every_n = 0;
  std::vector<uint64_t> indices;
  double rate = 0;
  uint64_t seed = 1;
  FrameFilter filter;  ///< which frames the rule counts (default: all)
  bool any() const { return every_n > 0 || !indices.empty() || rate > 0; }
};

/// Per-direction state: counts frames and decides.
class LossState {
 public:
  explicit LossState(const LossModel& m) : m_(m), rng_(m.seed) {}
  /// Counts `m` if the filter matches it and says whether it is lost.
  bool Lose(const rte_mbuf* m) {
    if (!m_.filter.any() && !m_.filter.Matches(m)) return false;
    ++frames_;
    bool lose = m_.every_n > 0 && frames_ % m_.every_n == 0;
    for (uint64_t i : m_.indices) lose |= i == frames_;
    if (m_.rate > 0) lose |= rng_.Uniform() < m_.rate;
    return lose;
  }

 private:
  LossModel m_;
  Rng rng_;
  uint64_t frames_ = 0;
};

}  // namespace rocefab
