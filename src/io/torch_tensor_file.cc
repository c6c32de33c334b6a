#include "io/torch_tensor_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"

namespace h0::io {
namespace {

using tensor::DType;
using tensor::Shape;

uint64_t le(const std::byte* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
  return v;
}

// Elements of `s`; InputError past 2^40 (no dump tensor is that large; a bad header is).
int64_t numel_of(const Shape& s, const std::string& path) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 40))
      throw InputError(path, "a tensor shape of more than 2^40 elements");
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// .npy

std::optional<DType> npy_dtype(const std::string& descr) {
  static const std::pair<const char*, DType> kDescr[] = {
      {"<f2", DType::kF16}, {"<f4", DType::kF32}, {"<f8", DType::kF64}, {"|i1", DType::kI8},
      {"<i4", DType::kI32}, {"<i8", DType::kI64}, {"|u1", DType::kU8},  {"|b1", DType::kBool}};
  for (const auto& [d, t] : kDescr) {
    if (descr == d) return t;
  }
  return std::nullopt;
}

// The value of `key` in numpy's header dict literal ("{'descr': '<f4', 'fortran_order': False,
// 'shape': (5, 64), }"), up to the next ", '" or the closing brace.
std::string dict_value(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  size_t v = header.find(':', at);
  if (v == std::string::npos) return "";
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  size_t end = v;
  if (v < header.size() && header[v] == '(') {
    end = header.find(')', v);
    return end == std::string::npos ? "" : header.substr(v, end - v + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string out = header.substr(v, end - v);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() >= 2 && out.front() == '\'' && out.back() == '\'')
    out = out.substr(1, out.size() - 2);
  return out;
}

Shape parse_shape(const std::string& path, const std::string& text) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw InputError(path, "bad .npy header: shape '" + text + "' is not a tuple");
  Shape shape;
  std::string digits;
  for (size_t i = 1; i + 1 <= text.size(); ++i) {
    const char c = i + 1 == text.size() ? ',' : text[i];
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c == ',' || c == ')') {
      if (!digits.empty()) {
        if (digits.size() > 12)
          throw InputError(path, "bad .npy header: dimension " + digits + " too large");
        shape.push_back(std::stoll(digits));
      }
      digits.clear();
    } else if (c != ' ') {
      throw InputError(path, "bad .npy header: shape '" + text + "'");
    }
  }
  return shape;
}

// ---------------------------------------------------------------------------------------------
// A stored (uncompressed) zip archive: name -> bytes.

class ZipArchive {
 public:
  ZipArchive(std::shared_ptr<const base::MappedFile> file) : file_(std::move(file)) {
    const std::byte* d = file_->data();
    const size_t n = file_->size();
    const std::string& path = file_->path();
    if (n < 22 || le(d, 4) != 0x04034b50)
      throw InputError(path, "not a torch.save file (not a zip archive)");
    size_t eocd = std::string::npos;
    for (size_t at = n - 22 + 1; at-- > 0 && n - at <= 22 + 65535;) {
      if (le(d + at, 4) == 0x06054b50) {
        eocd = at;
        break;
      }
    }
    if (eocd == std::string::npos)
      throw InputError(path, "a zip archive without its end of central directory");
    const uint64_t entries = le(d + eocd + 10, 2), cd_size = le(d + eocd + 12, 4),
                   cd_at = le(d + eocd + 16, 4);
    if (cd_at == 0xFFFFFFFF || entries == 0xFFFF)
      throw InputError(path, "ZIP64 archives are not read");
    if (cd_at + cd_size > n)
      throw InputError(path, "the zip central directory lies past the end of the file");
    size_t at = cd_at;
    for (uint64_t i = 0; i < entries; ++i) {
      if (at + 46 > n || le(d + at, 4) != 0x02014b50)
        throw InputError(path, "a malformed zip central directory");
      const uint64_t method = le(d + at + 10, 2), csize = le(d + at + 20, 4),
                     usize = le(d + at + 24, 4);
      const uint64_t name_len = le(d + at + 28, 2), extra_len = le(d + at + 30, 2),
                     comment_len = le(d + at + 32, 2);
      const uint64_t local = le(d + at + 42, 4);
      if (at + 46 + name_len > n) throw InputError(path, "a malformed zip central directory");
      const std::string name(reinterpret_cast<const char*>(d + at + 46), name_len);
      if (method != 0)
        throw InputError(path, "zip entry " + name + " is compressed (torch.save stores entries)");
      if (csize != usize || local + 30 > n || le(d + local, 4) != 0x04034b50)
        throw InputError(path, "zip entry " + name + ": a malformed local header");
      const uint64_t data = local + 30 + le(d + local + 26, 2) + le(d + local + 28, 2);
      if (data + usize > n)
        throw InputError(path, "zip entry " + name + " lies past the end of the file");
      entries_[name] = {data, usize};
      at += 46 + name_len + extra_len + comment_len;
    }
  }

