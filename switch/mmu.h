#pragma once
/// @file mmu.h
/// Shared-buffer MMU with SAI/SONiC semantics, as pure accounting (no packets, clock or I/O).
///
/// Every admitted frame is charged twice, like a Broadcom-style MMU: to its ingress (port, PG)
/// and to its egress (port, queue). One buffer of `buffer_bytes` holds:
///   - per (port, PG) reserved bytes (SAI BUFFER_SIZE; guaranteed),
///   - per lossless (port, PG) dedicated headroom of `xoff` bytes (SAI XOFF_TH),
///   - a shared pool with the rest: shared_pool = buffer - sum(reserved) - sum(headroom).
/// Ingress admission of a frame of L bytes to (port, PG) (saibuffer.h; HPCC switch-mmu.cc shape):
///   1. reserved_used + L <= reserved            -> reserved
///   2. pg_shared + L <= limit                    -> shared, where limit is
///        dynamic: alpha * (shared_pool - shared_used), alpha = 2^dynamic_th (Choudhury-Hahne DT)
///        static:  static_th bytes
///   3. lossless PG: headroom_used + L <= xoff     -> headroom (the PG is in XOFF); with a shared
///      headroom pool (SAI XOFF_SIZE > 0) also shared_headroom_used + L <= shared_headroom_pool
///      otherwise                                  -> drop (lossless: headroom exhausted; lossy:
///                                                    ingress limit)
/// With a shared headroom pool the per-PG xoff bytes are a cap, not reserved: the buffer holds
/// reserved + shared_headroom_pool + the shared pool (saibuffer.h SAI_BUFFER_POOL_ATTR_XOFF_SIZE).
/// A lossless PG with xoff 0 is accepted (SONiC takes it too): every frame over the limit is
/// dropped, which is the misconfiguration fabric/check.cc names.
/// The buckets of a PG are counters, as in a hardware MMU's per-PG cell counts: whatever bucket a
/// frame was admitted to, its departure returns headroom first, then shared bytes, then reserved
/// (the reverse of admission; the reference ns-3 MMUs do the same: HPCC's and ConWeave's
/// switch-mmu.cc RemoveFromIngressAdmission take the headroom count down first). So a PG's
/// headroom empties as soon as as many bytes have left as spilled into it, even when the frames
/// that spilled are still queued, e.g. held in a ConWeave reorder queue.
/// XOFF: a lossless PG goes to XOFF when a frame spills into headroom or its shared occupancy
/// reaches the limit. XON (SAI XON_TH/XON_OFFSET_TH): when its headroom is empty and its total
/// usage <= max(xon, reserved + limit - xon_offset).
/// Egress: lossy queues drop when queue_shared + L > alpha_e * (egress_pool - egress_used)
/// (or a static limit); lossless queues are never dropped at egress (ingress PFC protects them).
///
/// Headroom (`ComputeHeadroom`) follows SONiC's cfgmgr/buffer_headroom_mellanox.lua.

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"

namespace rocefab {

/// Buffer profile of an ingress (port, PG): SAI BUFFER_PROFILE attributes.
struct PgProfile {
  int64_t reserved = 0;    ///< guaranteed bytes, >= 0
  int dynamic_th = 0;      ///< alpha = 2^dynamic_th, -8..8 (used when static_th == 0)
  int64_t static_th = 0;   ///< static shared limit in bytes; 0 = dynamic threshold
  int64_t xoff = 0;        ///< lossless: dedicated headroom bytes (> 0)
  int64_t xon = 0;         ///< lossless: XON_TH bytes
  int64_t xon_offset = 0;  ///< lossless: XON_OFFSET_TH bytes
};

/// Egress (port, queue) profile.
struct QueueProfile {
  int64_t reserved = 0;
  int dynamic_th = 0;
  int64_t static_th = 0;
};

struct MmuConfig {
  int64_t buffer_bytes = 12 << 20;  ///< whole switch buffer, > sum of reserved + headroom
  uint16_t num_ports = 0;
  uint8_t lossless_pg_mask = 0;        ///< bit g: PG g is lossless
  PgProfile lossy_pg;                  ///< every lossy (port, PG)
  std::vector<PgProfile> lossless_pg;  ///< per port: the profile of its lossless PGs
  QueueProfile lossy_queue;            ///< every lossy (port, queue)
  uint8_t lossless_queue_mask = 0;     ///< bit q: queue q carries lossless traffic (no egress drop)
  /// A lossless PG over its shared limit keeps taking shared-pool bytes while the pool has room
  /// (the limit only sends XOFF) and spills into headroom once the pool is full: the reference
  /// ConWeave ns-3 simulator's Broadcom model (switch-mmu.cc CheckIngressAdmission and
  /// UpdateIngressAdmission; topo/compat.h). false: SAI semantics, headroom beyond the limit.
  bool lossless_shared_beyond_limit = false;
  /// > 0: headroom is one pool of this many bytes shared by every lossless PG, each up to its
  /// xoff (SAI_BUFFER_POOL_ATTR_XOFF_SIZE); 0: each lossless PG has xoff bytes of its own.
  int64_t shared_headroom_pool = 0;
};

enum class MmuBucket : uint8_t { kReserved, kShared, kHeadroom, kNone };

struct AdmitResult {
  enum class Verdict : uint8_t {
    kAccept,
    kDropLosslessHeadroom,  ///< lossless PG with its headroom exhausted: must stay zero
    kDropIngressLimit,      ///< lossy PG over its ingress limit
    kDropEgressLimit,       ///< lossy queue over its egress limit
  };
  Verdict verdict = Verdict::kAccept;
  MmuBucket bucket = MmuBucket::kNone;
  bool xoff = false;  ///< this frame moved (in_port, pg) to XOFF: send a PFC XOFF upstream
};

class SharedBufferMmu {
 public:
  /// Errors: reserved + headroom larger than the buffer, profiles out of range.
  static Result<SharedBufferMmu> Create(const MmuConfig& cfg);

