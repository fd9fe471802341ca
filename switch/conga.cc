#include "switch/conga.h"

#include <algorithm>
#include <cmath>

namespace rocefab {

void Dre::Decay(Time now) {
  const int64_t e = now / period_;
  if (e <= epoch_) return;
  const int64_t k = e - epoch_;
  epoch_ = e;
  if (x_ == 0) return;
  // (1 - alpha)^k; past ~200 periods X is below a byte for any alpha >= 0.1 and any real link.
  x_ = k == 1 ? x_ * keep_ : k > 4096 ? 0.0 : x_ * std::pow(keep_, static_cast<double>(k));
}

uint8_t Dre::Metric(Time now, BitRate rate, uint32_t q_bits) {
  Decay(now);
  // Steady state at utilisation u: X = u * C * T / alpha / 8 bytes, so this is u * 2^Q.
  const double full_bits =
      static_cast<double>(rate.bps()) * (static_cast<double>(period_) / kSec) / alpha_;
  const double levels = static_cast<double>(1u << q_bits);
  const double m = std::floor(x_ * 8.0 / full_bits * levels);
  return static_cast<uint8_t>(std::clamp(m, 0.0, levels - 1));
}

CongaLeaf::CongaLeaf(const CongaParams& p, uint32_t leaves)
    : p_(p),
      leaves_(std::clamp<uint32_t>(leaves, 1, kCongaMaxLeaves)),
      to_leaf_(static_cast<size_t>(leaves_) * kCongaMaxPaths),
      from_leaf_(static_cast<size_t>(leaves_) * kCongaMaxPaths) {}

uint8_t CongaLeaf::RemoteMetric(uint32_t leaf, uint32_t path, Time now) const {
  if (leaf >= leaves_ || path >= kCongaMaxPaths) return 0;
  return Aged(to_leaf_[leaf * kCongaMaxPaths + path], now);
}

uint32_t CongaLeaf::ChoosePath(uint64_t flow, uint32_t dst_leaf, std::span<const uint8_t> local,
                               Time now, Rng& rng) {
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(local.size(), kCongaMaxPaths));
  if (n <= 1) return 0;
  if (++picks_since_sweep_ >= 4096) {
    picks_since_sweep_ = 0;
    EraseIf(flows_, [&](const auto& kv) { return kv.second.last + p_.flow_aging < now; });
  }
  auto [it, is_new] = flows_.try_emplace(flow);
  Flow& f = it->second;
  if (!is_new && now - f.last <= p_.flowlet_gap && f.path < n) {
    f.last = now;
    return f.path;
  }
  ++stats_.flowlets;
  const uint32_t offset = static_cast<uint32_t>(rng.Below(n));
  const uint32_t c = std::min(std::max<uint32_t>(p_.candidates, 1), n);
  uint32_t best = offset, ties = 0;
  int best_score = 1 << 30;
  for (uint32_t i = 0; i < c; ++i) {
    const uint32_t path = (offset + i) % n;
    const int score = std::max<int>(local[path], RemoteMetric(dst_leaf, path, now));
    if (score < best_score) {
      best_score = score;
      best = path;
      ties = 1;
    } else if (score == best_score && rng.Below(++ties) == 0) {
      best = path;  // reservoir sampling: each of the tied paths with probability 1/ties
    }
  }
  if (!is_new && best != f.path) ++stats_.path_changes;
  f.path = best;
  f.last = now;
  return best;
}

bool CongaLeaf::Store(std::vector<Entry>& table, uint32_t leaf, uint32_t path, uint8_t metric,
                      Time now) {
  if (leaf >= leaves_ || path >= kCongaMaxPaths) return false;  // ids from the wire, out of range
  table[leaf * kCongaMaxPaths + path] = Entry{metric, true, now};
  return true;
}

void CongaLeaf::OnArrival(uint32_t src_leaf, uint32_t path, uint8_t ce, Time now) {
  if (Store(from_leaf_, src_leaf, path, ce, now)) ++stats_.arrivals;
}

std::optional<CongaFeedback> CongaLeaf::Feedback(uint32_t dst_leaf, Time now, Rng& rng) {
  if (dst_leaf >= leaves_) return std::nullopt;
  const Entry* row = &from_leaf_[dst_leaf * kCongaMaxPaths];
  uint32_t seen[kCongaMaxPaths];
  uint32_t n = 0;
  for (uint32_t p = 0; p < kCongaMaxPaths; ++p) {
    if (row[p].seen) seen[n++] = p;
  }
  if (n == 0) return std::nullopt;
  const uint32_t pick = seen[rng.Below(n)];
  ++stats_.feedback_sent;
  return CongaFeedback{pick, Aged(row[pick], now)};
}

void CongaLeaf::OnFeedback(uint32_t remote_leaf, uint32_t path, uint8_t metric, Time now) {
  if (Store(to_leaf_, remote_leaf, path, metric, now)) ++stats_.feedback_received;
}

}  // namespace rocefab
