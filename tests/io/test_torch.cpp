// torch.save checkpoints against the values torch itself wrote
// (tools/golden/make_pth_fixture.py), and malformed archives.
#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <atomic>

#include "io/checkpoint.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

using test::data_dir;
using test::TempDir;

bool same_bytes(const Tensor& a, const Tensor& b) {
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.dtype() == cb.dtype() && ca.shape() == cb.shape() &&
         (ca.nbytes() == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0);
}

// Every tensor of `ck` equals the expected file's, bit for bit.
void expect_matches_expected(const Checkpoint& ck, bool all_names = true) {
  Checkpoint want = Checkpoint::open(data_dir() + "/torch_fixture_expected.safetensors");
  if (all_names) {
    std::vector<std::string> torch_names;  // the expected file also holds the GGUF fixture's values
    for (const auto& n : want.names())
      if (!n.starts_with("gguf.")) torch_names.push_back(n);
    EXPECT_EQ(ck.names(), torch_names);
  }
  for (const auto& name : ck.names()) {
    ASSERT_TRUE(want.contains(name)) << name;
    Tensor got = ck.get(name);
    EXPECT_EQ(ck.info(name).dtype, want.info(name).dtype) << name;
    EXPECT_EQ(ck.info(name).shape, want.info(name).shape) << name;
    EXPECT_EQ(got.shape(), ck.info(name).shape) << name;
    EXPECT_TRUE(same_bytes(got, want.get(name))) << name;
  }
}

TEST(TorchZip, EveryValueReadExactly) {
  Checkpoint ck = Checkpoint::open(data_dir() + "/torch_fixture.pth");
  expect_matches_expected(ck);
  EXPECT_EQ(ck.size(), 23u);
  EXPECT_TRUE(ck.metadata().empty());
  // Spot values, in case both files were wrong the same way.
  EXPECT_EQ(ck.get("state_dict.ids_i64").to_f64_vector(),
            (std::vector<double>{0, -1, 1099511627776.0, -4611686018427387904.0, 7}));
  EXPECT_EQ(ck.get("state_dict.shared_row1").to_f32_vector(), (std::vector<float>{2, 2.5, 3, 3.5}));
  EXPECT_EQ(ck.get("state_dict.f8_e4m3").to_f32_vector(), (std::vector<float>{0.5, -448, 3}));
  EXPECT_EQ(ck.get("state_dict.u16").to_f64_vector(), (std::vector<double>{0, 65535, 1234}));
  EXPECT_EQ(ck.get("state_dict.scalar").dim(), 0);
  EXPECT_EQ(ck.get("state_dict.scalar").to_f32_vector(), std::vector<float>{2.5f});
  EXPECT_EQ(ck.get("nested.list.1.0").to_f64_vector(), std::vector<double>{3});
  EXPECT_EQ(ck.info("state_dict.w_bf16").dtype, DType::BF16);
  EXPECT_EQ(ck.info("param").shape, (Shape{2, 2}));  // an nn.Parameter (_rebuild_parameter)
}

TEST(TorchZip, ZeroCopyViewsHonourSharingOffsetsAndStrides) {
  Checkpoint ck = Checkpoint::open(data_dir() + "/torch_fixture.pth");
  Tensor full = ck.get("state_dict.shared_full"), row = ck.get("state_dict.shared_row1");
  EXPECT_FALSE(full.buffer()->owned());  // views of the mapping
  if (!full.buffer()->owned()) {
    EXPECT_EQ(static_cast<char*>(row.data_ptr()) - static_cast<char*>(full.data_ptr()), 4 * 4);
  }  // one storage
  EXPECT_EQ(reinterpret_cast<uintptr_t>(full.data_ptr()) % 64, 0u);  // torch aligns storages
  Tensor tr = ck.get("state_dict.transposed");
  EXPECT_EQ(tr.shape(), (Shape{4, 3}));
  EXPECT_EQ(tr.strides(), (Strides{1, 4}));  // a strided view, not a copy
  EXPECT_FALSE(tr.is_contiguous());
  Tensor st = ck.get("state_dict.strided");
  EXPECT_EQ(st.strides(), (Strides{6, 2}));
  Tensor off = ck.get("state_dict.offset_view");
  EXPECT_EQ(off.buffer()->bytes(), 40u);  // the whole 10-float storage,
  EXPECT_EQ(off.byte_offset(), 12u);      // viewed from its 4th element
}

