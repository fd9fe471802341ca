#pragma once
/// @file loss_model.h
/// Frame loss on one direction of a link, shared by both runners: every `every_n`-th frame
/// (deterministic), the frames with the listed 1-based indices, and/or each frame with probability
/// `rate` (seeded). A lost frame still occupies the wire.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"

namespace rocefab {

struct LossModel {
  uint64_t every_n = 0;
  std::vector<uint64_t> indices;
  double rate = 0;
  uint64_t seed = 1;
  bool any() const { return every_n > 0 || !indices.empty() || rate > 0; }
};

/// Per-direction state: counts frames and decides.
class LossState {
 public:
  explicit LossState(const LossModel& m) : m_(m), rng_(m.seed) {}
  bool Lose() {
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