  /// Charges `bytes` to ingress (in_port, pg) and egress (out_port, queue). in_port may be
  /// kNoPort for frames the switch itself originates (egress only).
  AdmitResult Admit(uint16_t in_port, uint8_t pg, uint16_t out_port, uint8_t queue, int64_t bytes);
  /// Releases a frame of `bytes` (as admitted): from the PG's headroom, shared and reserved counts
  /// in that order, unless `bucket` is kNone (the frame was not charged to an ingress PG).
  /// Returns true if (in_port, pg) moved to XON.
  bool Release(uint16_t in_port, uint8_t pg, MmuBucket bucket, uint16_t out_port, uint8_t queue,
               int64_t bytes);

  /// Current dynamic (or static) shared limit of a (port, PG), in bytes.
  int64_t PgLimit(uint16_t port, uint8_t pg) const {
    const PgProfile& p = Profile(port, pg);
    return p.static_th > 0 ? p.static_th : Dynamic(p.dynamic_th, shared_pool_ - shared_used_);
  }
  int64_t QueueLimit(uint16_t port, uint8_t queue) const;
  bool xoff(uint16_t port, uint8_t pg) const { return pg_[Idx(port, pg)].xoff; }
  int64_t pg_bytes(uint16_t port, uint8_t pg) const;
  int64_t pg_headroom_bytes(uint16_t port, uint8_t pg) const { return pg_[Idx(port, pg)].headroom; }
  int64_t pg_reserved_bytes(uint16_t port, uint8_t pg) const {
    return pg_[Idx(port, pg)].reserved_used;
  }
  int64_t pg_shared_bytes(uint16_t port, uint8_t pg) const { return pg_[Idx(port, pg)].shared; }
  int64_t pg_watermark(uint16_t port, uint8_t pg) const { return pg_[Idx(port, pg)].watermark; }
  int64_t queue_bytes(uint16_t port, uint8_t q) const { return q_[Idx(port, q)].bytes; }
  int64_t queue_watermark(uint16_t port, uint8_t q) const { return q_[Idx(port, q)].watermark; }
  int64_t shared_pool_bytes() const { return shared_pool_; }
  int64_t shared_used() const { return shared_used_; }
  /// Bytes in the shared headroom pool (0 without one).
  int64_t shared_headroom_used() const { return shared_headroom_used_; }
  int64_t total_used() const { return total_used_; }
  const MmuConfig& config() const { return cfg_; }
  bool lossless_pg(uint8_t pg) const { return (cfg_.lossless_pg_mask >> pg) & 1; }

  static constexpr uint16_t kNoPort = UINT16_MAX;

 private:
  struct PgState {
    int64_t reserved_used = 0, shared = 0, headroom = 0, watermark = 0;
    bool xoff = false;
  };
  struct QState {
    int64_t bytes = 0, watermark = 0;
  };
  explicit SharedBufferMmu(const MmuConfig& cfg) : cfg_(cfg) {}
  size_t Idx(uint16_t port, uint8_t i) const { return static_cast<size_t>(port) * 8 + i; }
  const PgProfile& Profile(uint16_t port, uint8_t pg) const {
    return lossless_pg(pg) ? cfg_.lossless_pg[port] : cfg_.lossy_pg;
  }
  /// SAI dynamic threshold: alpha x free bytes, alpha = 2^dynamic_th.
  static int64_t Dynamic(int dynamic_th, int64_t free_bytes) {
    if (free_bytes <= 0) return 0;
    return dynamic_th >= 0 ? free_bytes << dynamic_th : free_bytes >> -dynamic_th;
  }

  MmuConfig cfg_;
  std::vector<PgState> pg_;
  std::vector<QState> q_;
  int64_t shared_pool_ = 0;
  int64_t shared_used_ = 0;
  int64_t shared_headroom_used_ = 0;
  int64_t egress_pool_ = 0;
  int64_t egress_used_ = 0;
  int64_t total_used_ = 0;
};

/// Inputs of SONiC's headroom calculator (buffer_headroom_mellanox.lua); defaults are the
/// Spectrum-1 example of SONiC's dynamically-headroom-calculation doc.
struct HeadroomParams {
  BitRate speed = 100 * kGbps;
  double cable_m = 5;
  int64_t port_mtu = 9100;
  int64_t lossless_mtu = 1024;
  int small_packet_percentage = 100;
  int64_t cell_size = 96;
  double pipeline_latency_kb = 18;
  double mac_phy_delay_kb = 0.8;
  double gearbox_delay_ns = 0;
};
struct Headroom {
  int64_t xoff = 0;  ///< bytes of headroom above the XOFF point
  int64_t xon = 0;
  int64_t size = 0;  ///< xoff + xon (independent headroom model)
};
/// IEEE 802.3 31B.3.7 pause reaction quanta for `speed` (SONiC's table): 100M 1, 1G 2, 10G 67,
/// 25G 80, 40G 118, 50G 147, 100G 394, 200G 453, 400G and up 905. Nearest lower speed otherwise.
int PeerResponseQuanta(BitRate speed);
Headroom ComputeHeadroom(const HeadroomParams& p);

}  // namespace rocefab
