// The restricted unpickler: hostile pickles are refused by name and nothing
// they ask for ever runs; malformed ones are errors, never crashes.
#include <gtest/gtest.h>
#include <zip.h>

#include <filesystem>

#include "io/checkpoint.h"
#include "io/pickle.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

using test::TempDir;

// Tiny pickle assembler ("..."_b keeps embedded NUL bytes).
std::string operator""_b(const char* s, size_t n) { return std::string(s, n); }
std::string u32le(uint32_t v) { return std::string{char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; }
std::string binunicode(const std::string& s) {
  std::string out("X");
  out += u32le(static_cast<uint32_t>(s.size()));
  return out + s;
}
std::string short_unicode(const std::string& s) {
  std::string out("\x8c");
  out += char(s.size());
  return out + s;
}

// protocol 2: GLOBAL module name; (cmd,) REDUCE
std::string call_global_p2(const std::string& module, const std::string& name, const std::string& arg) {
  return std::string("\x80\x02") + "c" + module + "\n" + name + "\n" + binunicode(arg) + "\x85R.";
}
// protocol 4: STACK_GLOBAL
std::string call_global_p4(const std::string& module, const std::string& name, const std::string& arg) {
  return std::string("\x80\x04") + short_unicode(module) + short_unicode(name) + "\x93" + short_unicode(arg) + "\x85R.";
}
// protocol 0 (text): the classic exploit form
std::string call_global_p0(const std::string& module, const std::string& name, const std::string& arg) {
  return "c" + module + "\n" + name + "\n(S'" + arg + "'\ntR.";
}

pickle::Unpickled run(const std::string& bytes) {
  return pickle::unpickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "test.pkl");
}

class Hostile : public ::testing::Test {
 protected:
  TempDir dir;
  std::string marker = dir.file("pwned");
  std::string cmd = "touch " + marker;
  void TearDown() override { EXPECT_FALSE(std::filesystem::exists(marker)) << "a pickled command ran"; }
};

TEST_F(Hostile, SystemCallsAreRefusedByName) {
  for (const char* module : {"posix", "os", "nt", "subprocess", "builtins", "__builtin__"}) {
    for (const char* name : {"system", "eval", "exec", "Popen"}) {
      const std::string full = std::string(module) + "." + name;
      EXPECT_VIDAX_ERROR(run(call_global_p2(module, name, cmd)), "refused global '" + full + "'", "test.pkl");
      EXPECT_VIDAX_ERROR(run(call_global_p4(module, name, cmd)), "refused global '" + full + "'");
      EXPECT_VIDAX_ERROR(run(call_global_p0(module, name, cmd)), "refused global '" + full + "'");
    }
  }
}

TEST_F(Hostile, LookalikeGlobalsAreRefused) {
  // Names that start like allowed ones, and torch functions that are not rebuilders.
  for (const char* g : {"torch._utils\n_rebuild_tensor_v2x", "torch\nload", "torch.serialization\nload",
                        "torch._utils\n_rebuild_qtensor", "collections\ndefaultdict", "torch\nFloatStorage.x",
                        "torch._C\n_set_default_tensor_type", "numpy.core.multiarray\n_reconstruct"}) {
    std::string bytes = std::string("\x80\x02") + "c" + g + "\n)R.";
    std::string name = g;
    name[name.find('\n')] = '.';
    EXPECT_VIDAX_ERROR(run(bytes), "refused global '" + name + "'");
  }
}

TEST_F(Hostile, RefusedInsideATorchZip) {
  const std::string path = dir.file("evil.pth");
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  const std::string pkl = call_global_p2("posix", "system", cmd);
  zip_file_add(z, "evil/data.pkl", zip_source_buffer(z, pkl.data(), pkl.size(), 0), 0);
  ASSERT_EQ(zip_close(z), 0);
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "evil/data.pkl", "refused global 'posix.system'");
}

TEST_F(Hostile, RefusedInsideALegacyStream) {
  const std::string path = dir.file("evil_legacy.pt");
  const std::string magic("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15);
  const std::string version = std::string("\x80\x02M\xe9\x03.", 6);  // 1001
  test::write_bytes(path, magic + version + "\x80\x02}." + call_global_p2("os", "system", cmd));
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "refused global 'os.system'");
}

TEST_F(Hostile, InstantiationOpcodesAreRefused) {
  EXPECT_VIDAX_ERROR(run(std::string("\x80\x02") + "ccollections\nOrderedDict\n)\x81."), "NEWOBJ");
  EXPECT_VIDAX_ERROR(run("(iposix\nsystem\n."), "INST/OBJ");
  EXPECT_VIDAX_ERROR(run(std::string("\x80\x02\x82\x01.")), "EXT");
  EXPECT_VIDAX_ERROR(run(std::string("\x80\x02]N\x62.")), "BUILD on a list");
  EXPECT_VIDAX_ERROR(run(std::string("\x80\x02") + "ctorch\nFloatStorage\n)R."), "torch.FloatStorage cannot be called");
}

