// msprobe dumps of a transformers model (tests/data/msprobe, made on CPU with mindstudio-probe by
// golden/tools/gen_msprobe_fixtures.py) against dump_hf.py's golden of the same model and prompt:
// matched by HF module name with no map, by tensor or by statistics; a perturbed weight names its
// module as the first divergence; malformed dumps are refused naming the file and the place.
// Also every form of torch.save file in pt-forms/ against the values torch wrote (index.json).
#include "io/msprobe_dump.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/error.h"
#include "compare/dump_compare.h"
#include "io/torch_tensor_file.h"
#include "test_util.h"

namespace h0::compare {
namespace {

namespace fs = std::filesystem;

std::string data(const std::string& rel) {
  return std::string(H0_SOURCE_DIR) + "/tests/data/msprobe/" + rel;
}

DumpComparison compare(const std::string& dump) {
  return compare_dump_dirs(data("tiny-llama-hf"), data(dump), NameMap{}, 0.99999, 1e-3);
}

std::vector<std::string> names(const DumpFileResult& f) {
  std::vector<std::string> out;
  for (const auto& r : f.report.rows) out.push_back(r.name);
  return out;
}

TEST(MsprobeDump, TensorDumpMatchesTheGoldenWithoutAMap) {
  const DumpComparison c = compare("tiny-llama-L0-tensor");
  EXPECT_TRUE(c.ok()) << c.to_json().dump(1);
  ASSERT_EQ(c.files.size(), 1u);
  const DumpFileResult& f = c.files[0];
  EXPECT_EQ(f.file, "p7.safetensors");
  // The embedding's output is layer 0's input (the dump's list left the embedding out); the
  // LM head is not in that dump, so the logits are reported as not dumped, not as compared.
  const std::vector<std::string> want = {"model.embed_tokens",
                                         "model.layers.0.input_layernorm",
                                         "model.layers.0.self_attn",
                                         "model.layers.0.post_attention_layernorm",
                                         "model.layers.0.mlp",
                                         "model.layers.0",
                                         "model.layers.1.input_layernorm",
                                         "model.layers.1.self_attn",
                                         "model.layers.1.post_attention_layernorm",
                                         "model.layers.1.mlp",
                                         "model.layers.1",
                                         "model.norm"};
  EXPECT_EQ(names(f), want);
  EXPECT_EQ(f.not_dumped, std::vector<std::string>{"logits"});
  for (const auto& r : f.report.rows) {
    EXPECT_FALSE(r.statistics);
    EXPECT_GE(r.cosine, 0.9999999) << r.name;
  }
}

TEST(MsprobeDump, APerturbedWeightNamesItsModule) {
  const DumpComparison c =
      compare("tiny-llama-L0-tensor-perturbed");  // layers.1.mlp.down_proj x 1.01
  EXPECT_FALSE(c.ok());
  const ProbeReport& r = c.files.at(0).report;
  ASSERT_GE(r.first_divergent, 0);
  EXPECT_EQ(r.rows[size_t(r.first_divergent)].name, "model.layers.1.mlp");
  EXPECT_EQ(r.first_divergence(), "model.layers.1.mlp (layer model.layers.1, sublayer mlp)");
}

TEST(MsprobeDump, StatisticsDumpsCompareByStatistics) {
  for (const char* dump : {"tiny-llama-L0-statistics", "tiny-llama-mix-statistics"}) {
    const DumpComparison c = compare(dump);
    EXPECT_TRUE(c.ok()) << dump << ": " << c.to_json().dump(1);
    const DumpFileResult& f = c.files.at(0);
    EXPECT_TRUE(f.not_dumped.empty()) << dump;
    EXPECT_EQ(names(f).back(), "logits") << dump;  // the LM head's output
    for (const auto& r : f.report.rows) EXPECT_TRUE(r.statistics) << r.name;
  }
}

// A statistics dump whose layers.1.mlp norm is 1% off: that module is the first divergence.
TEST(MsprobeDump, AStatisticOffNamesItsModule) {
  test::TempDir dir;
  fs::copy(data("tiny-llama-L0-statistics"), dir.path(), fs::copy_options::recursive);
  const std::string file = dir.file("step0/rank0/dump.json");
  std::string text = test::read_file(file);
  const std::string key = "\"Module.model.layers.1.mlp.LlamaMLP.forward.0\"";
  const size_t entry = text.find(key), out = text.find("\"output\"", entry),
               norm = text.find("\"Norm\": ", out);
  ASSERT_NE(norm, std::string::npos);
  const size_t end = text.find_first_of(",\n}", norm + 8);
  const double v = std::stod(text.substr(norm + 8, end - norm - 8));
  text.replace(norm + 8, end - norm - 8, std::to_string(v * 1.01));
  std::ofstream(file) << text;
  const DumpComparison c =
      compare_dump_dirs(data("tiny-llama-hf"), dir.path(), NameMap{}, 0.99999, 1e-3);
  const ProbeReport& r = c.files.at(0).report;
  ASSERT_GE(r.first_divergent, 0);
  EXPECT_EQ(r.rows[size_t(r.first_divergent)].name, "model.layers.1.mlp");
  EXPECT_NEAR(r.rows[size_t(r.first_divergent)].rel_l2, 0.01, 1e-4);
}

void expect_refused(const std::string& dir, const std::string& reason) {
  try {
    io::read_msprobe_dump(dir);
    ADD_FAILURE() << "no error for " << reason;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir), std::string::npos) << e.what();
  }
}

