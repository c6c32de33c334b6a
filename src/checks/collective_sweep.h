// One step of `kind: collective`'s size sweep on this rank (nccl-tests' method): fill the
// buffers with crafted inputs, run the collective once and count the wrong elements, then time
// warmup + repeats calls. Out of place and in place, as the collective has them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "checks/collectives.h"

namespace h0::checks::collectives {

// Where the buffers live: host memory (mpi, single engines) or device memory (nccl).
class Memory {
 public:
  virtual ~Memory() = default;
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* src, size_t bytes) = 0;
};
std::unique_ptr<Memory> host_memory();
std::unique_ptr<Memory> device_memory();  // the NCCL engine's (nccl_communicator.h)

enum Form { kOutOfPlace = 0, kInPlace = 1 };
inline const char* form_name(Form f) { return f == kOutOfPlace ? "out of place" : "in place"; }

struct FormResult {
  bool ran = false;
  int64_t wrong = 0;               // elements of this rank's result that differ from the expected
  int64_t first_wrong = -1;        // the index of the first, -1 if none
  double got = 0, want = 0;        // its value and the expected one
  std::vector<double> samples_ns;  // each timed call
  double mean_ns() const;
};

struct SizeResult {
  double bytes = 0;        // the swept size
  double algbw_bytes = 0;  // what algbw divides by time
  size_t count = 0;        // the call's count argument
  FormResult form[2];      // indexed by Form
};

// Runs one size. A mesh failure propagates as MeshError / MeshTimeout.
SizeResult run_size(mesh::Communicator& comm, Memory& memory, const Collective& coll, Args args,
                    double bytes, int warmup, int repeats);

}  // namespace h0::checks::collectives
