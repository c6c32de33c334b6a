// The operands of one run_op call and the checks made on them before anything is computed,
// shared by the built-in cpu backend (compiled into h0) and the device plugins (opencl, cuda:
// built against harness_backend.h alone). Like the rest of this folder it needs nothing of the
// harness but the ABI header and nlohmann_json.
//
// A check throws OpError with the hb_status to return: HB_INVALID_ARGUMENT for a bad shape or
// bad data (an id out of range), HB_UNSUPPORTED for what the kernels do not implement. Its
// message starts with the op: "moe_experts: ids[1, 0] = 9 is outside the 4 experts". Every
// backend built on these checks rejects a bad call with the same words.
//
// The checks of the ops both sides implement, op by op, are in op_operands.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness_backend.h"

namespace h0p {

using Json = nlohmann::json;

// A failed op: the hb_status to return and the message for last_error.
class OpError : public std::runtime_error {
 public:
  OpError(hb_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  hb_status status() const { return status_; }

 private:
  hb_status status_;
};

// Where a call's operands live, so that the checks can read index operands (ids, block tables)
// on the host: host memory for the cpu backend, the device for a plugin (h0p::Device).
class OperandMemory {
 public:
  virtual ~OperandMemory() = default;
  // Blocking copy of `bytes` from the start of operand memory `src` to host memory `dst`.
  virtual void read(void* dst, const void* src, size_t bytes) = 0;
};

// One run_op call. in[i] for i >= n_in is an absent optional operand.
struct Operands {
  const char* op;
  const hb_tensor* in;
  int n_in;
  hb_tensor* out;
  int n_out;
  const Json& attrs;  // validated and defaulted by the harness; an object
  OperandMemory& memory;
  // The kernels index with 32-bit ints (the portable kernels): every operand the checks see
  // must hold fewer than 2^31 elements, else HB_UNSUPPORTED.
  bool int32_indexing;
};

// What every op relies on before its own checks: n_in in [min_inputs, max_inputs] (with `in`
// non-null when n_in > 0), n_out == outputs, and each operand a rank up to HB_MAX_DIMS,
// non-negative dims, a dtype of the ABI and data unless it is empty. Throws
// OpError(HB_INVALID_ARGUMENT) naming the operand ("input 1", "output 0").
void require_operands(const Operands& call, int min_inputs, int max_inputs, int outputs);

// Throws OpError(HB_INVALID_ARGUMENT, "<op>: <message>") unless `ok`.
void require(const Operands& call, bool ok, const std::string& message);
// Throws OpError(HB_UNSUPPORTED, "<op>: <message>").
[[noreturn]] void unsupported(const Operands& call, const std::string& message);

const char* dtype_name(hb_dtype dtype);  // "bf16"; "(invalid dtype)" outside the enum
size_t elem_size(hb_dtype dtype);        // bytes; 0 outside the enum
// f32, bf16 or f16: the float dtypes the kernels compute in (in f32).
bool is_float(hb_dtype dtype);
std::string describe(const hb_tensor& t);  // "[2, 3, 4] bf16"
int64_t numel(const hb_tensor& t);
// `v` as an int: throws OpError(HB_UNSUPPORTED) when it does not fit in 31 bits.
int as_int(const Operands& call, int64_t v);

// Checks that operand `t` (named `name` in messages) has exactly `dims` (-1 matches anything)
// and dtype `dtype`.
void require_tensor(const Operands& call, const hb_tensor& t, const char* name,
                    std::initializer_list<int64_t> dims, hb_dtype dtype);
// Checks that `t` has the dtype and the same shape as `like`.
void require_like(const Operands& call, const hb_tensor& t, const char* name,
                  const hb_tensor& like);
// Checks that index operand `t` (i32 or i64) has exactly `dims`.
void require_index(const Operands& call, const hb_tensor& t, const char* name,
                   std::initializer_list<int64_t> dims);
// The values of index operand `t` (i32 or i64, checked), read to the host.
std::vector<int64_t> read_indices(const Operands& call, const hb_tensor& t);
// Checks that values[i] (the first values.size() elements of index operand `t`, row-major) lie
// in [lo, hi): "<name>[1, 0] = 9 is outside <range>".
void require_in_range(const Operands& call, const hb_tensor& t, const char* name,
                      const std::vector<int64_t>& values, int64_t lo, int64_t hi,
                      const std::string& range);

// Attrs arrive validated and defaulted; `fallback` only covers a partial caller. Null = absent.
double attr_f(const Json& a, const char* name, double fallback);
int64_t attr_i(const Json& a, const char* name, int64_t fallback);
bool attr_b(const Json& a, const char* name, bool fallback);
std::string attr_s(const Json& a, const char* name, const std::string& fallback);
bool attr_null(const Json& a, const char* name);
// String attr `name` (`fallback` when absent), which must be `a` or `b`: else
// "attr <name> must be <a> or <b>, got '<value>'".
std::string attr_either(const Operands& call, const char* name, const std::string& fallback,
                        const std::string& a, const std::string& b);
// Attr scale, or 1/√d when absent (attention over head size d).
float scale_attr(const Operands& call, int64_t d);

}  // namespace h0p
