#include "switch/switch_config.h"

namespace rocefab {

PgProfile ResolveLosslessPg(const BufferConfig& buffer, const SwitchPortConfig& port) {
  const LosslessPgConfig& c = port.lossless ? *port.lossless : buffer.lossless;
  PgProfile pg = c.pg;
  if (c.auto_xoff || c.auto_xon) {
    HeadroomParams hp;
    hp.speed = port.rate;
    hp.cable_m = port.cable_m;
    hp.port_mtu = 1518;  // largest frame rocefab forwards (1500-byte MTU + header + tag)
    hp.lossless_mtu = 1518;
    // The formula counts the gearbox delay twice (both ends): half the extra reaction time each.
    hp.gearbox_delay_ns = static_cast<double>(buffer.headroom_extra_delay) / kNs / 2;
    const Headroom h = ComputeHeadroom(hp);
    if (c.auto_xoff) pg.xoff = h.xoff;
    if (c.auto_xon) pg.xon = h.xon;
  }
  return pg;
}

}  // namespace rocefab
