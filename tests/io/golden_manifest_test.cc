// Every committed golden file matches golden/manifest.json, and tampering is caught.
#include "io/golden_manifest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "test_util.h"

namespace h0::io {
namespace {
namespace fs = std::filesystem;

TEST(GoldenManifest, EveryCommittedGoldenMatchesItsManifestEntry) {
  const auto m = GoldenManifest::load(test::source_path("golden"));
  EXPECT_GE(m.files().size(), 8u);
  for (const auto& [path, g] : m.files()) {
    EXPECT_EQ(g.sha256.size(), 64u) << path;
    EXPECT_EQ(g.producer.rfind("golden/tools/", 0), 0u) << path << " producer " << g.producer;
    EXPECT_TRUE(g.versions.count("torch")) << path;
  }
  const auto problems = m.verify();
  for (const auto& p : problems) ADD_FAILURE() << p;
}

TEST(GoldenManifest, TamperedMissingAndUnlistedFilesAreReported) {
  test::TempDir dir;
  fs::copy(test::source_path("golden/manifest.json"), dir.file("manifest.json"));
  for (const auto& entry : fs::directory_iterator(test::source_path("golden"))) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name != "tools")
      fs::copy(entry.path(), dir.file(name), fs::copy_options::recursive);
  }
  const auto clean = GoldenManifest::load(dir.path());
  EXPECT_TRUE(clean.verify().empty());

  // Same size, one byte different.
  {
    std::fstream f(dir.file("foundation/compare_metrics.json"), std::ios::in | std::ios::out);
    f.seekp(3);
    f.put('#');
  }
  fs::remove(dir.file("foundation/philox.safetensors"));
  std::ofstream(dir.file("foundation/stray.bin")) << "x";
  const auto problems = clean.verify();
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].rfind("foundation/compare_metrics.json: sha256 ", 0), 0u) << problems[0];
  EXPECT_EQ(problems[1], "foundation/philox.safetensors: listed in the manifest but missing");
  EXPECT_EQ(problems[2], "foundation/stray.bin: not listed in the manifest");
}

TEST(GoldenManifest, MissingManifestIsAnInputError) {
  test::TempDir dir;
  EXPECT_THROW(GoldenManifest::load(dir.path()), InputError);
}

}  // namespace
}  // namespace h0::io
