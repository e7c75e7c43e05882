// TileConfig JSON: random configs round-trip exactly (object -> JSON -> object, and
// canonical JSON -> object -> JSON), and every malformed field is a usage error that
// names the field path and the bad value.
#include "core/tile_config.h"

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/core/error_testing.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using testing::expect_error;

int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

CubeTile random_cube(std::mt19937_64& rng) {
  CubeTile c;
  c.mL0 = pick(rng, 1, 512);
  c.mL1 = pick(rng, 1, 4096);
  c.kL0 = pick(rng, 1, 512);
  c.k_short_form = pick(rng, 0, 1);
  c.kAL1 = pick(rng, 1, 4096);
  c.kBL1 = c.k_short_form ? c.kAL1 : pick(rng, 1, 4096);
  c.nL0 = pick(rng, 1, 512);
  c.nL1 = pick(rng, 1, 4096);
  c.split_k = pick(rng, 0, 1);
  c.k_view = pick(rng, 0, 1) ? pick(rng, 1, 1 << 16) : 0;
  return c;
}

TileConfig random_config(std::mt19937_64& rng) {
  TileConfig c;
  if (pick(rng, 0, 1)) {
    c.vec = Shape(pick(rng, 1, 4));
    for (auto& d : *c.vec) d = pick(rng, 1, 1 << 20);
  }
  if (pick(rng, 0, 1)) c.cube = random_cube(rng);
  if (pick(rng, 0, 1)) c.nbuffer = static_cast<int>(pick(rng, 1, 4));
  if (pick(rng, 0, 1)) c.l2_group = {pick(rng, 1, 64), pick(rng, 1, 64)};
  if (pick(rng, 0, 1)) {
    AttentionTiles a;
    a.q_tile = pick(rng, 1, 512);
    a.kv_tile = pick(rng, 1, 4096);
    a.kv_split = pick(rng, 1, 16);
    a.order = static_cast<TaskOrder>(pick(rng, 0, 2));
    if (pick(rng, 0, 1)) a.preload = static_cast<int>(pick(rng, 0, kMaxAttentionPreload));
    c.attention = a;
  }
  if (pick(rng, 0, 1)) {
    // Distinct, not necessarily contiguous node ids, shuffled and cut into non-empty groups.
    std::vector<int> ids(pick(rng, 1, 12));
    int id = -1;
    for (int& slot : ids) slot = id += static_cast<int>(pick(rng, 1, 3));
    std::shuffle(ids.begin(), ids.end(), rng);
    c.fusion.emplace();
    for (int node : ids) {
      if (c.fusion->empty() || pick(rng, 0, 2) == 0) c.fusion->emplace_back();
      c.fusion->back().push_back(node);
    }
  }
  return c;
}

TEST(TileConfig, RandomConfigsRoundTripThroughJsonAndText) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const TileConfig c = random_config(rng);
    const json j = c.to_json();
    EXPECT_EQ(TileConfig::from_json(j), c) << j.dump();
    EXPECT_EQ(TileConfig::from_json(j).to_json(), j);
    EXPECT_EQ(TileConfig::parse(c.to_string()), c) << c.to_string();
  }
}

TEST(TileConfig, CanonicalJsonRoundTripsExactly) {
  for (const char* text : {
           R"({"vec":[64,512],"cube":{"m":[128,128],"k":[64,256,256],"n":[256,256],"split_k":false},)"
           R"("nbuffer":2,"l2_group":[6,4],"fusion":[[0,1,2],[3]]})",
           R"({"cube":{"m":[96,96],"k":[64,1536,256],"n":[128,128],"split_k":true}})",
           R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256],"split_k":false}})",
           R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256],"split_k":false,"k_view":1024}})",
           R"({"vec":[1,4,1,64]})",
           R"({})",
       }) {
    const json j = json::parse(text);
    EXPECT_EQ(TileConfig::from_json(j).to_json(), j) << text;
  }
}

TEST(TileConfig, ShortKFormMeansEqualL1Sizes) {
  const TileConfig c = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})");
  ASSERT_TRUE(c.cube);
  EXPECT_EQ(c.cube->kL0, 64);
  EXPECT_EQ(c.cube->kAL1, 256);
  EXPECT_EQ(c.cube->kBL1, 256);
  EXPECT_TRUE(c.cube->k_short_form);
  EXPECT_FALSE(c.cube->split_k);  // absent split_k is false
  EXPECT_EQ(c.to_json()["cube"]["k"], json::parse("[64,256]"));
}

TEST(TileConfig, ShortKFormIsWrittenLongWhenL1SizesDiffer) {
  TileConfig c = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})");
  c.cube->kBL1 = 512;
  EXPECT_EQ(c.to_json()["cube"]["k"], json::parse("[64,256,512]"));
}

TEST(TileConfig, ToStringIsCompactAndAbsentFieldsStayAbsent) {
  TileConfig c;
  EXPECT_EQ(c.to_string(), "{}");
  EXPECT_EQ(c.nbuffer_or_default(), 1);
  c.vec = Shape{64, 512};
  c.nbuffer = 2;
  EXPECT_EQ(c.to_string(), R"({"nbuffer":2,"vec":[64,512]})");
}

