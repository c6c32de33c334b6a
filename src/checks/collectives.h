// The collectives `kind: collective` drives, one row each, in nccl-tests' manner
// (`{"AllGather", AllGatherGetCollByteCount, AllGatherInitData, AllGatherGetBw,
// AllGatherRunColl}`): buffer layout, crafted inputs whose exact results are known on every rank,
// the bus-bandwidth factor and the call. Inputs are small integers (|x| <= 2 where reduced, <= 125
// where moved), exact in f16, bf16, f32 and i32, and so are sums over up to 64 ranks in any order.
#pragma once

#include <cstddef>
#include <vector>

#include "mesh/communicator.h"
#include "tensor/dtype.h"

namespace h0::checks::collectives {

// One call of a collective on one rank.
struct Args {
  int rank = 0, size = 1;
  size_t count = 0;  // the count argument of the Communicator call
  tensor::DType dtype = tensor::DType::kF32;
  mesh::ReduceOp reduce = mesh::ReduceOp::kSum;
  int root = 0;  // broadcast
};

// Element counts of the buffers, and where send and recv sit in the single in-place buffer
// (NCCL's in-place layouts: all_gather sends from block `rank`, reduce_scatter receives there).
struct Layout {
  size_t send = 0, recv = 0;
  size_t in_place = 0, in_place_send = 0,
         in_place_recv = 0;  // buffer size, send offset, recv offset
};

struct Collective {
  const char* name;
  bool reduces;                    // takes `reduce: sum|max`
  bool out_of_place, in_place;     // the forms it runs
  bool blocks;                     // buffers hold `size` blocks of `count`: count = elements / size
  double (*bus_factor)(int size);  // busbw = algbw * factor (nccl-tests' PERFORMANCE.md)
  Layout (*layout)(const Args& a);
  double (*input)(const Args& a, int rank, size_t i);  // element i of `rank`'s send buffer
  double (*expected)(const Args& a, size_t i);         // element i of this rank's recv buffer
  void (*call)(mesh::Communicator& c, const void* send, void* recv, const Args& a);
};

const std::vector<Collective>& table();
// nullptr if unknown.
const Collective* find(const std::string& name);
// The call's count for a swept size of `bytes` (rounded down to whole elements and blocks).
size_t count_for(const Collective& c, double bytes, tensor::DType dtype, int size);
// The bytes algbw divides by time: nccl-tests' "size" (the whole n-block buffer where blocked).
double algbw_bytes(const Collective& c, const Args& a);
// A value no input or reduction result takes, for buffers a collective must overwrite.
inline constexpr double kSentinel = 127;

}  // namespace h0::checks::collectives
