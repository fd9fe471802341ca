#include "common/wire/pcap_writer.h"

#include <pcap/pcap.h>

#include "common/files.h"

namespace rocefab {

Result<PcapWriter*> PcapWriter::Open(const std::string& path) {
  if (Status st = RefuseSymlink(path); !st.ok()) return Result<PcapWriter*>::Error(st.message());
  pcap_t* p = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  if (p == nullptr) return Result<PcapWriter*>::Error(path + ": pcap_open_dead failed");
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (d == nullptr) {
    std::string err = pcap_geterr(p);
    pcap_close(p);
    return Result<PcapWriter*>::Error(path + ": " + err);
  }
  return new PcapWriter(p, d, path);
}

PcapWriter::~PcapWriter() {
  pcap_dump_close(dumper_);
  pcap_close(pcap_);
}

Status PcapWriter::Flush() {
  if (pcap_dump_flush(dumper_) != 0) return Status::Error(path_ + ": write failed");
  return Status();
}

void PcapWriter::Write(Time t, const rte_mbuf* m) {
  Write(t, rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m));
}

void PcapWriter::Write(Time t, const uint8_t* data, uint32_t caplen, uint32_t len) {
  pcap_pkthdr h{};
  const Time ns = t / kNs;
  h.ts.tv_sec = ns / 1'000'000'000;
  h.ts.tv_usec = ns % 1'000'000'000;  // nanoseconds with PCAP_TSTAMP_PRECISION_NANO
  h.caplen = caplen;
  h.len = len;
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, data);
  ++frames_;
}

}  // namespace rocefab
