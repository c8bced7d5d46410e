// The safetensors reader on files written byte by byte: good, sharded, truncated, corrupt, bad offsets.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

#include "engine/model/weights.hpp"
#include "tests/model/safetensors_writer.hpp"

using namespace strata;
using namespace strata_test;
using Catch::Matchers::Contains;

TEST_CASE("a well-formed file maps every tensor with its dtype, shape and bytes") {
  const std::string d = scratch_dir("st_good");
  FakeTensor h{"h", "BF16", {3}, {0x80, 0x3f, 0x00, 0xc0, 0x00, 0x00}};  // 1, -2, 0
  write_safetensors(d + "/model.safetensors", {f32_tensor("a", {2, 3}, 1.0f), h});
  auto ck = Checkpoint::open_dir(d);
  REQUIRE(ck->tensors().size() == 2);
  const TensorView& a = ck->get("a", {2, 3});
  CHECK(a.dtype == DType::F32);
  CHECK(a.nbytes == 24);
  CHECK(a.to_f32() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(ck->get("h").to_f32() == std::vector<float>{1, -2, 0});
  CHECK(ck->has("a"));
  CHECK_FALSE(ck->has("b"));
}

TEST_CASE("asking for a tensor by the wrong shape names it, the expected and the found shape") {
  const std::string d = scratch_dir("st_shape");
  write_safetensors(d + "/model.safetensors", {f32_tensor("w", {2, 3})});
  auto ck = Checkpoint::open_dir(d);
  CHECK_THROWS_WITH(ck->get("w", {3, 2}), Contains("tensor w") && Contains("expected [3, 2]") &&
                                              Contains("found [2, 3]"));
  CHECK_THROWS_WITH(ck->get("nope"), Contains("tensor nope missing"));
}

TEST_CASE("a truncated file is an error naming the file") {
  const std::string d = scratch_dir("st_trunc");
  const std::string p = d + "/model.safetensors";
  write_text(p, "abc");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains(p) && Contains("truncated"));

  std::vector<unsigned char> data;
  const std::string header = header_for({f32_tensor("a", {4})}, &data).dump();
  write_raw(p, header, data, header.size() + 100);  // header length past the end of the file
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains(p) && Contains("header length"));

  data.resize(8);  // 16 bytes promised, 8 present
  write_raw(p, header, data, header.size());
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains(p) && Contains("tensor a") && Contains("past the data"));

  write_text(p, "");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("truncated"));
}

TEST_CASE("a corrupt header is an error naming the file and the problem") {
  const std::string d = scratch_dir("st_corrupt");
  const std::string p = d + "/model.safetensors";
  std::vector<unsigned char> none;
  write_raw(p, "{\"a\": {\"dtype\": ", none, 16);
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains(p) && Contains("corrupt header"));
  write_raw(p, "[1, 2]", none, 6);
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("not a JSON object"));
  auto one = [&](const std::string& entry) {
    const std::string h = "{\"t\": " + entry + "}";
    std::vector<unsigned char> data(64);
    write_raw(p, h, data, h.size());
  };
  one(R"({"shape": [2], "data_offsets": [0, 8]})");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("tensor t") && Contains("missing dtype"));
  one(R"({"dtype": "I64", "shape": [2], "data_offsets": [0, 16]})");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("unsupported dtype I64") && Contains("F32, F16, BF16"));
  one(R"({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]})");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("negative"));
  one(R"({"dtype": "F32", "shape": [2]})");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("data_offsets"));
  one(R"({"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296], "data_offsets": [0, 8]})");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("too large"));
}

TEST_CASE("offsets that do not fit the shape or run backwards are rejected") {
  const std::string d = scratch_dir("st_offsets");
  const std::string p = d + "/model.safetensors";
  auto one = [&](const std::string& offsets) {
    const std::string h = R"({"t": {"dtype": "F32", "shape": [2, 2], "data_offsets": )" + offsets + "}}";
    std::vector<unsigned char> data(64);
    write_raw(p, h, data, h.size());
  };
  one("[8, 4]");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("bad offsets") && Contains("begin 8 > end 4"));
  one("[0, 12]");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("bad offsets") && Contains("16 bytes expected"));
  one("[48, 80]");
  CHECK_THROWS_WITH(Checkpoint::open_file(p), Contains("past the data"));
  one("[48, 64]");
  CHECK(Checkpoint::open_file(p)->get("t").nbytes == 16);
}