TEST(TorchZip, DeflatedMembersAreCopied) {
  Checkpoint ck = Checkpoint::open(data_dir() + "/torch_fixture_deflate.pth");
  expect_matches_expected(ck);
  Tensor full = ck.get("state_dict.shared_full"), row = ck.get("state_dict.shared_row1");
  EXPECT_TRUE(full.buffer()->owned());
  EXPECT_EQ(full.buffer(), row.buffer());  // one inflated copy per storage while in use
}

TEST(TorchZip, PickleProtocol4) {
  expect_matches_expected(Checkpoint::open(data_dir() + "/torch_fixture_p4.pth"));
}

TEST(TorchLegacy, EveryValueReadExactly) {
  Checkpoint ck = Checkpoint::open(data_dir() + "/torch_fixture_legacy.pth");
  EXPECT_EQ(ck.size(), 17u);  // the fixture leaves out float8 and uint16 (no legacy storage class)
  expect_matches_expected(ck, /*all_names=*/false);
  // Legacy storages follow 8-byte length fields: views where aligned, copies elsewhere.
  Tensor full = ck.get("state_dict.shared_full"), row = ck.get("state_dict.shared_row1");
  if (!full.buffer()->owned()) {
    EXPECT_EQ(static_cast<char*>(row.data_ptr()) - static_cast<char*>(full.data_ptr()), 4 * 4);
  }
}

// ---- malformed archives -----------------------------------------------------

// Copies a zip member by member; edit returns the new bytes or nullopt to drop it.
void rewrite_zip(const std::string& src, const std::string& dst,
                 const std::function<std::optional<std::string>(const std::string&, const std::string&)>& edit) {
  int err = 0;
  zip_t* in = zip_open(src.c_str(), ZIP_RDONLY, &err);
  ASSERT_NE(in, nullptr);
  zip_t* out = zip_open(dst.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(out, nullptr);
  std::vector<std::unique_ptr<std::string>> keep;  // libzip reads the sources at zip_close
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    const std::string name = zip_get_name(in, static_cast<zip_uint64_t>(i), 0);
    zip_stat_t st;
    zip_stat_index(in, static_cast<zip_uint64_t>(i), 0, &st);
    std::string bytes(st.size, '\0');
    zip_file_t* f = zip_fopen_index(in, static_cast<zip_uint64_t>(i), 0);
    zip_fread(f, bytes.data(), st.size);
    zip_fclose(f);
    std::optional<std::string> now = edit(name, bytes);
    if (!now) continue;
    keep.push_back(std::make_unique<std::string>(std::move(*now)));
    zip_source_t* s = zip_source_buffer(out, keep.back()->data(), keep.back()->size(), 0);
    zip_int64_t idx = zip_file_add(out, name.c_str(), s, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(idx, 0);
    zip_set_file_compression(out, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
  }
  ASSERT_EQ(zip_close(out), 0);
  zip_discard(in);
}

const std::string kFixture = data_dir() + "/torch_fixture.pth";

TEST(TorchZip, RewrittenArchiveStillReads) {
  TempDir dir;
  const std::string path = dir.file("same.pth");
  rewrite_zip(kFixture, path, [](const std::string&, const std::string& b) { return b; });
  expect_matches_expected(Checkpoint::open(path));  // libzip's own layout (no 64-byte alignment)
}

TEST(TorchZip, MissingStorageMember) {
  TempDir dir;
  const std::string path = dir.file("missing.pth");
  rewrite_zip(kFixture, path, [](const std::string& n, const std::string& b) -> std::optional<std::string> {
    if (n.ends_with("/data/0")) return std::nullopt;
    return b;
  });
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "storage '0'", "has no zip member", "data/0",
                     "used by tensor 'state_dict.w_bf16'");
}

TEST(TorchZip, MissingDataPkl) {
  TempDir dir;
  const std::string path = dir.file("nopkl.pth");
  rewrite_zip(kFixture, path, [](const std::string& n, const std::string& b) -> std::optional<std::string> {
    if (n.ends_with("data.pkl")) return std::nullopt;
    return b;
  });
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "data.pkl' is missing");
}