  // The entry ending in "/<suffix>" (the archive folder's name varies), or nullopt.
  std::optional<std::string_view> find(const std::string& suffix,
                                       std::string* found = nullptr) const {
    for (const auto& [name, e] : entries_) {
      const size_t slash = name.find('/');
      if (slash != std::string::npos && name.substr(slash + 1) == suffix) {
        if (found) *found = name;
        return std::string_view(reinterpret_cast<const char*>(file_->data()) + e.first, e.second);
      }
    }
    return std::nullopt;
  }

 private:
  std::shared_ptr<const base::MappedFile> file_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> entries_;  // offset, size
};

// ---------------------------------------------------------------------------------------------
// The pickle of one tensor.

struct Global {
  std::string module, name;
};
// _rebuild_tensor_v3 reads an untyped storage (counted in bytes) with a dtype value.
constexpr const char* kUntyped = "UntypedStorage";
struct Storage {
  DType dtype;
  std::string key;
  int64_t numel;
};
struct Mark {};
struct Value;
using Tuple = std::vector<Value>;
struct RebuiltTensor {
  Storage storage;
  int64_t offset = 0;
  Shape shape, stride;
};
struct Value {
  std::variant<std::monostate, bool, int64_t, std::string, Tuple, Global, Storage, Mark,
               RebuiltTensor>
      v;
};

// torch.<name> as a dtype value (the last argument of _rebuild_tensor_v3).
std::optional<DType> torch_dtype(const std::string& name) {
  static const std::pair<const char*, DType> kDtypes[] = {{"float32", DType::kF32},
                                                          {"float64", DType::kF64},
                                                          {"float16", DType::kF16},
                                                          {"bfloat16", DType::kBF16},
                                                          {"float8_e4m3fn", DType::kF8E4M3},
                                                          {"float8_e5m2", DType::kF8E5M2},
                                                          {"int64", DType::kI64},
                                                          {"int32", DType::kI32},
                                                          {"int8", DType::kI8},
                                                          {"uint8", DType::kU8},
                                                          {"bool", DType::kBool}};
  for (const auto& [n, d] : kDtypes) {
    if (name == n) return d;
  }
  return std::nullopt;
}

std::optional<DType> storage_dtype(const std::string& name) {
  static const std::pair<const char*, DType> kStorages[] = {
      {"FloatStorage", DType::kF32}, {"DoubleStorage", DType::kF64},
      {"HalfStorage", DType::kF16},  {"BFloat16Storage", DType::kBF16},
      {"LongStorage", DType::kI64},  {"IntStorage", DType::kI32},
      {"CharStorage", DType::kI8},   {"ByteStorage", DType::kU8},
      {"BoolStorage", DType::kBool}};
  for (const auto& [n, d] : kStorages) {
    if (name == n) return d;
  }
  return std::nullopt;
}