TEST(Pickle, PrimitivesAndContainers) {
  // {"a": [1, -2, 3.5, True, None, "s", b"\x00\xff", 2**40, -(2**40)], "t": (1, 2)}
  std::string p = std::string("\x80\x02}q\x00("_b) + binunicode("a") + "]q\x01(K\x01J\xfe\xff\xff\xffG\x40\x0c\0\0\0\0\0\0"_b +
                  "\x88N" + binunicode("s") + "C\x02\x00\xff"_b + "\x8a\x06\0\0\0\0\0\x01"_b +
                  "\x8a\x06\0\0\0\0\0\xff"_b + "e" + binunicode("t") + "K\x01K\x02\x86u.";
  pickle::Unpickled u = run(p);
  const auto& root = u.objects[u.root];
  ASSERT_EQ(root.kind, pickle::Kind::Dict);
  ASSERT_EQ(root.items.size(), 4u);
  const auto& list = u.objects[root.items[1]];
  ASSERT_EQ(list.kind, pickle::Kind::List);
  ASSERT_EQ(list.items.size(), 9u);
  EXPECT_EQ(u.objects[list.items[0]].i, 1);
  EXPECT_EQ(u.objects[list.items[1]].i, -2);
  EXPECT_EQ(u.objects[list.items[2]].f, 3.5);
  EXPECT_EQ(u.objects[list.items[3]].kind, pickle::Kind::Bool);
  EXPECT_EQ(u.objects[list.items[4]].kind, pickle::Kind::None);
  EXPECT_EQ(u.objects[list.items[5]].s, "s");
  EXPECT_EQ(u.objects[list.items[6]].s, "\x00\xff"_b);
  EXPECT_EQ(u.objects[list.items[7]].i, int64_t(1) << 40);
  EXPECT_EQ(u.objects[list.items[8]].i, -(int64_t(1) << 40));
  EXPECT_EQ(u.objects[root.items[3]].kind, pickle::Kind::Tuple);
  EXPECT_EQ(u.end, p.size());
  EXPECT_TRUE(pickle::flatten_tensors(u, "x").empty());
}

TEST(Pickle, MalformedStreamsAreErrors) {
  EXPECT_VIDAX_ERROR(run(""), "without a STOP");
  EXPECT_VIDAX_ERROR(run("\x80\x02"), "without a STOP");
  EXPECT_VIDAX_ERROR(run("\x80\x09N."), "unsupported pickle protocol 9");
  EXPECT_VIDAX_ERROR(run("\x80\x02."), "empty stack");
  EXPECT_VIDAX_ERROR(run("\x80\x02" "a."), "stack underflow");
  EXPECT_VIDAX_ERROR(run("\x80\x02h\x05."), "memo key 5 was never stored");
  EXPECT_VIDAX_ERROR(run("\x80\x02X\xff\xff\xff\x7f."), "runs past the end");
  EXPECT_VIDAX_ERROR(run("\x80\x02Ne."), "no MARK");
  EXPECT_VIDAX_ERROR(run("\x80\x02NNNs."), "SETITEM on a None");
  EXPECT_VIDAX_ERROR(run("\x80\x02\x8a\x09\1\1\1\1\1\1\1\1\1."), "does not fit in 64 bits");
  EXPECT_VIDAX_ERROR(run("\x80\x02\xff."), "unsupported pickle opcode 0xff");
  EXPECT_VIDAX_ERROR(run("\x80\x02(N(N1u."), "odd number");
  // persistent ids other than torch's storage tuple
  EXPECT_VIDAX_ERROR(run("\x80\x02NQ."), "persistent id");
  EXPECT_VIDAX_ERROR(run(std::string("\x80\x02(") + binunicode("storage") + "ctorch\nSize\n" + binunicode("0") +
                         binunicode("cpu") + "K\x01tQ."),
                     "'torch.Size' is not a storage type");
}

TEST(Pickle, AmplificationThroughTheMemoIsBounded) {
  // s = "x" * 100000 memoized once, then _codecs.encode(s) 100000 times: 10 GB of copies from 1 MB.
  std::string p = std::string("\x80\x02") + "c_codecs\nencode\nq\x01" + binunicode(std::string(100000, 'x')) + "q\x02" + "0" + "0";
  for (int i = 0; i < 100000; ++i) p += "h\x01h\x02\x85R0";
  p += "N.";
  EXPECT_VIDAX_ERROR(run(p), "too much copying");
}

TEST(Pickle, CyclesAndDeepNestingDoNotCrash) {
  // l = []; l.append(l)
  EXPECT_VIDAX_ERROR(pickle::flatten_tensors(run("\x80\x02]q\x00h\x00" "a."_b), "cyc"), "nested deeper");
  std::string deep = "\x80\x02";
  for (int i = 0; i < 100000; ++i) deep += "]";
  for (int i = 0; i < 99999; ++i) deep += "a";
  deep += ".";
  pickle::Unpickled u = run(deep);
  EXPECT_VIDAX_ERROR(pickle::flatten_tensors(u, "deep"), "nested deeper");
}