TEST(TileConfig, EveryMalformedFieldIsAUsageErrorNamingIt) {
  const std::string cube_mn = R"("m":[128,128],"n":[256,256])";
  const struct {
    std::string text;
    std::vector<std::string_view> parts;
  } cases[] = {
      {R"({"cube":{)" + cube_mn + R"(,"k":[64,-3]}})", {"cube.k[1]: expected a positive integer, got -3"}},
      {R"({"cube":{)" + cube_mn + R"(,"k":[64]}})", {"cube.k: expected an array of 2 to 3 elements, got [64]"}},
      {R"({"cube":{)" + cube_mn + R"(,"k":[64,256,256,256]}})", {"cube.k:", "[64,256,256,256]"}},
      {R"({"cube":{"m":[128,128],"k":[64,256]}})", {"cube.n: missing"}},
      {R"({"cube":{"m":[128],"k":[64,256],"n":[256,256]}})", {"cube.m: expected an array of 2 elements"}},
      {R"({"cube":{"m":[128,"128"],"k":[64,256],"n":[256,256]}})", {"cube.m[1]", "got \"128\""}},
      {R"({"cube":{)" + cube_mn + R"(,"k":[64,256],"split_k":1}})", {"cube.split_k: expected true or false, got 1"}},
      {R"({"cube":{)" + cube_mn + R"(,"k":[64,256],"splitk":true}})", {"cube: unknown key \"splitk\""}},
      {R"({"cube":{)" + cube_mn + R"(,"k":[64,256],"k_view":0}})", {"cube.k_view: expected a positive integer, got 0"}},
      {R"({"cube":[1,2]})", {"cube: expected an object, got [1,2]"}},
      {R"({"vecc":[64]})", {"unknown key \"vecc\"", "vec, cube"}},
      {R"({"vec":[1,2,3,4,5]})", {"vec: expected an array of 1 to 4 elements, got [1,2,3,4,5]"}},
      {R"({"vec":[]})", {"vec: expected an array of 1 to 4 elements, got []"}},
      {R"({"vec":[64,0]})", {"vec[1]: expected a positive integer, got 0"}},
      {R"({"vec":[64.5]})", {"vec[0]: expected a positive integer, got 64.5"}},
      {R"({"vec":[18446744073709551615]})", {"vec[0]: expected a positive integer, got 18446744073709551615"}},
      {R"({"vec":64})", {"vec: expected an array", "got 64"}},
      {R"({"nbuffer":5})", {"nbuffer: expected an integer from 1 to 4, got 5"}},
      {R"({"nbuffer":0})", {"nbuffer: expected an integer from 1 to 4, got 0"}},
      {R"({"nbuffer":true})", {"nbuffer:", "got true"}},
      {R"({"attention":{"q_tile":128,"kv_tile":256,"preload":8}})",
       {"attention.preload: expected an integer from 0 to 7, got 8"}},
      {R"({"attention":{"q_tile":128,"kv_tile":256,"preload":-1}})", {"attention.preload:", "got -1"}},
      {R"({"attention":{"q_tile":128,"kv_tile":256,"preload":"4"}})", {"attention.preload:", "got \"4\""}},
      {R"({"attention":{"q_tile":128,"kv_tile":256,"pre_load":4}})", {"attention: unknown key \"pre_load\""}},
      {R"({"l2_group":[6]})", {"l2_group: expected an array of 2 elements, got [6]"}},
      {R"({"l2_group":[6,-4]})", {"l2_group[1]: expected a positive integer, got -4"}},
      {R"({"fusion":[[0,1],[1]]})", {"fusion[1][0]: node 1 appears in more than one place"}},
      {R"({"fusion":[[0,1,0]]})", {"fusion[0][2]: node 0"}},
      {R"({"fusion":[[0,-1]]})", {"fusion[0][1]: expected a node id", "got -1"}},
      {R"({"fusion":[[0],[]]})", {"fusion[1]: expected an array of at least 1 element", "got []"}},
      {R"({"fusion":[]})", {"fusion: expected an array of at least 1 element"}},
      {R"({"fusion":[0,1]})", {"fusion[0]: expected an array", "got 0"}},
      {R"({"fusion":[[4294967296]]})", {"fusion[0][0]", "got 4294967296"}},
      {R"([1,2])", {"config: expected an object, got [1,2]"}},
      {R"({"vec":[64,)", {"config is not valid JSON", "line 1"}},
      {R"()", {"config is not valid JSON"}},
      {R"({"vec":[1e999]})", {"config is not valid JSON", "1e999"}},
  };
  for (const auto& c : cases) {
    expect_error([&] { TileConfig::parse(c.text); }, ErrorCategory::Usage, c.parts, c.text);
  }
}

class TileConfigFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) { return dir_.write(name, text); }
  testing::TempDir dir_{"tile_config_test"};
};

TEST_F(TileConfigFile, AtPathReadsTheFile) {
  const std::string path = write("good.json", R"({"vec":[64,512],"nbuffer":2})");
  const TileConfig c = TileConfig::parse_arg("@" + path);
  EXPECT_EQ(c.vec, (Shape{64, 512}));
  EXPECT_EQ(c.nbuffer, 2);
  EXPECT_EQ(TileConfig::parse_arg(R"({"vec":[8]})").vec, Shape{8});  // inline JSON
}

TEST_F(TileConfigFile, AMissingFileOrAFolderIsAUsageErrorNamingThePath) {
  const std::string missing = (dir_.path() / "missing.json").string();
  expect_error([&] { TileConfig::parse_arg("@" + missing); }, ErrorCategory::Usage, {missing, "no such file"});
  const std::string dir = dir_.str();
  expect_error([&] { TileConfig::parse_arg("@" + dir); }, ErrorCategory::Usage, {dir, "it is a folder"});
}

TEST_F(TileConfigFile, MalformedFileContentNamesTheFileAndTheField) {
  const std::string path = write("bad.json", R"({"nbuffer":9})");
  expect_error([&] { TileConfig::parse_arg("@" + path); }, ErrorCategory::Usage,
               {path, "nbuffer: expected an integer from 1 to 4, got 9"});
}

}  // namespace
}  // namespace pto
