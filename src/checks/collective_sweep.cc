#include "checks/collective_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "mesh/nccl_communicator.h"
#include "tensor/convert.h"

namespace h0::checks::collectives {
namespace {

using tensor::DType;
constexpr size_t kChunk = 4096;  // elements converted at a time through f64

class HostMemory final : public Memory {
 public:
  void* alloc(size_t bytes) override { return ::operator new(std::max<size_t>(bytes, 1)); }
  void release(void* p) override { ::operator delete(p); }
  void upload(void* dst, const void* host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, size_t bytes) override {
    std::memcpy(host, src, bytes);
  }
};

class DeviceMemory final : public Memory {
 public:
  void* alloc(size_t bytes) override { return mesh::nccl_device_alloc(bytes); }
  void release(void* p) override { mesh::nccl_device_free(p); }
  void upload(void* dst, const void* host, size_t bytes) override {
    mesh::nccl_device_copy(dst, host, bytes);
  }
  void download(void* host, const void* src, size_t bytes) override {
    mesh::nccl_device_copy(host, src, bytes);
  }
};

// A buffer of `memory`, released with it.
class Buffer {
 public:
  Buffer(Memory& m, size_t bytes) : m_(m), p_(static_cast<std::byte*>(m.alloc(bytes))) {}
  ~Buffer() { m_.release(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data() const { return p_; }

 private:
  Memory& m_;
  std::byte* p_;
};

// dst[i] = value(i) for i < n, in `dtype`.
template <typename F>
void fill(std::byte* dst, DType dtype, size_t n, F&& value) {
  double chunk[kChunk];
  for (size_t at = 0; at < n; at += kChunk) {
    const size_t m = std::min(kChunk, n - at);
    for (size_t j = 0; j < m; ++j) chunk[j] = value(at + j);
    tensor::convert(chunk, DType::kF64, dst + at * tensor::dtype_size(dtype), dtype, m);
  }
}

// Counts the elements of `got` (n of `dtype`) that are not exactly expected(a, i).
void count_wrong(const std::byte* got, size_t n, const Collective& coll, const Args& a,
                 FormResult* out) {
  double chunk[kChunk];
  for (size_t at = 0; at < n; at += kChunk) {
    const size_t m = std::min(kChunk, n - at);
    tensor::convert(got + at * tensor::dtype_size(a.dtype), a.dtype, chunk, DType::kF64, m);
    for (size_t j = 0; j < m; ++j) {
      const double want = coll.expected(a, at + j);
      if (chunk[j] == want) continue;
      if (out->wrong++ == 0) {
        out->first_wrong = static_cast<int64_t>(at + j);
        out->got = chunk[j];
        out->want = want;
      }
    }
  }
}

// The check and the timing of one form: `send` / `recv` point into device (or host) buffers.
FormResult run_form(mesh::Communicator& comm, Memory& memory, const Collective& coll, const Args& a,
                    Form form, int warmup, int repeats) {
  const Layout l = coll.layout(a);
  const size_t esize = tensor::dtype_size(a.dtype);
  const bool in_place = form == kInPlace;
  const size_t send_elems = in_place ? l.in_place : l.send, recv_elems = in_place ? 0 : l.recv;
  std::vector<std::byte> host(std::max(send_elems, recv_elems) * esize);
  Buffer send(memory, send_elems * esize), recv(memory, recv_elems * esize);
  const size_t send_at = in_place ? l.in_place_send : 0;
  fill(host.data(), a.dtype, send_elems, [&](size_t i) {
    return i >= send_at && i < send_at + l.send ? coll.input(a, a.rank, i - send_at) : kSentinel;
  });
  memory.upload(send.data(), host.data(), send_elems * esize);
  if (!in_place) {
    fill(host.data(), a.dtype, recv_elems, [](size_t) { return kSentinel; });
    memory.upload(recv.data(), host.data(), recv_elems * esize);
  }
  std::byte* out = in_place ? send.data() + l.in_place_recv * esize : recv.data();
  const std::byte* in = send.data() + send_at * esize;
  coll.call(comm, in, out, a);
  FormResult r;
  r.ran = true;
  memory.download(host.data(), out, l.recv * esize);
  count_wrong(host.data(), l.recv, coll, a, &r);
  for (int i = 0; i < warmup; ++i) coll.call(comm, in, out, a);
  comm.barrier();
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    coll.call(comm, in, out, a);
    r.samples_ns.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  return r;
}

}  // namespace

std::unique_ptr<Memory> host_memory() { return std::make_unique<HostMemory>(); }
std::unique_ptr<Memory> device_memory() { return std::make_unique<DeviceMemory>(); }

double FormResult::mean_ns() const {
  double total = 0;
  for (double s : samples_ns) total += s;
  return samples_ns.empty() ? 0 : total / static_cast<double>(samples_ns.size());
}

SizeResult run_size(mesh::Communicator& comm, Memory& memory, const Collective& coll, Args args,
                    double bytes, int warmup, int repeats) {
  SizeResult s;
  s.bytes = bytes;
  s.count = args.count = count_for(coll, bytes, args.dtype, args.size);
  s.algbw_bytes = algbw_bytes(coll, args);
  if (coll.out_of_place)
    s.form[kOutOfPlace] = run_form(comm, memory, coll, args, kOutOfPlace, warmup, repeats);
  if (coll.in_place)
    s.form[kInPlace] = run_form(comm, memory, coll, args, kInPlace, warmup, repeats);
  return s;
}

}  // namespace h0::checks::collectives