TEST(TorchZip, StorageMemberOfTheWrongSize) {
  TempDir dir;
  const std::string path = dir.file("short.pth");
  rewrite_zip(kFixture, path, [](const std::string& n, const std::string& b) -> std::optional<std::string> {
    if (n.ends_with("/data/0")) return b.substr(0, b.size() - 2);
    return b;
  });
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "data/0", "bytes but the pickle declares storage '0'",
                     "state_dict.w_bf16");
}

TEST(TorchZip, BigEndianRefused) {
  TempDir dir;
  const std::string path = dir.file("be.pth");
  rewrite_zip(kFixture, path, [](const std::string& n, const std::string& b) -> std::optional<std::string> {
    if (n.ends_with("/byteorder")) return std::string("big");
    return b;
  });
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "byteorder 'big'");
}

TEST(TorchZip, ImplausibleInflatedSizeIsRefusedBeforeAllocating) {
  // data.pkl's uncompressed size forged to 1 GiB (in the local header and the
  // central directory) over a few hundred deflated bytes: a decompression bomb.
  TempDir dir;
  std::string b = test::read_bytes(data_dir() + "/torch_fixture_deflate.pth");
  const std::string name = "torch_fixture/data.pkl";
  const uint32_t forged = 1u << 30;
  size_t patched = 0;
  for (size_t p = 0; p + 46 + name.size() <= b.size(); ++p) {
    if (b.compare(p, 4, "PK\x03\x04") == 0 && b.compare(p + 30, name.size(), name) == 0) {
      std::memcpy(b.data() + p + 22, &forged, 4);
      ++patched;
    }
    if (b.compare(p, 4, "PK\x01\x02") == 0 && b.compare(p + 46, name.size(), name) == 0) {
      std::memcpy(b.data() + p + 24, &forged, 4);
      ++patched;
    }
  }
  ASSERT_EQ(patched, 2u);
  const std::string path = dir.file("bomb.pth");
  test::write_bytes(path, b);
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "data.pkl' claims 1073741824 bytes", "corrupt archive");
}

TEST(TorchZip, TruncatedArchive) {
  TempDir dir;
  const std::string bytes = test::read_bytes(kFixture);
  for (size_t cut : {size_t(10), bytes.size() / 2, bytes.size() - 30, bytes.size() - 1}) {
    const std::string path = dir.file("cut" + std::to_string(cut) + ".pth");
    test::write_bytes(path, bytes.substr(0, cut));
    EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "zip");
  }
}

TEST(TorchZip, EveryPrefixOfTheArchiveIsAnErrorNotACrash) {
  TempDir dir;
  const std::string bytes = test::read_bytes(kFixture);
  const std::string path = dir.file("prefix.pth");
  for (size_t cut = 0; cut < bytes.size(); cut += 97) {
    test::write_bytes(path, bytes.substr(0, cut));
    EXPECT_THROW(Checkpoint::open(path), Error) << cut;
  }
}

TEST(TorchLegacy, TruncatedStream) {
  TempDir dir;
  const std::string bytes = test::read_bytes(data_dir() + "/torch_fixture_legacy.pth");
  const std::string path = dir.file("legacy_cut.pth");
  for (size_t cut = 1; cut < bytes.size(); cut += 13) {
    test::write_bytes(path, bytes.substr(0, cut));
    EXPECT_THROW(Checkpoint::open(path), Error) << cut;
  }
  test::write_bytes(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "truncated");
}

}  // namespace
}  // namespace vidax::io

namespace vidax::io {
namespace {

TEST(TorchZip, ConcurrentGetsOfInflatedStorages) {
  Checkpoint ck = Checkpoint::open(data_dir() + "/torch_fixture_deflate.pth");
  Checkpoint want = Checkpoint::open(data_dir() + "/torch_fixture_expected.safetensors");
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round)
        for (const auto& name : ck.names())
          if (!same_bytes(ck.get(name), want.get(name))) ++mismatches;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace vidax::io
