// Every malformed-file case the reader rejects, each with its exact message.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "base/error.h"
#include "io/safetensors_reader.h"
#include "test_util.h"

namespace h0::io {
namespace {

// A file image: 8-byte length of `header`, the header, then `data_bytes` zero bytes.
std::string image(const std::string& header, size_t data_bytes, uint64_t length_override = ~0ull) {
  const uint64_t n = length_override != ~0ull ? length_override : header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + std::string(data_bytes, '\0');
}

// The message parsing `bytes` fails with ("" if it parses).
std::string error_of(const std::string& bytes) {
  try {
    SafetensorsFile::parse(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(), "f.st",
                           nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SafetensorsErrors, ValidFileParses) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8)), "");
}

TEST(SafetensorsErrors, TooShortForTheLength) {
  EXPECT_EQ(error_of("abc"), "f.st: file is 3 bytes, too short for the 8-byte header length");
}

TEST(SafetensorsErrors, HeaderLengthBeyondFile) {
  EXPECT_EQ(error_of(image("{}", 0, 4096)),
            "f.st: header length 4096 is beyond the file (2 bytes follow the length field)");
}

TEST(SafetensorsErrors, HeaderNotJson) {
  EXPECT_EQ(error_of(image("not json", 0)), "f.st: header is not JSON: it must start with '{'");
  const std::string e = error_of(image(R"({"a": {"dtype": )", 0));
  EXPECT_EQ(e.rfind("f.st: header is not JSON: [json.exception.parse_error", 0), 0u) << e;
}

TEST(SafetensorsErrors, UnknownDtype) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", 4)),
            "f.st: tensor 'a': unknown dtype 'U16' (supported: F64, F32, F16, BF16, F8_E4M3, "
            "F8_E5M2, I64, I32, I8, U8, BOOL)");
}

TEST(SafetensorsErrors, OffsetsOutOfRange) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8)),
            "f.st: tensor 'a': data_offsets [0, 16] are beyond the data section (8 bytes)");
}

TEST(SafetensorsErrors, OffsetsReversed) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8)),
            "f.st: tensor 'a': data_offsets [8, 4] end before they begin");
}

TEST(SafetensorsErrors, OverlappingTensors) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           12)),
            "f.st: tensor 'b' [4, 12) overlaps tensor 'a' [0, 8)");
}

TEST(SafetensorsErrors, HoleInTheDataSection) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                           12)),
            "f.st: bytes [4, 8) of the data section belong to no tensor (before tensor 'b')");
}

TEST(SafetensorsErrors, TrailingBytes) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 10)),
            "f.st: the data section has 6 trailing bytes that belong to no tensor");
}

TEST(SafetensorsErrors, ShapeTimesDtypeSizeMismatch) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]}})", 8)),
            "f.st: tensor 'a': shape 2x3 of bf16 needs 12 bytes but data_offsets span 8");
}

TEST(SafetensorsErrors, ShapeOverflow) {
  EXPECT_EQ(
      error_of(image(
          R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8)),
      "f.st: tensor 'a': shape 4294967296x4294967296 overflows");
}

TEST(SafetensorsErrors, DuplicateNames) {
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           8)),
            "f.st: duplicate tensor name 'a'");
}

TEST(SafetensorsErrors, MalformedEntries) {
  EXPECT_EQ(error_of(image(R"([1,2])", 0)), "f.st: header is not JSON: it must start with '{'");
  EXPECT_EQ(error_of(image(R"({"a":5})", 0)), "f.st: tensor 'a': expected an object, found 5");
  EXPECT_EQ(error_of(image(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4)),
            "f.st: tensor 'a': missing string field 'dtype'");
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4)),
            "f.st: tensor 'a': missing field 'shape'");
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[1]}})", 4)),
            "f.st: tensor 'a': missing field 'data_offsets'");
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)),
            "f.st: tensor 'a': shape must hold non-negative integers, found -1");
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4)),
            "f.st: tensor 'a': shape must hold non-negative integers, found 1.5");
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4)),
            "f.st: tensor 'a': data_offsets must be [begin, end]");
  EXPECT_EQ(error_of(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4)),
            "f.st: tensor 'a': unknown field 'x' (expected dtype, shape, data_offsets)");
  EXPECT_EQ(error_of(image(R"({"__metadata__":{"k":1}})", 0)),
            "f.st: __metadata__ 'k' must be a string, found 1");
  EXPECT_EQ(error_of(image(R"({"__metadata__":[]})", 0)),
            "f.st: __metadata__ must be an object of strings");
}

TEST(SafetensorsErrors, OpenNamesTheFile) {
  test::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  std::ofstream(path, std::ios::binary) << image("{oops", 0);
  try {
    SafetensorsFile::open(path);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
  }
  EXPECT_THROW(SafetensorsFile::open(dir.file("absent.safetensors")), InputError);
  EXPECT_THROW(SafetensorsFile::open(dir.path()), InputError);  // a directory
}

// shared/reproducers/deep_metadata_100k.safetensors and deep_shape.safetensors crashed the
// recursive JSON parser (SIGSEGV): refused before parsing.
TEST(SafetensorsErrors, DeeplyNestedHeaderIsRefused) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_of(image("{\"__metadata__\": {\"x\": " + deep + "}}", 0)),
            "f.st: header JSON nested deeper than 256 levels");
  EXPECT_EQ(error_of(image(
                "{\"a\":{\"dtype\":\"F32\",\"shape\":" + deep + ",\"data_offsets\":[0,0]}}", 0)),
            "f.st: header JSON nested deeper than 256 levels");
}

}  // namespace
}  // namespace h0::io