// A state dict {"w": tensor} whose tensor is described by the given storage
// numel, offset, size and stride.
std::string one_tensor(int numel, int offset, const std::string& size, const std::string& stride) {
  return std::string("\x80\x02}") + binunicode("w") + "ctorch._utils\n_rebuild_tensor_v2\n((" + binunicode("storage") +
         "ctorch\nFloatStorage\n" + binunicode("0") + binunicode("cpu") + "K" + char(numel) + "tQK" + char(offset) +
         size + stride + "\x89" + "ccollections\nOrderedDict\n)Rt" + "Rs.";
}

TEST(Pickle, RebuildTensorV1AndParameter) {
  // _rebuild_tensor(storage, offset, size, stride), wrapped in _rebuild_parameter(data, requires_grad, hooks)
  const std::string p = std::string("\x80\x02}") + binunicode("p") + "ctorch._utils\n_rebuild_parameter\n(" +
                        "ctorch._utils\n_rebuild_tensor\n((" + binunicode("storage") + "ctorch\nHalfStorage\n" +
                        binunicode("7") + binunicode("cuda:0") + "K\x05tQ" + "K\x01" + "K\x02K\x02\x86" +
                        "K\x01K\x02\x86" + "tR" + "\x88" + "ccollections\nOrderedDict\n)R" + "tR" + "s.";
  pickle::Unpickled u = run(p);
  auto flat = pickle::flatten_tensors(u, "x");
  ASSERT_EQ(flat.size(), 1u);
  const pickle::TensorRef& t = u.tensors[flat[0].second];
  EXPECT_EQ(flat[0].first, "p");
  EXPECT_EQ(t.dtype, DType::F16);
  EXPECT_EQ(t.offset, 1);
  EXPECT_EQ(t.shape, (Shape{2, 2}));
  EXPECT_EQ(t.strides, (Strides{1, 2}));
  EXPECT_EQ(u.storages[t.storage].key, "7");
  EXPECT_EQ(u.storages[t.storage].nbytes, 10u);
}

TEST(Pickle, TensorViewsMustFitTheirStorage) {
  pickle::Unpickled ok = run(one_tensor(6, 0, "K\x02K\x03\x86", "K\x03K\x01\x86"));
  ASSERT_EQ(ok.tensors.size(), 1u);
  EXPECT_EQ(ok.tensors[0].shape, (Shape{2, 3}));
  EXPECT_EQ(ok.storages[0].nbytes, 24u);
  auto flat = pickle::flatten_tensors(ok, "x");
  ASSERT_EQ(flat.size(), 1u);
  EXPECT_EQ(flat[0].first, "w");
  // transposed view of the same storage: fine
  EXPECT_NO_THROW(run(one_tensor(6, 0, "K\x03K\x02\x86", "K\x01K\x03\x86")));
  EXPECT_VIDAX_ERROR(run(one_tensor(6, 1, "K\x02K\x03\x86", "K\x03K\x01\x86")), "reaches byte 28 of storage '0'",
                     "holds 24");
  EXPECT_VIDAX_ERROR(run(one_tensor(6, 0, "K\x02K\x03\x86", "K\x04K\x01\x86")), "reaches byte 28");
  EXPECT_VIDAX_ERROR(run(one_tensor(6, 0, "K\x02K\x03\x86", "K\x03\x85")), "different ranks");
  EXPECT_VIDAX_ERROR(run(one_tensor(6, 0, "K\x02J\xff\xff\xff\xff\x86", "K\x03K\x01\x86")), "negative");
  // Empty tensors need no bytes.
  EXPECT_NO_THROW(run(one_tensor(0, 0, "K\x00K\x03\x86"_b, "K\x03K\x01\x86")));
}

TEST(Pickle, EveryPrefixOfARealPickleIsAnError) {
  int err = 0;
  zip_t* z = zip_open((test::data_dir() + "/torch_fixture.pth").c_str(), ZIP_RDONLY, &err);
  ASSERT_NE(z, nullptr);
  zip_int64_t idx = zip_name_locate(z, "torch_fixture/data.pkl", 0);
  ASSERT_GE(idx, 0);
  zip_stat_t st;
  zip_stat_index(z, static_cast<zip_uint64_t>(idx), 0, &st);
  std::string pkl(st.size, '\0');
  zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(idx), 0);
  zip_fread(f, pkl.data(), st.size);
  zip_fclose(f);
  zip_discard(z);
  pickle::Unpickled full = run(pkl);
  EXPECT_EQ(pickle::flatten_tensors(full, "x").size(), 23u);
  for (size_t n = 0; n < pkl.size(); ++n) EXPECT_THROW(run(pkl.substr(0, n)), Error) << n;
}

}  // namespace
}  // namespace vidax::io
