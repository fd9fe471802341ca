// Bad input to librocefab-verbs.so, as an application would make it: invalid QP state
// transitions and attributes, bad lkeys, posting to a QP in error, destroying resources in use,
// unsupported QP types and opcodes. Each check prints "ok NAME" or "FAIL NAME: why"; the exit
// status is the number of failures. Run with rocefab exec RUN HOST -- verbs_errors PEER_IP
// (PEER_IP: any other host's address; no frame ever reaches it).
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int failures = 0;

void Check(bool ok, const char* name, const std::string& why = "") {
  if (ok) {
    std::printf("ok %s\n", name);
  } else {
    std::printf("FAIL %s: %s\n", name, why.c_str());
    ++failures;
  }
}

std::string Err(int e) { return std::to_string(e) + " (" + std::strerror(e) + ")"; }

// Polls until one completion arrives (at most ~1 s of empty polls).
bool PollOne(ibv_cq* cq, ibv_wc* wc) {
  for (long i = 0; i < 20'000'000; ++i) {
    const int n = ibv_poll_cq(cq, 1, wc);
    if (n != 0) return n == 1;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: verbs_errors PEER_IPV4\n");
    return 100;
  }
  in_addr peer{};
  if (inet_pton(AF_INET, argv[1], &peer) != 1) return 100;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  Check(list != nullptr && n == 1 && std::strncmp(ibv_get_device_name(list[0]), "rocefab_", 8) == 0,
        "one rocefab device", "got " + std::to_string(n));
  if (n != 1) return 100;
  ibv_context* ctx = ibv_open_device(list[0]);
  Check(ctx != nullptr, "open device");
  if (ctx == nullptr) return 100;
  ibv_port_attr pa{};
  Check(ibv_query_port(ctx, 1, &pa) == 0 && pa.link_layer == IBV_LINK_LAYER_ETHERNET &&
            pa.state == IBV_PORT_ACTIVE,
        "port 1 is an active Ethernet port");
  Check(ibv_query_port(ctx, 2, &pa) != 0, "port 2 does not exist");
  ibv_gid gid{};
  Check(ibv_query_gid(ctx, 1, 0, &gid) == 0 && gid.raw[10] == 0xff && gid.raw[11] == 0xff,
        "GID 0 is the IPv4-mapped address");
  Check(ibv_query_gid(ctx, 1, 1, &gid) != 0, "GID 1 does not exist");

  ibv_pd* pd = ibv_alloc_pd(ctx);
  static char buf[1 << 16];
  errno = 0;
  ibv_mr* bad = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE);
  Check(bad == nullptr && errno == EINVAL, "REMOTE_WRITE without LOCAL_WRITE is EINVAL",
        "errno " + Err(errno));
  ibv_mr* mr =
      ibv_reg_mr(pd, buf, sizeof buf,
                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  Check(mr != nullptr && mr->lkey != 0, "register a region");
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  Check(cq != nullptr, "create a CQ");
  Check(ibv_create_cq(ctx, 0, nullptr, nullptr, 0) == nullptr, "a CQ of 0 entries is refused");

  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_UD;
  errno = 0;
  Check(ibv_create_qp(pd, &ia) == nullptr && errno == EOPNOTSUPP, "UD QPs are not supported",
        "errno " + Err(errno));
  ia.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  Check(qp != nullptr && qp->state == IBV_QPS_RESET && qp->qp_num != 0, "create an RC QP");
  if (qp == nullptr) return 100;

  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
  Check(rc == EINVAL, "RESET -> RTR is EINVAL", "got " + Err(rc));
  a = {};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS);
  Check(rc == EINVAL, "RESET -> INIT without IBV_QP_PORT is EINVAL", "got " + Err(rc));
  a.port_num = 1;
  rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  Check(rc == 0 && qp->state == IBV_QPS_INIT, "RESET -> INIT", "got " + Err(rc));

  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), 64, mr->lkey};
  ibv_send_wr wr{}, *bad_wr = nullptr;
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  rc = ibv_post_send(qp, &wr, &bad_wr);
  Check(rc == EINVAL && bad_wr == &wr, "posting a send in INIT is EINVAL", "got " + Err(rc));

  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = 0x123;
  a.rq_psn = 1;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 0;
  const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  rc = ibv_modify_qp(qp, &a, rtr);
  Check(rc == EINVAL, "an address without a GRH is EINVAL (RoCE)", "got " + Err(rc));
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
  std::memcpy(&a.ah_attr.grh.dgid.raw[12], &peer.s_addr, 4);
  a.ah_attr.grh.hop_limit = 64;
  rc = ibv_modify_qp(qp, &a, rtr);
  Check(rc == 0 && qp->state == IBV_QPS_RTR, "INIT -> RTR", "got " + Err(rc));
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 1;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT);
  Check(rc == EINVAL, "RTR -> RTS without RNR_RETRY and MAX_QP_RD_ATOMIC is EINVAL",
        "got " + Err(rc));
  rc = ibv_modify_qp(qp, &a,
                     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  Check(rc == 0 && qp->state == IBV_QPS_RTS, "RTR -> RTS", "got " + Err(rc));
  a.retry_cnt = 9;
  rc = ibv_modify_qp(qp, &a, IBV_QP_RETRY_CNT);
  Check(rc == EINVAL, "retry_cnt 9 is EINVAL", "got " + Err(rc));

  ibv_sge bad_sge{reinterpret_cast<uintptr_t>(buf), 64, mr->lkey ^ 0x5a5a00};
  ibv_recv_wr rwr{}, *bad_rwr = nullptr;
  rwr.wr_id = 7;
  rwr.sg_list = &bad_sge;
  rwr.num_sge = 1;
  rc = ibv_post_recv(qp, &rwr, &bad_rwr);
  Check(rc == EINVAL && bad_rwr == &rwr, "a receive with a bad lkey is EINVAL", "got " + Err(rc));
  ibv_sge outside{reinterpret_cast<uintptr_t>(buf) + sizeof buf - 8, 64, mr->lkey};
  rwr.sg_list = &outside;
  rc = ibv_post_recv(qp, &rwr, &bad_rwr);
  Check(rc == EINVAL, "a receive past the region's end is EINVAL", "got " + Err(rc));

  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  rc = ibv_post_send(qp, &wr, &bad_wr);
  Check(rc == EINVAL, "WRITE with immediate is not supported (EINVAL)", "got " + Err(rc));
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &bad_sge;
  rc = ibv_post_send(qp, &wr, &bad_wr);
  ibv_wc wc{};
  const bool got = rc == 0 && PollOne(cq, &wc);
  Check(got && wc.status == IBV_WC_LOC_PROT_ERR && wc.wr_id == 1,
        "a send with a bad lkey completes with IBV_WC_LOC_PROT_ERR",
        "rc " + Err(rc) + ", status " + std::string(ibv_wc_status_str(wc.status)));
  ibv_qp_init_attr qia{};
  ibv_qp_attr qa{};
  ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia);
  Check(qa.qp_state == IBV_QPS_ERR, "... and the QP is in the error state");
  wr.sg_list = &sge;
  wr.wr_id = 2;
  rc = ibv_post_send(qp, &wr, &bad_wr);
  const bool flushed = rc == 0 && PollOne(cq, &wc);
  Check(flushed && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 2,
        "a send posted in the error state completes with IBV_WC_WR_FLUSH_ERR",
        "rc " + Err(rc) + ", status " + std::string(ibv_wc_status_str(wc.status)));

  rc = ibv_destroy_cq(cq);
  Check(rc == EBUSY, "destroying a CQ a QP uses is EBUSY", "got " + Err(rc));
  rc = ibv_dealloc_pd(pd);
  Check(rc == EBUSY, "freeing a PD with a region and a QP is EBUSY", "got " + Err(rc));
  Check(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0 && ibv_dereg_mr(mr) == 0 &&
            ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0,
        "everything is released in order");
  ibv_free_device_list(list);
  std::printf("%d failure(s)\n", failures);
  return failures;
}
