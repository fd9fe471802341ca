#pragma once
/// @file wire_model.h
/// How many bytes a frame occupies a link for. A link of rate R is busy for
/// TxTime(FrameBytes(m), R) per frame; the NIC's rate limiter paces by the same bytes, and the
/// ideal-FCT yardstick counts them. Two models:
///
///   EthernetWire  real IEEE 802.3 framing (WireBytes in time.h): the frame padded to 60 bytes,
///                 FCS 4, preamble + SFD 8, inter-frame gap 12. The default, and what a real
///                 fabric carries.
///   Ns3PppWire    what the reference ConWeave ns-3 simulator (conweave-project/conweave-ns3,
///                 commit 236a801; read for facts) puts on its point-to-point links, so that a
///                 side-by-side comparison does not measure framing (scenario "compat":
///                 "conweave-ns3", topo/compat.h). Sizes there (qbb-net-device.cc TransmitStart
///                 serializes p->GetSize() with no preamble or inter-frame gap):
///                   data packet  payload + 36: PPP 2 + IPv4 20 + UDP 8 + SeqTsHeader 6
///                                (rdma-hw.cc GetNxtPacket; IntHeader is empty under DCQCN)
///                   ACK / NAK    48: PPP 2 + IPv4 20 + qbbHeader 18 + 8 bytes of padding
///                                (rdma-hw.cc ReceiveUdp pads the packet as if a 14-byte Ethernet
///                                header made it 60 bytes)
///                   CNP          0: the reference has no CNP packet; its receiver flags the ACK
///                                of a CE-marked packet (the CNP rides on it)
///                   PFC          31: PPP 2 + IPv4 20 + PauseHeader 9 (qbb-net-device.cc SendPfc)
///                   other IPv4   IPv4 total length + 2 (PPP); ARP 28 + 2
///                 A RoCEv2 data frame's payload is its UDP payload less BTH 12, the opcode's
///                 extension headers (RETH 16, AETH 4, ImmDt 4), pad and ICRC 4.
/// Frames that do not parse are charged as Ethernet.
///
/// BufferBytes: how many bytes a frame occupies a switch buffer (MMU accounting, PFC and ECN
/// thresholds). Ethernet: the frame without FCS (rte_pktmbuf_pkt_len). Ns3PppWire: the same
/// packet sizes as on its links, as the reference's MMU charges p->GetSize() of the packet with
/// its PPP header (switch-node.cc SendToDev, switch-mmu.cc UpdateIngressAdmission); frames that
/// do not parse: their length.

#include <rte_mbuf.h>

#include <cstdint>
#include <string_view>

namespace rocefab {

class WireModel {
 public:
  virtual ~WireModel() = default;
  /// "ethernet" or "conweave-ns3".
  virtual std::string_view name() const = 0;
  /// Link occupancy of frame `m`, in bytes (>= 0). Single-segment frames.
  virtual int64_t FrameBytes(const rte_mbuf* m) const = 0;
  /// The same for a frame of `frame_len` bytes (without FCS) that is a RoCEv2 data packet with
  /// `payload` bytes of payload (for computed yardsticks: base RTT, ideal FCT).
  virtual int64_t DataBytes(int64_t frame_len, uint32_t payload) const = 0;
  /// The same for a RoCEv2 ACK (BTH + AETH) of `frame_len` bytes.
  virtual int64_t AckBytes(int64_t frame_len) const = 0;
  /// The fewest bytes any frame occupies (a lower bound for lookahead windows).
  virtual int64_t MinFrameBytes() const = 0;
  /// Bytes `m` occupies a switch buffer (see the file comment); >= 0.
  virtual int64_t BufferBytes(const rte_mbuf* m) const = 0;
};

/// IEEE 802.3 (clause 4.4.2) framing: WireBytes(frame length).
class EthernetWire final : public WireModel {
 public:
  static const EthernetWire& Instance();
  std::string_view name() const override { return "ethernet"; }
  int64_t FrameBytes(const rte_mbuf* m) const override;
  int64_t DataBytes(int64_t frame_len, uint32_t payload) const override;
  int64_t AckBytes(int64_t frame_len) const override;
  int64_t MinFrameBytes() const override;
  int64_t BufferBytes(const rte_mbuf* m) const override { return rte_pktmbuf_pkt_len(m); }
};

/// The reference ns-3 simulator's point-to-point packet sizes (see the file comment).
class Ns3PppWire final : public WireModel {
 public:
  static const Ns3PppWire& Instance();
  static constexpr int64_t kPpp = 2;
  static constexpr int64_t kDataOverhead = kPpp + 20 + 8 + 6;  ///< PPP, IPv4, UDP, SeqTsHeader
  static constexpr int64_t kAck = kPpp + 20 + 18 + 8;          ///< PPP, IPv4, qbbHeader, pad
  static constexpr int64_t kPfc = kPpp + 20 + 9;               ///< PPP, IPv4, PauseHeader
  static constexpr int64_t kCnp = 0;                           ///< flagged on the ACK instead
  std::string_view name() const override { return "conweave-ns3"; }
  int64_t FrameBytes(const rte_mbuf* m) const override;
  int64_t DataBytes(int64_t frame_len, uint32_t payload) const override;
  int64_t AckBytes(int64_t frame_len) const override;
  int64_t MinFrameBytes() const override { return 0; }
  int64_t BufferBytes(const rte_mbuf* m) const override { return Bytes(m, rte_pktmbuf_pkt_len(m)); }

 private:
  /// The packet size of `m` in the reference, or `unparsed` for a frame that does not parse.
  int64_t Bytes(const rte_mbuf* m, int64_t unparsed) const;
};

}  // namespace rocefab