TEST(MsprobeDump, MalformedDumpsAreRefusedWithFileAndPlace) {
  test::TempDir dir;
  auto write = [&](const std::string& text) {
    fs::create_directories(dir.file("step0/rank0/dump_tensor_data"));
    std::ofstream(dir.file("step0/rank0/dump.json")) << text;
  };
  write("{\"task\": \"tensor\", \"data\": ");
  expect_refused(dir.path(), "not JSON");
  write(std::string(100000, '[') + std::string(100000, ']'));  // shared/reproducers: deep nesting
  expect_refused(dir.path(), "JSON nested deeper than 256");
  write("{\"task\": \"tensor\"}");
  expect_refused(dir.path(), "no `data` object");
  write(R"({"data": {"Module.m.L.forward.0": {"output": [{"type": "torch.Tensor", "shape": [2],
        "data_name": "missing.pt"}]}}})");
  expect_refused(dir.path(), "data.Module.m.L.forward.0: data_name missing.pt is not in");
  write(R"({"data": {"Module.m.L.forward.0": {"output": [{"type": "torch.Tensor", "shape": [2],
        "data_name": "../../etc/passwd"}]}}})");
  expect_refused(dir.path(), "is not a file name");
  write(
      R"({"data": {"Module.m.L.forward.0": {"output": [{"type": "torch.Tensor", "shape": ["x"]}]}}})");
  expect_refused(dir.path(), "shape is not a list of sizes");
  // A tensor file that is not a torch.save file: its own name and reason.
  write(R"({"data": {"Module.m.L.forward.0": {"output": [{"type": "torch.Tensor", "shape": [2],
        "data_name": "bad.pt"}]}}})");
  std::ofstream(dir.file("step0/rank0/dump_tensor_data/bad.pt")) << "not a zip";
  const io::MsprobeDump d = io::read_msprobe_dump(dir.path());  // tensors are read when compared
  ASSERT_EQ(d.probes.size(), 1u);
  try {
    (void)d.probes[0].load();
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.pt: not a torch.save file"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(io::is_msprobe_dump(dir.file("nowhere")));
}

// Every sample torch.save file: dtype, shape and values as torch wrote them (index.json).
TEST(TorchPtForms, EverySampleReadsAsTorchWroteIt) {
  std::ifstream in(data("pt-forms/index.json"));
  const nlohmann::json index = nlohmann::json::parse(in);
  int read = 0;
  for (const auto& [name, want] : index.items()) {
    const std::string file = data("pt-forms/" + name);
    if (want["dtype"] == "torch.int16") {  // no int16 in the harness: refused, saying so
      EXPECT_THROW(io::read_torch_pt(file), InputError);
      continue;
    }
    const tensor::Tensor t = io::read_torch_pt(file);
    ++read;
    EXPECT_EQ(nlohmann::json(t.shape()), want["shape"]) << name;
    if (!want["values"].is_array()) continue;
    const tensor::Tensor f = t.to(tensor::DType::kF64);
    ASSERT_EQ(size_t(f.numel()), want["values"].size()) << name;
    for (size_t i = 0; i < want["values"].size(); ++i)
      EXPECT_EQ(f.data_as<double>()[i], want["values"][i].get<double>()) << name << "[" << i << "]";
  }
  EXPECT_EQ(read, int(index.size()) - 1);
}

}  // namespace
}  // namespace h0::compare
