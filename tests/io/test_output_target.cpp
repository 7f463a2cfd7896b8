// Output targets that a finished temporary file must not be renamed over (issue 16:
// `-o /dev/null` as root replaced /dev/null with a regular file). Every node here is
// a scratch one made by the test in its own folder, never a real /dev entry.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/output_target.h"
#include "io/video.h"
#include "io_test_util.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::io;
using test::TempDir;

namespace {

struct Node {
  std::string path;
  std::string kind;  // the words the message must use
  mode_t type;       // S_IFCHR, ...
};

// Scratch special files in dir: a character device with /dev/null's numbers (made
// only as root; skipped otherwise), a FIFO, a socket, a directory, a symlink to a
// regular file and a dangling one.
std::vector<Node> make_nodes(const TempDir& dir) {
  std::vector<Node> nodes;
  const std::string chr = dir.file("null-device");
  if (::mknod(chr.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) nodes.push_back({chr, "a character device", S_IFCHR});
  const std::string fifo = dir.file("fifo");
  EXPECT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  nodes.push_back({fifo, "a FIFO (named pipe)", S_IFIFO});
  const std::string sock = dir.file("sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (sock.size() < sizeof addr.sun_path) {
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) nodes.push_back({sock, "a socket", S_IFSOCK});
  }
  ::close(fd);
  fs::create_directory(dir.file("folder"));
  nodes.push_back({dir.file("folder"), "a directory", S_IFDIR});
  test::write_bytes(dir.file("real.bin"), "keep me");
  fs::create_symlink(dir.file("real.bin"), dir.file("link"));
  nodes.push_back({dir.file("link"), "a symbolic link", S_IFLNK});
  fs::create_symlink(dir.file("nowhere"), dir.file("dangling"));
  nodes.push_back({dir.file("dangling"), "a symbolic link", S_IFLNK});
  return nodes;
}

mode_t type_of(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p << " is gone";
  return st.st_mode & S_IFMT;
}

// Only the nodes themselves (and real.bin) are in dir: no temporary left behind.
void expect_no_leftovers(const TempDir& dir) {
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string n = e.path().filename().string();
    EXPECT_EQ(n.find(".partial-"), std::string::npos) << n;
    EXPECT_EQ(n.find(".tmp-"), std::string::npos) << n;
  }
}

void expect_refused(const std::function<void()>& f, const Node& n, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << " onto " << n.kind << " was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(n.path), std::string::npos) << m;
    EXPECT_NE(m.find(n.kind), std::string::npos) << m;
  }
  EXPECT_EQ(type_of(n.path), n.type) << what << " replaced " << n.path;
}

}  // namespace

TEST(OutputTarget, SpecialFilesAndLinksAreRefusedAndLeftAlone) {
  TempDir dir;
  const std::vector<Node> nodes = make_nodes(dir);
  if (::geteuid() == 0) {
    EXPECT_EQ(nodes.front().type, static_cast<mode_t>(S_IFCHR)) << "mknod as root failed";
  }
  const Tensor t = Tensor::from_f32({1, 2, 3}, {3});
  RgbVideo video;
  video.frames = 1;
  video.height = video.width = 16;
  video.rgb.assign(video.frame_bytes(), 100);
  for (const Node& n : nodes) {
    expect_refused([&] { check_output_target(n.path); }, n, "check_output_target");
    expect_refused([&] { save_safetensors(n.path, {{"t", t}}); }, n, "save_safetensors");
    expect_refused([&] { PendingOutput p(n.path); }, n, "PendingOutput");
    expect_refused([&] { write_video(n.path, VideoFormat::Y4m, video, {}); }, n, "y4m");
    if (n.type != S_IFDIR) expect_refused([&] { write_video(n.path, VideoFormat::Mp4, video, {}); }, n, "mp4");
  }
  EXPECT_EQ(test::read_bytes(dir.file("real.bin")), "keep me");  // the link's target is untouched
  EXPECT_FALSE(fs::exists(dir.file("nowhere")));               // nothing written through the dangling link
  expect_no_leftovers(dir);
}

TEST(OutputTarget, RegularFilesAndMissingPathsAreFine) {
  TempDir dir;
  EXPECT_NO_THROW(check_output_target(dir.file("new.safetensors")));
  test::write_bytes(dir.file("old.safetensors"), "old");
  save_safetensors(dir.file("old.safetensors"), {{"t", Tensor::from_f32({1, 2}, {2})}});  // replaced, as before
  EXPECT_EQ(Checkpoint::open(dir.file("old.safetensors")).get("t").to_f32_vector(), (std::vector<float>{1, 2}));
  // A folder of png frames may land where an (empty) folder is, not on a file.
  fs::create_directory(dir.file("frames"));
  EXPECT_NO_THROW(check_output_target(dir.file("frames"), OutputKind::Directory));
  EXPECT_THROW(check_output_target(dir.file("old.safetensors"), OutputKind::Directory), Error);
}

TEST(OutputTarget, ANodeThatAppearsWhileWritingIsRefusedAtTheRename) {
  TempDir dir;
  const std::string out = dir.file("late.y4m");
  {
    PendingOutput p(out);
    test::write_bytes(p.temp_path(), "data");
    ASSERT_EQ(::mkfifo(out.c_str(), 0644), 0);
    EXPECT_THROW(p.commit(), Error);
  }
  EXPECT_EQ(type_of(out), static_cast<mode_t>(S_IFIFO));
  expect_no_leftovers(dir);
}