class PickleMachine {
 public:
  PickleMachine(std::string_view code, std::string where) : code_(code), where_(std::move(where)) {}

  // Runs the pickle to its STOP, which must leave a rebuilt tensor.
  RebuiltTensor run() {
    while (true) {
      const uint8_t op = byte();
      if (op == '.') {  // STOP
        Value v = pop();
        auto* t = std::get_if<RebuiltTensor>(&v.v);
        if (t == nullptr) fail(op, "the pickle does not end in a tensor");
        return *t;
      }
      if (!framing_op(op) && !call_op(op) && !tuple_op(op) && !scalar_op(op) && !memo_op(op))
        fail(op, "an opcode a single saved tensor does not use");
    }
  }

 private:
  // Each *_op runs one opcode of its family and returns true, or returns false for an opcode
  // of another family (reading nothing).

  // PROTO, FRAME: skipped.
  bool framing_op(uint8_t op) {
    switch (op) {
      case 0x80:  // PROTO
        byte();
        return true;
      case 0x95:  // FRAME
        bytes(8);
        return true;
      default:
        return false;
    }
  }

  // GLOBAL (only the globals a saved tensor names), BINPERSID (a storage), REDUCE (a rebuild).
  bool call_op(uint8_t op) {
    switch (op) {
      case 'c':  // GLOBAL
        push_global(op);
        return true;
      case 'Q':  // BINPERSID
        push(persistent(pop()));
        return true;
      case 'R': {  // REDUCE
        Value args = pop(), callable = pop();
        push(reduce(callable, args));
        return true;
      }
      default:
        return false;
    }
  }

