#include "nic-emu/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace rocefab {

Result<DcqcnConfig> DcqcnConfig::Profile(const std::string& name, BitRate line_rate) {
  DcqcnConfig c;
  const double scale = line_rate / (25 * kGbps);
  if (name == "paper") {
    c.alpha_interval = 55 * kUs;
    c.decrease_interval = 50 * kUs;
    c.increase_interval = 55 * kUs;
    c.byte_counter = 10'000'000;
    c.fast_recovery_steps = 5;
    c.rate_ai = 40 * kMbps;
    c.rate_hai = 200 * kMbps;
    c.min_rate = 100 * kMbps;
    c.clamp_target = true;
    c.cnp_interval = 50 * kUs;
  } else if (name == "nic") {
    c.rate_ai = (5 * kMbps).Scaled(scale);
    c.rate_hai = (50 * kMbps).Scaled(scale);
    c.min_rate = 1000 * kMbps;
  } else if (name == "conweave") {
    c.cnp_on_ooo = true;
  } else {
    return Result<DcqcnConfig>::Error("unknown DCQCN profile \"" + name +
                                      "\" (use \"paper\", \"nic\" or \"conweave\")");
  }
  return c;
}

DcqcnRateController::DcqcnRateController(const DcqcnConfig& cfg, BitRate line_rate)
    : cfg_(cfg), line_(static_cast<double>(line_rate.bps())), rc_(line_), rt_(line_) {}

void DcqcnRateController::AdvanceAlpha(Time now) {
  if (!started_ || now < alpha_next_) return;
  // First boundary: apply the CNP flag of the period that just ended; later ones only decay.
  alpha_ = alpha_cnp_ ? (1 - cfg_.g) * alpha_ + cfg_.g : (1 - cfg_.g) * alpha_;
  alpha_cnp_ = false;
  const int64_t more = (now - alpha_next_) / cfg_.alpha_interval;
  if (more > 0) alpha_ *= std::pow(1 - cfg_.g, static_cast<double>(more));
  alpha_next_ += (more + 1) * cfg_.alpha_interval;
}

double DcqcnRateController::PeekAlpha(Time now) const {
  DcqcnRateController copy = *this;
  return copy.alpha(now);
}

double DcqcnRateController::alpha(Time now) {
  AdvanceAlpha(now);
  return alpha_;
}

Time DcqcnRateController::OnCnp(Time now) {
  if (!started_) {
    started_ = true;
    alpha_ = cfg_.initial_alpha;
    alpha_cnp_ = false;
    alpha_next_ = now + cfg_.alpha_interval;
    rc_ = rt_ =
        std::max<double>(static_cast<double>(cfg_.min_rate.bps()), rc_ * cfg_.rate_on_first_cnp);
    dec_anchor_ = now + cfg_.first_decrease_delay + 1 * kNs;
    dec_cnp_ = true;
    dec_due_ = dec_anchor_;
    return dec_due_;
  }
  AdvanceAlpha(now);
  alpha_cnp_ = true;
  dec_cnp_ = true;
  if (dec_due_ != kTimeNever) return kTimeNever;  // a check is already armed
  // Next point of the T_dec grid strictly after now.
  const int64_t k = (now - dec_anchor_) / cfg_.decrease_interval + 1;
  dec_due_ = dec_anchor_ + k * cfg_.decrease_interval;
  return dec_due_;
}

Time DcqcnRateController::OnDecreaseTimer(Time now) {
  // Timers may fire late (live runner); one before the due time is stale.
  if (dec_due_ == kTimeNever || now < dec_due_) return kTimeNever;
  dec_due_ = kTimeNever;
  if (!dec_cnp_) return kTimeNever;
  AdvanceAlpha(now);
  if (cfg_.clamp_target || stage_t_ != 0 || stage_b_ != 0) rt_ = rc_;
  rc_ = std::max<double>(static_cast<double>(cfg_.min_rate.bps()), rc_ * (1 - alpha_ / 2));
  dec_cnp_ = false;
  stage_t_ = stage_b_ = 0;
  bytes_ = 0;
  ++cuts_;
  inc_deadline_ = now + cfg_.increase_interval;
  return inc_deadline_;
}

void DcqcnRateController::Increase(bool by_timer) {
  const int f = cfg_.fast_recovery_steps;
  if (cfg_.byte_counter <= 0) {
    const int stage = stage_t_;
    if (stage < f) {
      rc_ = (rt_ + rc_) / 2;
    } else if (stage == f) {
      rt_ = std::min(line_, rt_ + static_cast<double>(cfg_.rate_ai.bps()));
      rc_ = (rt_ + rc_) / 2;
    } else {
      rt_ = std::min(line_, rt_ + static_cast<double>(cfg_.rate_hai.bps()));
      rc_ = (rt_ + rc_) / 2;
    }
    ++stage_t_;
    return;
  }
  (by_timer ? stage_t_ : stage_b_)++;
  const int hi = std::max(stage_t_, stage_b_), lo = std::min(stage_t_, stage_b_);
  if (hi < f) {
    rc_ = (rt_ + rc_) / 2;
  } else if (lo > f) {
    rt_ = std::min(line_, rt_ + static_cast<double>(cfg_.rate_hai.bps()) * (lo - f));
    rc_ = (rt_ + rc_) / 2;
  } else {
    rt_ = std::min(line_, rt_ + static_cast<double>(cfg_.rate_ai.bps()));
    rc_ = (rt_ + rc_) / 2;
  }
}

Time DcqcnRateController::OnIncreaseTimer(Time now) {
  // Stale when the timer was restarted by a cut (its deadline moved later); late is fine.
  if (inc_deadline_ == kTimeNever || now < inc_deadline_) return kTimeNever;
  Increase(true);
  rc_ = std::min(rc_, line_);
  if (rc_ >= line_ - 1 && rt_ >= line_ - 1) {
    rc_ = rt_ = line_;
    inc_deadline_ = kTimeNever;
    return kTimeNever;
  }
  inc_deadline_ = now + cfg_.increase_interval;
  return inc_deadline_;
}

void DcqcnRateController::OnBytesSent(int64_t bytes, Time /*now*/) {
  if (cfg_.byte_counter <= 0 || !started_ || rc_ >= line_) return;
  bytes_ += bytes;
  while (bytes_ >= cfg_.byte_counter) {
    bytes_ -= cfg_.byte_counter;
    Increase(false);
  }
}

}  // namespace rocefab