TEST_CASE("a sharded checkpoint joins its shards through model.safetensors.index.json") {
  const std::string d = scratch_dir("st_sharded");
  write_safetensors(d + "/s1.safetensors", {f32_tensor("a", {2}), f32_tensor("b", {3}, 10)});
  write_safetensors(d + "/s2.safetensors", {f32_tensor("c", {1}, 7)});
  const std::string index =
      R"({"metadata": {"total_size": 24}, "weight_map": {"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"}})";
  write_text(d + "/model.safetensors.index.json", index);
  auto ck = Checkpoint::open_dir(d);
  CHECK(ck->tensors().size() == 3);
  CHECK(ck->get("b").to_f32() == std::vector<float>{10, 11, 12});
  CHECK(ck->get("c").to_f32() == std::vector<float>{7});
}

TEST_CASE("sharded checkpoints with a missing shard, a stray entry or a duplicate tensor are rejected") {
  const std::string d = scratch_dir("st_sharded_bad");
  write_safetensors(d + "/s1.safetensors", {f32_tensor("a", {2})});
  write_safetensors(d + "/s2.safetensors", {f32_tensor("a", {2})});
  write_text(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "z": "s9.safetensors"}})");
  CHECK_THROWS_WITH(Checkpoint::open_dir(d), Contains("s9.safetensors") && Contains("missing"));
  write_text(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "q": "s1.safetensors"}})");
  CHECK_THROWS_WITH(Checkpoint::open_dir(d), Contains("tensor q") && Contains("not in it"));
  write_text(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  CHECK_THROWS_WITH(Checkpoint::open_dir(d), Contains("tensor a is also in"));
  write_text(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "../s1.safetensors"}})");
  CHECK_THROWS_WITH(Checkpoint::open_dir(d), Contains("not a plain file name"));
  write_text(d + "/model.safetensors.index.json", R"({"weights": {}})");
  CHECK_THROWS_WITH(Checkpoint::open_dir(d), Contains("weight_map"));
  write_text(d + "/model.safetensors.index.json", "{not json");
  CHECK_THROWS_WITH(Checkpoint::open_dir(d), Contains("model.safetensors.index.json") && Contains("not valid JSON"));
}

TEST_CASE("a directory without safetensors says what it looked for") {
  const std::string d = scratch_dir("st_empty");
  CHECK_THROWS_WITH(Checkpoint::open_dir(d), Contains("no model.safetensors or model.safetensors.index.json"));
  CHECK_THROWS_WITH(Checkpoint::open_file(d + "/absent.safetensors"), Contains("absent.safetensors: file missing"));
}

TEST_CASE("every truncation of a good file is an error, and header corruption never escapes as a crash") {
  const std::string d = scratch_dir("st_every_cut");
  const std::string good = d + "/good.safetensors", cut = d + "/cut.safetensors";
  write_safetensors(good, {f32_tensor("a", {3}), FakeTensor{"b", "F16", {2}, {0, 0x3c, 0, 0xc0}}});
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_text(cut, bytes.substr(0, n));
    INFO("cut at " << n << " of " << bytes.size());
    CHECK_THROWS_AS(Checkpoint::open_file(cut), Error);
  }
  // Flipping any single header byte either still parses to in-range views or is a strata::Error.
  size_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | uint8_t(bytes[size_t(i)]);
  const size_t header_end = 8 + header_len;
  REQUIRE(header_end < bytes.size());
  int rejected = 0;
  for (size_t i = 8; i < header_end; ++i) {
    std::string b = bytes;
    b[i] = char(b[i] ^ 0x5a);
    write_text(cut, b);
    try {
      auto ck = Checkpoint::open_file(cut);
      for (const auto& kv : ck->tensors()) CHECK(kv.second.to_f32().size() == size_t(kv.second.numel()));
    } catch (const Error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 0);
}
