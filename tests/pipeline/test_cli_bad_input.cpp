// Bad input through the built `vidax` binary (issue 16): NaN weights must stop
// `generate` with the per-step NaN error and no video, and `-o` onto something that
// is not a regular file (a device, FIFO, symlink; the sidecar's path too) must be
// refused with the node left as it was, for `generate` and `convert`. Every special
// file is a scratch one made here, never a real /dev node.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "cli_child.h"
#include "scratch.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {

using namespace vidax::test::cli;
const std::string kSpiece = tiny_spiece();

const fs::path& work_dir() {
  static fs::path d = vidax::test::scratch_dir("cli_bad_input");
  return d;
}

std::string demo_weights() {
  static std::string dir = [] {
    const std::string d = (work_dir() / "demo").string();
    CmdResult r = run({"make-demo", d, "--tokenizer", kSpiece});
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

std::vector<std::string> small(const std::string& weights, const std::string& out) {
  return {"generate", "--weights", weights, "--prompt", "a red panda", "--frames", "5", "--height", "32",
          "--width", "48", "--steps", "2", "--seed", "42", "-o", out};
}

mode_t type_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p << " is gone";
  return st.st_mode & S_IFMT;
}

}  // namespace

TEST(CliBadInput, NanInADitQWeightStopsGenerateWithTheStepError) {
  // Issue 16: the CPU attention turned the NaN scores into zero attention, so this
  // gave a plausible MP4 and exit 0.
  const fs::path dir = work_dir() / "nan-weights";
  fs::create_directories(dir);
  fs::copy(demo_weights(), dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  const std::string dit = (dir / "diffusion_pytorch_model.safetensors").string();
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta;
  {
    const io::Checkpoint ck = io::Checkpoint::open(dit);
    for (const auto& n : ck.names()) tensors[n] = ck.get(n).clone();
    meta = ck.metadata();
  }
  Tensor& q = tensors.at("blocks.0.self_attn.q.weight");
  ASSERT_EQ(q.dtype(), DType::F32);
  q.data<float>()[7] = std::nanf("");
  io::save_safetensors(dit, tensors, meta);

  const fs::path out = work_dir() / "nan.mp4";
  CmdResult r = run(small(dir.string(), out.string()));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("contains NaN or Inf at denoising step 1/2"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("denoising: "), std::string::npos) << "a failed run reported its steps done:\n" << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".json"));
  EXPECT_FALSE(has_partial(work_dir()));
}

TEST(CliBadInput, GenerateAndConvertRefuseSpecialOutputs) {
  const fs::path d = work_dir() / "special";
  fs::create_directories(d);
  struct Target {
    fs::path path;
    mode_t type;
    std::string words;
  };
  std::vector<Target> targets;
  // /dev/null's numbers on a scratch node: as root, the rename would have replaced it.
  if (::mknod((d / "null.mp4").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
    targets.push_back({d / "null.mp4", S_IFCHR, "exists and is a character device, not a regular file"});
  else
    EXPECT_NE(::geteuid(), 0u) << "mknod failed as root";
  ASSERT_EQ(::mkfifo((d / "pipe.y4m").c_str(), 0644), 0);
  targets.push_back({d / "pipe.y4m", S_IFIFO, "exists and is a FIFO (named pipe), not a regular file"});
  fs::create_symlink(d / "elsewhere.mp4", d / "link.mp4");
  targets.push_back({d / "link.mp4", S_IFLNK, "is a symbolic link"});
  for (const Target& t : targets) {
    CmdResult r = run(small(demo_weights(), t.path.string()));
    EXPECT_EQ(r.code, 1) << t.path << "\n" << r.err;
    EXPECT_NE(r.err.find("output " + t.path.string() + " " + t.words), std::string::npos) << r.err;
    EXPECT_EQ(type_of(t.path), t.type) << t.path << " was replaced";
    EXPECT_FALSE(fs::exists(t.path.string() + ".json")) << "the sidecar was written without its video";
    EXPECT_EQ(r.err.find("loading"), std::string::npos) << "refused only after loading:\n" << r.err;

    CmdResult c = run({"convert", demo_weights() + "/diffusion_pytorch_model.safetensors", t.path.string()});
    EXPECT_EQ(c.code, 1) << c.err;
    EXPECT_NE(c.err.find("output " + t.path.string() + " " + t.words), std::string::npos) << c.err;
    EXPECT_EQ(type_of(t.path), t.type) << "convert replaced " << t.path;
  }
  EXPECT_FALSE(fs::exists(d / "elsewhere.mp4"));  // nothing written through the link

  // The sidecar's path is checked before the video is written: neither appears.
  ASSERT_EQ(::mkfifo((d / "v.mp4.json").c_str(), 0644), 0);
  CmdResult r = run(small(demo_weights(), (d / "v.mp4").string()));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("output " + (d / "v.mp4.json").string() + " exists and is a FIFO"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "v.mp4"));
  EXPECT_EQ(type_of(d / "v.mp4.json"), static_cast<mode_t>(S_IFIFO));
  EXPECT_FALSE(has_partial(d));
}
