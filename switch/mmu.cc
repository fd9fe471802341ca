#include "switch/mmu.h"

#include <algorithm>
#include <cmath>

namespace rocefab {

Result<SharedBufferMmu> SharedBufferMmu::Create(const MmuConfig& cfg) {
  using R = Result<SharedBufferMmu>;
  if (cfg.num_ports == 0) return R::Error("mmu: no ports");
  if (cfg.lossless_pg.size() != cfg.num_ports)
    return R::Error("mmu: lossless_pg needs one profile per port");
  auto check = [](const PgProfile& p, const std::string& what) -> Status {
    if (p.reserved < 0 || p.static_th < 0 || p.xoff < 0 || p.xon < 0 || p.xon_offset < 0) {
      return Status::Error(what + ": sizes must be >= 0");
    }
    if (p.dynamic_th < -8 || p.dynamic_th > 8)
      return Status::Error(what + ": dynamic_th must be -8..8");
    return Status();
  };
  Status st = check(cfg.lossy_pg, "buffer.lossy_pg");
  if (!st.ok()) return st;
  int64_t reserved = 0;
  for (uint16_t p = 0; p < cfg.num_ports; ++p) {
    st = check(cfg.lossless_pg[p], "buffer.lossless_pg");
    if (!st.ok()) return st;
    for (uint8_t g = 0; g < 8; ++g) {
      const bool ll = (cfg.lossless_pg_mask >> g) & 1;
      const PgProfile& lp = cfg.lossless_pg[p];
      const int64_t dedicated_headroom = cfg.shared_headroom_pool > 0 ? 0 : lp.xoff;
      reserved += ll ? lp.reserved + dedicated_headroom : cfg.lossy_pg.reserved;
      reserved += cfg.lossy_queue.reserved;
    }
  }
  if (cfg.shared_headroom_pool < 0) return R::Error("buffer: shared headroom pool must be >= 0");
  reserved += cfg.shared_headroom_pool;
  SharedBufferMmu m(cfg);
  m.shared_pool_ = cfg.buffer_bytes - reserved;
  if (m.shared_pool_ <= 0) {
    return R::Error("buffer: size " + std::to_string(cfg.buffer_bytes) +
                    " B is not larger than reserved + headroom (" + std::to_string(reserved) +
                    " B)");
  }
  m.egress_pool_ = cfg.buffer_bytes;
  m.pg_.resize(static_cast<size_t>(cfg.num_ports) * 8);
  m.q_.resize(static_cast<size_t>(cfg.num_ports) * 8);
  return m;
}

int64_t SharedBufferMmu::QueueLimit(uint16_t, uint8_t) const {
  const QueueProfile& q = cfg_.lossy_queue;
  return q.static_th > 0 ? q.static_th : Dynamic(q.dynamic_th, egress_pool_ - egress_used_);
}

int64_t SharedBufferMmu::pg_bytes(uint16_t port, uint8_t pg) const {
  const PgState& s = pg_[Idx(port, pg)];
  return s.reserved_used + s.shared + s.headroom;
}

AdmitResult SharedBufferMmu::Admit(uint16_t in_port, uint8_t pg, uint16_t out_port, uint8_t queue,
                                   int64_t bytes) {
  AdmitResult r;
  const bool lossless_q = (cfg_.lossless_queue_mask >> queue) & 1;
  QState& qs = q_[Idx(out_port, queue)];
  // Egress check first for lossy queues: a frame the egress would refuse must not touch ingress.
  if (!lossless_q) {
    const int64_t q_shared = std::max<int64_t>(0, qs.bytes - cfg_.lossy_queue.reserved);
    if (qs.bytes + bytes > cfg_.lossy_queue.reserved &&
        q_shared + bytes > QueueLimit(out_port, queue)) {
      r.verdict = AdmitResult::Verdict::kDropEgressLimit;
      return r;
    }
  }
  if (in_port != kNoPort) {
    PgState& s = pg_[Idx(in_port, pg)];
    const PgProfile& p = Profile(in_port, pg);
    const bool ll = lossless_pg(pg);
    const int64_t limit = PgLimit(in_port, pg);
    if (s.reserved_used + bytes <= p.reserved) {
      r.bucket = MmuBucket::kReserved;
      s.reserved_used += bytes;
    } else if (s.shared + bytes <= limit ||
               (ll && cfg_.lossless_shared_beyond_limit && shared_used_ + bytes <= shared_pool_)) {
      r.bucket = MmuBucket::kShared;
      s.shared += bytes;
      shared_used_ += bytes;
    } else if (ll && s.headroom + bytes <= p.xoff &&
               (cfg_.shared_headroom_pool == 0 ||
                shared_headroom_used_ + bytes <= cfg_.shared_headroom_pool)) {
      r.bucket = MmuBucket::kHeadroom;
      s.headroom += bytes;
      if (cfg_.shared_headroom_pool > 0) shared_headroom_used_ += bytes;
    } else {
      r.verdict = ll ? AdmitResult::Verdict::kDropLosslessHeadroom
                     : AdmitResult::Verdict::kDropIngressLimit;
      if (ll && !s.xoff) {
        s.xoff = true;
        r.xoff = true;
      }
      return r;
    }
    if (ll && !s.xoff && (r.bucket == MmuBucket::kHeadroom || s.shared >= PgLimit(in_port, pg))) {
      s.xoff = true;
      r.xoff = true;
    }
    s.watermark = std::max(s.watermark, s.reserved_used + s.shared + s.headroom);
  }
  qs.bytes += bytes;
  qs.watermark = std::max(qs.watermark, qs.bytes);
  egress_used_ += bytes;
  total_used_ += bytes;
  return r;
}

bool SharedBufferMmu::Release(uint16_t in_port, uint8_t pg, MmuBucket bucket, uint16_t out_port,
                              uint8_t queue, int64_t bytes) {
  QState& qs = q_[Idx(out_port, queue)];
  qs.bytes -= bytes;
  egress_used_ -= bytes;
  total_used_ -= bytes;
  if (in_port == kNoPort || bucket == MmuBucket::kNone) return false;
  // The PG's buckets are counters, not labels on frames: a departing frame returns headroom
  // first, then shared, then reserved, whichever bucket it was admitted to (see the file comment).
  PgState& s = pg_[Idx(in_port, pg)];
  int64_t left = bytes;
  const int64_t from_headroom = std::min(left, s.headroom);
  s.headroom -= from_headroom;
  if (cfg_.shared_headroom_pool > 0) shared_headroom_used_ -= from_headroom;
  left -= from_headroom;
  const int64_t from_shared = std::min(left, s.shared);
  s.shared -= from_shared;
  shared_used_ -= from_shared;
  s.reserved_used -= left - from_shared;
  if (!s.xoff) return false;
  const PgProfile& p = Profile(in_port, pg);
  const int64_t usage = s.reserved_used + s.shared + s.headroom;
  const int64_t resume = std::max(p.xon, p.reserved + PgLimit(in_port, pg) - p.xon_offset);
  if (s.headroom == 0 && usage <= resume) {
    s.xoff = false;
    return true;
  }
  return false;
}

int PeerResponseQuanta(BitRate speed) {
  struct Row {
    BitRate speed;
    int quanta;
  };
  static const Row kTable[] = {{800 * kGbps, 905}, {400 * kGbps, 905}, {200 * kGbps, 453},
                               {100 * kGbps, 394}, {50 * kGbps, 147},  {40 * kGbps, 118},
                               {25 * kGbps, 80},   {10 * kGbps, 67},   {1 * kGbps, 2},
                               {100 * kMbps, 1}};
  for (const auto& r : kTable) {
    if (speed >= r.speed) return r.quanta;
  }
  return 1;
}

Headroom ComputeHeadroom(const HeadroomParams& p) {
  const double speed_mbps = static_cast<double>(p.speed.bps()) / 1e6;
  const double cell = static_cast<double>(p.cell_size);
  const double worst_case_factor = p.cell_size > 128 ? cell / 64.0 : 2.0 * cell / (1.0 + cell);
  const double cell_occupancy =
      (100.0 - p.small_packet_percentage + p.small_packet_percentage * worst_case_factor) / 100.0;
  const double peer_response = PeerResponseQuanta(p.speed) * 512.0 / 8.0;
  const double bytes_on_cable = 2.0 * p.cable_m * speed_mbps * 1e9 / 198'000'000.0 / (8 * 1024);
  const double bytes_on_gearbox = speed_mbps * p.gearbox_delay_ns / (8 * 1024);
  const double propagation = static_cast<double>(p.port_mtu) + bytes_on_cable +
                             2 * bytes_on_gearbox + p.mac_phy_delay_kb * 1024 + peer_response;
  auto ceil1k = [](double x) { return static_cast<int64_t>(std::ceil(x / 1024.0)) * 1024; };
  Headroom h;
  h.xoff = ceil1k(static_cast<double>(p.lossless_mtu) + propagation * cell_occupancy);
  h.xon = ceil1k(p.pipeline_latency_kb * 1024);
  h.size = h.xoff + h.xon;
  return h;
}

}  // namespace rocefab
