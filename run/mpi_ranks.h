#pragma once
/// @file mpi_ranks.h
/// Ranks (common/runtime/ranks.h) over MPI (Open MPI from Debian: libopenmpi-dev, openmpi-bin),
/// for `mpirun -np N rocefab sim SCENARIO`. MPI is optional at build time (meson finds it or
/// not; ROCEFAB_HAVE_MPI): without it MpiRanks::Init says so.
///
/// MPI is initialised with MPI_THREAD_SERIALIZED: the sim runner calls the collectives from
/// whichever of its partition threads reaches a window's end last, one at a time.

#include <memory>
#include <string>

#include "common/result.h"
#include "common/runtime/ranks.h"

namespace rocefab {

class MpiRanks final : public Ranks {
 public:
  /// Whether this binary was built with MPI.
  static bool Available();
  /// Whether this process was started by an MPI launcher with more than one rank (Open MPI's
  /// OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX_RANK with MPI's own size): `rocefab sim` then
  /// runs as one rank of a distributed run without being asked.
  static bool LaunchedWithRanks();
  /// Initialises MPI (once per process; MPI_Finalize runs at exit). Errors: built without MPI,
  /// MPI_Init_thread fails or gives less than MPI_THREAD_SERIALIZED.
  static Result<std::unique_ptr<MpiRanks>> Init();
  ~MpiRanks() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int64_t Min(int64_t v) override;
  void Or(std::vector<uint8_t>* v) override;
  void Sum(std::vector<uint64_t>* v) override;
  void Max(std::vector<int64_t>* v) override;
  using Ranks::Max;
  std::vector<std::string> AllToAll(std::vector<std::string> out) override;
  std::vector<std::string> AllToAllMin(std::vector<std::string> out, int64_t* v) override;
  /// Ends every rank at once with `code` (MPI_Abort): a rank that failed while the others wait
  /// in a collective.
  [[noreturn]] void Abort(int code);
  /// Ends every rank of the run with `code` if MPI was initialised in this process (a rank
  /// that failed while the others may wait in a collective); returns otherwise, and also after
  /// AgreedToStop (every rank is stopping by itself: an abort would only make the exit messy).
  static void AbortIfRunning(int code);
  static void AgreedToStop() { agreed_to_stop_ = true; }
  /// This rank's host name (MPI_Get_processor_name).
  std::string host() const;

 private:
  MpiRanks() = default;
  int rank_ = 0, size_ = 1;
  static inline bool agreed_to_stop_ = false;
};

}  // namespace rocefab
