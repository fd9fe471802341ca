#include "run/mpi_ranks.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#ifdef ROCEFAB_HAVE_MPI
// The C API only: Open MPI's deprecated C++ bindings do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace rocefab {

bool MpiRanks::LaunchedWithRanks() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    const char* s = std::getenv(v);
    if (s != nullptr && std::atoi(s) > 1) return true;
  }
  return false;
}

#ifdef ROCEFAB_HAVE_MPI

bool MpiRanks::Available() { return true; }

Result<std::unique_ptr<MpiRanks>> MpiRanks::Init() {
  using R = Result<std::unique_ptr<MpiRanks>>;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      return R::Error("mpi: MPI_Init_thread failed");
    }
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
    if (provided < MPI_THREAD_SERIALIZED) {
      return R::Error(
          "mpi: this MPI library gives no MPI_THREAD_SERIALIZED (the sim's partition threads "
          "take turns calling it)");
    }
  }
  std::unique_ptr<MpiRanks> r(new MpiRanks());
  MPI_Comm_rank(MPI_COMM_WORLD, &r->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &r->size_);
  return R(std::move(r));
}

MpiRanks::~MpiRanks() = default;

int64_t MpiRanks::Min(int64_t v) {
  int64_t out = v;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  return out;
}

void MpiRanks::Or(std::vector<uint8_t>* v) {
  MPI_Allreduce(MPI_IN_PLACE, v->data(), static_cast<int>(v->size()), MPI_UINT8_T, MPI_BOR,
                MPI_COMM_WORLD);
}

void MpiRanks::Sum(std::vector<uint64_t>* v) {
  MPI_Allreduce(MPI_IN_PLACE, v->data(), static_cast<int>(v->size()), MPI_UINT64_T, MPI_SUM,
                MPI_COMM_WORLD);
}

void MpiRanks::Max(std::vector<int64_t>* v) {
  MPI_Allreduce(MPI_IN_PLACE, v->data(), static_cast<int>(v->size()), MPI_INT64_T, MPI_MAX,
                MPI_COMM_WORLD);
}

std::vector<std::string> MpiRanks::AllToAll(std::vector<std::string> out) {
  int64_t unused = 0;
  return AllToAllMin(std::move(out), &unused);
}

// One MPI_Alltoall carries each message's size and the caller's value (so the Min needs no round
// of its own), then one MPI_Alltoallv the messages.
std::vector<std::string> MpiRanks::AllToAllMin(std::vector<std::string> out, int64_t* v) {
  const auto n = static_cast<size_t>(size_);
  const auto me = static_cast<size_t>(rank_);
  std::vector<int64_t> head_out(2 * n), head_in(2 * n);
  std::vector<int> send_counts(n), recv_counts(n), send_displs(n), recv_displs(n);
  std::string send;
  for (size_t r = 0; r < n; ++r) {
    send_displs[r] = static_cast<int>(send.size());
    send_counts[r] = r == me ? 0 : static_cast<int>(out[r].size());
    if (r != me) send += out[r];
    head_out[2 * r] = send_counts[r];
    head_out[2 * r + 1] = *v;
  }
  MPI_Alltoall(head_out.data(), 2, MPI_INT64_T, head_in.data(), 2, MPI_INT64_T, MPI_COMM_WORLD);
  int total = 0;
  for (size_t r = 0; r < n; ++r) {
    recv_counts[r] = static_cast<int>(head_in[2 * r]);
    recv_displs[r] = total;
    total += recv_counts[r];
    *v = std::min(*v, head_in[2 * r + 1]);
  }
  std::string recv(static_cast<size_t>(total), '\0');
  MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_BYTE, recv.data(),
                recv_counts.data(), recv_displs.data(), MPI_BYTE, MPI_COMM_WORLD);
  std::vector<std::string> in(n);
  for (size_t r = 0; r < n; ++r) {
    in[r] = r == me ? std::move(out[r])
                    : recv.substr(static_cast<size_t>(recv_displs[r]),
                                  static_cast<size_t>(recv_counts[r]));
  }
  return in;
}

void MpiRanks::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

void MpiRanks::AbortIfRunning(int code) {
  int initialised = 0, finalized = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  if (initialised && !finalized && !agreed_to_stop_) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
}

std::string MpiRanks::host() const {
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<size_t>(len));
}

#else  // built without MPI

bool MpiRanks::Available() { return false; }

Result<std::unique_ptr<MpiRanks>> MpiRanks::Init() {
  return Result<std::unique_ptr<MpiRanks>>::Error(
      "mpi: this rocefab was built without MPI (install libopenmpi-dev, then meson setup "
      "--reconfigure build)");
}

MpiRanks::~MpiRanks() = default;
int64_t MpiRanks::Min(int64_t v) { return v; }
void MpiRanks::Or(std::vector<uint8_t>*) {}
void MpiRanks::Sum(std::vector<uint64_t>*) {}
void MpiRanks::Max(std::vector<int64_t>*) {}
std::vector<std::string> MpiRanks::AllToAll(std::vector<std::string> out) { return out; }
std::vector<std::string> MpiRanks::AllToAllMin(std::vector<std::string> out, int64_t*) {
  return out;
}
void MpiRanks::Abort(int code) { std::exit(code); }
void MpiRanks::AbortIfRunning(int) {}
std::string MpiRanks::host() const { return ""; }

#endif

}  // namespace rocefab
