#include "common/pcap_writer.h"

#include <pcap/pcap.h>

namespace rocefab {

Result<PcapWriter*> PcapWriter::Open(const std::string& path) {
  pcap_t* p = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  if (p == nullptr) return Result<PcapWriter*>::Error(path + ": pcap_open_dead failed");
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (d == nullptr) {
    std::string err = pcap_geterr(p);
    pcap_close(p);
    return Result<PcapWriter*>::Error(path + ": " + err);
  }
  return new PcapWriter(p, d);
}

PcapWriter::~PcapWriter() {
  pcap_dump_close(dumper_);
  pcap_close(pcap_);
}

void PcapWriter::Write(Time t, const rte_mbuf* m) {
  pcap_pkthdr h{};
  const Time ns = t / kNs;
  h.ts.tv_sec = ns / 1'000'000'000;
  h.ts.tv_usec = ns % 1'000'000'000;  // nanoseconds with PCAP_TSTAMP_PRECISION_NANO
  h.caplen = rte_pktmbuf_data_len(m);
  h.len = rte_pktmbuf_pkt_len(m);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, rte_pktmbuf_mtod(m, const u_char*));
  ++frames_;
}

}  // namespace rocefab
