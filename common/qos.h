#pragma once
/// @file qos.h
/// QoS classification: priority from DSCP (the paper's DSCP-based PFC) or from the 802.1Q PCP
/// bits (legacy VLAN-based PFC), then traffic class -> ingress priority group (PG) and egress
/// queue, and the set of lossless priorities (PFC enabled).
///
/// Profiles (name -> maps):
///  - "roce" (default): DSCP 26 (the RNIC default for RoCE) and DSCP 3 -> TC3 lossless (bulk);
///    DSCP 4 -> TC4 lossless (real-time: the paper runs two lossless classes); DSCP 48 (CNP,
///    NVIDIA default CNP_DSCP) -> TC6; DSCP 46 -> TC5; everything else -> TC0 (best effort).
///    TC -> queue identity; lossless TCs -> PG = TC, lossy TCs -> PG0. Lossless: {3, 4}.
///  - "sonic": SONiC's AZURE maps (qos_config.j2): DSCP 3->3, 4->4, 8->0, 5->2, 46->5, 48->6,
///    every other DSCP -> 1; TC->PG 3->3, 4->4, 7->7, others 0; lossless {3, 4}.
/// In PCP mode the TC is the PCP of the frame's tag (untagged frames: TC0); a routed hop forwards
/// untagged, so the next switch sees TC0: lossless treatment is lost, as in the paper (§3).

#include <array>
#include <cstdint>
#include <string>

#include "common/result.h"

namespace rocefab {

enum class QosTrust : uint8_t { kDscp, kPcp };

struct QosProfile {
  QosTrust trust = QosTrust::kDscp;
  std::array<uint8_t, 64> dscp_to_tc{};
  std::array<uint8_t, 8> pcp_to_tc{0, 1, 2, 3, 4, 5, 6, 7};
  std::array<uint8_t, 8> tc_to_pg{};
  std::array<uint8_t, 8> tc_to_queue{0, 1, 2, 3, 4, 5, 6, 7};
  uint8_t lossless_mask = 0;  ///< bit p set: priority p is lossless (PFC enabled)

  bool lossless(uint8_t prio) const { return (lossless_mask >> prio) & 1; }
  /// Traffic class of a frame with this DSCP / PCP (has_tag false: untagged).
  uint8_t Classify(uint8_t dscp, bool has_tag, uint8_t pcp) const {
    if (trust == QosTrust::kDscp) return dscp_to_tc[dscp & 63];
    return has_tag ? pcp_to_tc[pcp & 7] : 0;
  }

  /// "roce" or "sonic"; error names the allowed values.
  static Result<QosProfile> Named(const std::string& name);
};

}  // namespace rocefab