  // MARK, EMPTY_TUPLE, TUPLE, TUPLE1..3, EMPTY_DICT.
  bool tuple_op(uint8_t op) {
    switch (op) {
      case '(':  // MARK
        push(Value{Mark{}});
        return true;
      case ')':  // EMPTY_TUPLE
        push(Value{Tuple{}});
        return true;
      case 't':  // TUPLE
        push(Value{pop_to_mark()});
        return true;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        Tuple t(op - 0x84);
        for (size_t i = t.size(); i-- > 0;) t[i] = pop();
        push(Value{std::move(t)});
        return true;
      }
      case '}':  // EMPTY_DICT (an empty OrderedDict's stand-in)
        push(Value{Tuple{}});
        return true;
      default:
        return false;
    }
  }

  // Strings, integers, booleans and None.
  bool scalar_op(uint8_t op) {
    switch (op) {
      case 'X':  // BINUNICODE
        push(Value{std::string(bytes(uint32_t(le_bytes(4))))});
        return true;
      case 0x8c:  // SHORT_BINUNICODE
        push(Value{std::string(bytes(le_bytes(1)))});
        return true;
      case 'K':  // BININT1
        push(Value{int64_t(le_bytes(1))});
        return true;
      case 'M':  // BININT2
        push(Value{int64_t(le_bytes(2))});
        return true;
      case 'J':  // BININT
        push(Value{int64_t(int32_t(uint32_t(le_bytes(4))))});
        return true;
      case 0x8a: {  // LONG1
        const uint64_t n = le_bytes(1);
        if (n > 8) fail(op, "LONG1 of " + std::to_string(n) + " bytes");
        uint64_t v = n ? le_bytes(int(n)) : 0;
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);
        push(Value{int64_t(v)});
        return true;
      }
      case 0x88:  // NEWTRUE
        push(Value{true});
        return true;
      case 0x89:  // NEWFALSE
        push(Value{false});
        return true;
      case 'N':  // NONE
        push(Value{});
        return true;
      default:
        return false;
    }
  }

  // BINPUT, LONG_BINPUT, MEMOIZE, BINGET, LONG_BINGET.
  bool memo_op(uint8_t op) {
    switch (op) {
      case 'q':  // BINPUT
        memo_[le_bytes(1)] = top();
        return true;
      case 'r':  // LONG_BINPUT
        memo_[le_bytes(4)] = top();
        return true;
      case 0x94:  // MEMOIZE
        memo_[memo_.size()] = top();
        return true;
      case 'h':  // BINGET
        push(memo(le_bytes(1)));
        return true;
      case 'j':  // LONG_BINGET
        push(memo(le_bytes(4)));
        return true;
      default:
        return false;
    }
  }

  // GLOBAL's "module\nname\n": only a tensor rebuild, an OrderedDict, a storage type or a dtype.
  void push_global(uint8_t op) {
    Global g{line(), line()};
    const bool rebuild = g.module == "torch._utils" &&
                         (g.name == "_rebuild_tensor_v2" || g.name == "_rebuild_tensor_v3");
    const bool dict = g.module == "collections" && g.name == "OrderedDict";
    const bool storage = (g.module == "torch" && storage_dtype(g.name).has_value()) ||
                         (g.module == "torch.storage" && g.name == kUntyped);
    const bool dtype = g.module == "torch" && torch_dtype(g.name).has_value();
    if (g.module == "torch" &&
        (g.name == "ShortStorage" || g.name == "int16" || g.name == "uint16")) {
      fail(op, "a " + g.name + " tensor: 16-bit integers are not a dtype of this harness");
    }
    if (!rebuild && !dict && !storage && !dtype) {
      fail(op, "GLOBAL '" + g.module + " " + g.name + "' is not a tensor rebuild");
    }
    push(Value{g});
  }

  [[noreturn]] void fail(uint8_t op, const std::string& what) const {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%02x", op);
    throw InputError(where_, "opcode " + std::string(buf) + " at byte " + std::to_string(at_ - 1) +
                                 ": " + what + " (only torch.save of one tensor is read)");
  }
  uint8_t byte() {
    if (at_ >= code_.size()) throw InputError(where_, "the pickle ends before its STOP");
    return uint8_t(code_[at_++]);
  }
  std::string_view bytes(size_t n) {
    if (n > code_.size() - at_) throw InputError(where_, "the pickle ends inside a value");
    std::string_view s = code_.substr(at_, n);
    at_ += n;
    return s;
  }
  uint64_t le_bytes(int n) {
    return le(reinterpret_cast<const std::byte*>(bytes(size_t(n)).data()), n);
  }
  std::string line() {
    const size_t end = code_.find('\n', at_);
    if (end == std::string_view::npos) throw InputError(where_, "the pickle ends inside a GLOBAL");
    if (end - at_ > 200) throw InputError(where_, "a malformed GLOBAL (a name over 200 bytes)");
    std::string s(code_.substr(at_, end - at_));
    at_ = end + 1;
    return s;
  }
  void push(Value v) {
    if (stack_.size() > 4096) throw InputError(where_, "the pickle's stack grows past 4096 values");
    stack_.push_back(std::move(v));
  }
  Value pop() {
    if (stack_.empty()) throw InputError(where_, "the pickle pops an empty stack");
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Value top() const {
    if (stack_.empty()) throw InputError(where_, "the pickle memoizes an empty stack");
    return stack_.back();
  }
  Value memo(uint64_t k) const {
    auto it = memo_.find(k);
    if (it == memo_.end())
      throw InputError(where_, "the pickle reads memo " + std::to_string(k) + ", never set");
    return it->second;
  }
  Tuple pop_to_mark() {
    Tuple t;
    while (true) {
      Value v = pop();
      if (std::holds_alternative<Mark>(v.v)) break;
      t.insert(t.begin(), std::move(v));
    }
    return t;
  }
  // ('storage', torch.FloatStorage, key, location, numel)
  Value persistent(const Value& pid) {
    const auto* t = std::get_if<Tuple>(&pid.v);
    if (t == nullptr || t->size() != 5) fail('Q', "a persistent id that is not a storage tuple");
    const auto* kind = std::get_if<std::string>(&(*t)[0].v);
    const auto* type = std::get_if<Global>(&(*t)[1].v);
    const auto* key = std::get_if<std::string>(&(*t)[2].v);
    const auto* numel = std::get_if<int64_t>(&(*t)[4].v);
    if (!kind || *kind != "storage" || !type || !key || !numel || *numel < 0 ||
        (type->module != "torch" && type->module != "torch.storage"))
      fail('Q', "a persistent id that is not ('storage', torch.<T>Storage, key, location, numel)");
    if (type->name == kUntyped) return Value{Storage{DType::kU8, *key, *numel}};  // numel: bytes
    const std::optional<DType> d = storage_dtype(type->name);
    if (!d) fail('Q', "a persistent id whose storage type is " + type->name);
    return Value{Storage{*d, *key, *numel}};
  }
  Shape ints(const Value& v, const char* what) {
    const auto* t = std::get_if<Tuple>(&v.v);
    if (t == nullptr) fail('R', std::string(what) + " is not a tuple");
    Shape out;
    for (const Value& e : *t) {
      const auto* i = std::get_if<int64_t>(&e.v);
      if (i == nullptr || *i < 0) fail('R', std::string(what) + " holds a non-integer");
      out.push_back(*i);
    }
    return out;
  }
  Value reduce(const Value& callable, const Value& args) {
    const auto* g = std::get_if<Global>(&callable.v);
    const auto* a = std::get_if<Tuple>(&args.v);
    if (g == nullptr || a == nullptr)
      fail('R', "REDUCE of something that is not an allowed global");
    if (g->name == "OrderedDict") return Value{Tuple{}};
    const bool v3 = g->name == "_rebuild_tensor_v3";
    if ((g->name != "_rebuild_tensor_v2" && !v3) || a->size() < (v3 ? 7u : 6u))
      fail('R', "a call that is not _rebuild_tensor_v2/v3(storage, ...)");
    const auto* storage = std::get_if<Storage>(&(*a)[0].v);
    const auto* offset = std::get_if<int64_t>(&(*a)[1].v);
    if (storage == nullptr || offset == nullptr || *offset < 0)
      fail('R', "_rebuild_tensor without a storage and offset");
    Storage st = *storage;
    if (v3) {  // an untyped storage of bytes, and the dtype last
      const auto* dtype = std::get_if<Global>(&(*a)[6].v);
      const std::optional<DType> d = dtype ? torch_dtype(dtype->name) : std::nullopt;
      if (!d) fail('R', "_rebuild_tensor_v3 without a dtype this harness has");
      const int64_t elem = int64_t(tensor::dtype_size(*d));
      if (st.numel % elem != 0) fail('R', "an untyped storage that is not whole elements");
      st = Storage{*d, st.key, st.numel / elem};
    }
    RebuiltTensor t{st, *offset, ints((*a)[2], "size"), ints((*a)[3], "stride")};
    if (t.shape.size() != t.stride.size() || t.shape.size() > 8)
      fail('R', "size and stride of different ranks");
    return Value{t};
  }

  std::string_view code_;
  std::string where_;
  size_t at_ = 0;
  std::vector<Value> stack_;
  std::map<uint64_t, Value> memo_;
};

}  // namespace

