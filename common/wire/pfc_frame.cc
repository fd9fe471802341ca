#include "common/wire/pfc_frame.h"

#include <rte_byteorder.h>

#include <cstring>

#include "common/eal.h"
#include "common/packet.h"

namespace rocefab {

rte_mbuf* BuildPfc(rte_mempool* pool, const Mac& src, uint8_t class_enable,
                   const std::array<uint16_t, 8>& quanta) {
  rte_mbuf* m = AllocMbuf(pool);
  if (m == nullptr) return nullptr;
  uint8_t* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kPfcFrameLen));
  if (d == nullptr) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  std::memset(d, 0, kPfcFrameLen);
  Meta(m)->flags = 0;  // the private area keeps the previous frame's metadata
  static const uint8_t kDst[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
  std::memcpy(d, kDst, 6);
  std::memcpy(d + 6, src.addr_bytes, 6);
  d[12] = 0x88;
  d[13] = 0x08;
  d[14] = 0x01;
  d[15] = 0x01;
  d[16] = 0;  // upper octet of the class-enable vector is reserved
  d[17] = class_enable;
  for (int p = 0; p < 8; ++p) {
    const uint16_t q = (class_enable >> p) & 1 ? quanta[p] : 0;
    d[18 + 2 * p] = q >> 8;
    d[19 + 2 * p] = q & 0xFF;
  }
  return m;
}

bool ParsePfc(const rte_mbuf* m, PfcFrame* out) {
  const uint32_t len = rte_pktmbuf_data_len(m);
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  if (len < 18) return false;
  out->opcode = static_cast<uint16_t>(d[14] << 8 | d[15]);
  if (out->opcode == kMacControlOpPause) {
    out->class_enable = 0xFF;
    out->quanta.fill(static_cast<uint16_t>(d[16] << 8 | d[17]));
    return true;
  }
  if (out->opcode != kMacControlOpPfc || len < 34) return false;
  out->class_enable = d[17];
  for (int p = 0; p < 8; ++p)
    out->quanta[p] = static_cast<uint16_t>(d[18 + 2 * p] << 8 | d[19 + 2 * p]);
  return true;
}

}  // namespace rocefab
