#include "checks/collectives.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace h0::checks::collectives {
namespace {

using mesh::Communicator;
using mesh::ReduceOp;

// A well-mixed hash of (rank, index): any misplaced block or missing rank shows.
uint32_t mix(int rank, size_t i) {
  uint64_t x = (static_cast<uint64_t>(rank) << 40) ^ static_cast<uint64_t>(i);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>(x ^ (x >> 31));
}
// Inputs of reductions, in [-2, 2].
double small(int rank, size_t i) { return static_cast<double>(mix(rank, i) % 5) - 2; }
// Inputs of data movement, in [-125, 125].
double large(int rank, size_t i) { return static_cast<double>(mix(rank, i) % 251) - 125; }

// Element i of the reduction over ranks of small(r, i).
double reduced(const Args& a, size_t i) {
  double acc = small(0, i);
  for (int r = 1; r < a.size; ++r) {
    acc = a.reduce == ReduceOp::kSum ? acc + small(r, i) : std::max(acc, small(r, i));
  }
  return acc;
}
// Element j of block b of `count`: (block owner, index within it).
int block_of(const Args& a, size_t i) { return a.count ? static_cast<int>(i / a.count) : 0; }
size_t within(const Args& a, size_t i) { return a.count ? i % a.count : 0; }

// nccl-tests' bus-bandwidth factors (doc/PERFORMANCE.md).
double ring_factor(int n) { return 2.0 * (n - 1) / n; }
double spread_factor(int n) { return static_cast<double>(n - 1) / n; }
double one(int) { return 1; }

double small_input(const Args&, int rank, size_t i) { return small(rank, i); }
double large_input(const Args&, int rank, size_t i) { return large(rank, i); }

Layout flat(const Args& a) { return {a.count, a.count, a.count, 0, 0}; }
Layout gathered(const Args& a) {
  const size_t all = a.count * a.size;
  return {a.count, all, all, a.count * a.rank, 0};
}
Layout scattered(const Args& a) {
  const size_t all = a.count * a.size;
  return {all, a.count, all, 0, a.count * a.rank};
}
Layout blocked(const Args& a) {
  const size_t all = a.count * a.size;
  return {all, all, all, 0, 0};
}

double all_reduce_want(const Args& a, size_t i) { return reduced(a, i); }
double all_gather_want(const Args& a, size_t i) { return large(block_of(a, i), within(a, i)); }
double reduce_scatter_want(const Args& a, size_t i) { return reduced(a, a.count * a.rank + i); }
// Block b of this rank's recv is block `rank` of rank b's send.
double all_to_all_want(const Args& a, size_t i) {
  return large(block_of(a, i), a.count * a.rank + within(a, i));
}
double broadcast_want(const Args& a, size_t i) { return large(a.root, i); }
double ring_want(const Args& a, size_t i) { return large((a.rank + a.size - 1) % a.size, i); }

void all_reduce_call(Communicator& c, const void* s, void* r, const Args& a) {
  c.all_reduce(s, r, a.count, a.dtype, a.reduce);
}
void all_gather_call(Communicator& c, const void* s, void* r, const Args& a) {
  c.all_gather(s, r, a.count, a.dtype);
}
void reduce_scatter_call(Communicator& c, const void* s, void* r, const Args& a) {
  c.reduce_scatter(s, r, a.count, a.dtype, a.reduce);
}
void all_to_all_call(Communicator& c, const void* s, void* r, const Args& a) {
  c.all_to_all(s, r, a.count, a.dtype);
}
// In place only: every rank starts with its own data, the root's replaces it.
void broadcast_call(Communicator& c, const void*, void* r, const Args& a) {
  c.broadcast(r, a.count, a.dtype, a.root);
}
// A ring: rank r sends to r + 1 and receives from r - 1.
void ring_call(Communicator& c, const void* s, void* r, const Args& a) {
  c.send_recv(s, (a.rank + 1) % a.size, r, (a.rank + a.size - 1) % a.size, a.count, a.dtype);
}

}  // namespace

const std::vector<Collective>& table() {
  // name, reduces, out_of_place, in_place, blocks, bus_factor, layout, input, expected, call
  static const std::vector<Collective> rows = {
      {"all_reduce", true, true, true, false, ring_factor, flat, small_input, all_reduce_want,
       all_reduce_call},
      {"all_gather", false, true, true, true, spread_factor, gathered, large_input, all_gather_want,
       all_gather_call},
      {"reduce_scatter", true, true, true, true, spread_factor, scattered, small_input,
       reduce_scatter_want, reduce_scatter_call},
      {"all_to_all", false, true, true, true, spread_factor, blocked, large_input, all_to_all_want,
       all_to_all_call},
      {"broadcast", false, false, true, false, one, flat, large_input, broadcast_want,
       broadcast_call},
      {"send_recv", false, true, false, false, one, flat, large_input, ring_want, ring_call},
  };
  return rows;
}

const Collective* find(const std::string& name) {
  for (const Collective& c : table()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

size_t count_for(const Collective& c, double bytes, tensor::DType dtype, int size) {
  const size_t elements = static_cast<size_t>(bytes) / tensor::dtype_size(dtype);
  return c.blocks ? elements / static_cast<size_t>(size) : elements;
}

double algbw_bytes(const Collective& c, const Args& a) {
  const size_t elements = c.blocks ? a.count * a.size : a.count;
  return static_cast<double>(elements * tensor::dtype_size(a.dtype));
}

}  // namespace h0::checks::collectives