tensor::Tensor read_npy(const std::string& path) {
  const auto file = base::MappedFile::open(path);
  const std::byte* d = file->data();
  const size_t n = file->size();
  if (n < 10 || std::memcmp(d, "\x93NUMPY", 6) != 0)
    throw InputError(path, "not a .npy file (no \\x93NUMPY magic)");
  const int major = std::to_integer<int>(d[6]);
  if (major < 1 || major > 3)
    throw InputError(path, "unknown .npy format version " + std::to_string(major));
  const size_t len_bytes = major == 1 ? 2 : 4, start = 8 + len_bytes;
  if (n < start) throw InputError(path, "the .npy header is cut short");
  const uint64_t header_len = le(d + 8, int(len_bytes));
  if (start + header_len > n) throw InputError(path, "the .npy header is longer than the file");
  const std::string header(reinterpret_cast<const char*>(d + start), header_len);
  const std::string descr = dict_value(header, "descr");
  const auto dtype = npy_dtype(descr);
  if (!dtype)
    throw InputError(
        path, "unsupported .npy dtype '" + descr + "' (little-endian f2 f4 f8 i1 i4 i8 u1 b1)");
  if (dict_value(header, "fortran_order") != "False")
    throw InputError(path, "a Fortran-order .npy array is not read");
  const Shape shape = parse_shape(path, dict_value(header, "shape"));
  const uint64_t bytes = uint64_t(numel_of(shape, path)) * tensor::dtype_size(*dtype);
  if (start + header_len + bytes != n) {
    throw InputError(path, "the .npy data holds " + std::to_string(n - start - header_len) +
                               " bytes, its header says " + std::to_string(bytes));
  }
  return tensor::Tensor::copy_of(*dtype, shape, d + start + header_len);
}

