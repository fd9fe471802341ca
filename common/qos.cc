#include "common/qos.h"

namespace rocefab {

Result<QosProfile> QosProfile::Named(const std::string& name) {
  QosProfile q;
  if (name == "roce") {
    q.dscp_to_tc.fill(0);
    q.dscp_to_tc[26] = 3;
    q.dscp_to_tc[3] = 3;
    q.dscp_to_tc[4] = 4;
    q.dscp_to_tc[46] = 5;
    q.dscp_to_tc[48] = 6;
  } else if (name == "sonic") {
    q.dscp_to_tc.fill(1);
    q.dscp_to_tc[3] = 3;
    q.dscp_to_tc[4] = 4;
    q.dscp_to_tc[8] = 0;
    q.dscp_to_tc[5] = 2;
    q.dscp_to_tc[46] = 5;
    q.dscp_to_tc[48] = 6;
  } else {
    return Result<QosProfile>::Error("unknown QoS profile \"" + name + "\" (use \"roce\" or \"sonic\")");
  }
  q.tc_to_pg = {0, 0, 0, 3, 4, 0, 0, name == "sonic" ? uint8_t{7} : uint8_t{0}};
  q.lossless_mask = (1 << 3) | (1 << 4);
  return q;
}

}  // namespace rocefab