tensor::Tensor read_torch_pt(const std::string& path) {
  const ZipArchive zip(base::MappedFile::open(path));
  std::string pkl_name;
  const auto pkl = zip.find("data.pkl", &pkl_name);
  if (!pkl)
    throw InputError(path, "a zip archive without <archive>/data.pkl: not written by torch.save");
  if (const auto order = zip.find("byteorder"); order && *order != "little")
    throw InputError(
        path, "byteorder '" + std::string(*order) + "': only little-endian tensors are read");
  const RebuiltTensor t = PickleMachine(*pkl, path + ": " + pkl_name).run();
  const auto storage = zip.find("data/" + t.storage.key);
  if (!storage)
    throw InputError(path,
                     "the pickle names storage " + t.storage.key + ", which the archive lacks");
  const size_t elem = tensor::dtype_size(t.storage.dtype);
  if (storage->size() != uint64_t(t.storage.numel) * elem) {
    throw InputError(path, "storage " + t.storage.key + " holds " +
                               std::to_string(storage->size()) + " bytes, not " +
                               std::to_string(t.storage.numel) + " elements of " +
                               std::to_string(elem));
  }
  // The last element the view reads must lie in the storage.
  int64_t last = t.offset;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] == 0) last = -1;
    if (last >= 0) last += (t.shape[i] - 1) * t.stride[i];
  }
  if (last >= t.storage.numel)
    throw InputError(path, "the tensor's size and stride reach past its storage");
  const int64_t count = numel_of(t.shape, path);
  // A broadcast view (stride 0) can name far more elements than its storage holds.
  if (count > std::max<int64_t>(t.storage.numel, 1) * 64 && count > (int64_t(1) << 26))
    throw InputError(path, "a view of " + std::to_string(count) + " elements over a storage of " +
                               std::to_string(t.storage.numel) + ": not read");
  tensor::Tensor out = tensor::Tensor::empty(t.storage.dtype, t.shape);
  auto* dst = static_cast<char*>(out.mutable_data());
  const char* src = storage->data();
  std::vector<int64_t> index(t.shape.size(), 0);
  for (int64_t e = 0; e < count; ++e) {  // row-major walk over the strided view
    int64_t at = t.offset;
    for (size_t i = 0; i < index.size(); ++i) at += index[i] * t.stride[i];
    std::memcpy(dst + size_t(e) * elem, src + size_t(at) * elem, elem);
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < t.shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

tensor::Tensor read_tensor_file(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") return read_npy(path);
  if (ext == ".pt" || ext == ".pth") return read_torch_pt(path);
  throw InputError(path, "not a tensor file this harness reads (.npy, .pt)");
}

}  // namespace h0::io
