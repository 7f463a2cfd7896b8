#include "io/output_target.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace vidax::io {

namespace {

// What the node is, in the user's words.
const char* node_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "a special file";
}

}  // namespace

std::string input_file_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      struct stat lst {};
      if (::lstat(path.c_str(), &lst) == 0) return "a symbolic link to nothing (dangling)";
      return "";
    }
    return std::string("a path that cannot be followed: ") + std::strerror(err);
  }
  if (S_ISREG(st.st_mode)) return "";
  return node_kind(st.st_mode);
}

void check_output_target(const std::string& path, OutputKind kind) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    // ENOENT: nothing there yet (the usual case). Anything else (a component that
    // is not a directory, no permission) the writer reports when it creates its file.
    return;
  }
  const bool want_dir = kind == OutputKind::Directory;
  const bool fits = want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
  if (fits) return;
  if (S_ISLNK(st.st_mode))
    throw Error(msg() << "output " << path << " is a symbolic link; vidax writes a new "
                      << (want_dir ? "folder" : "file")
                      << " and renames it into place, which would replace the link instead of writing where it "
                         "points: give the link's target path, or another path");
  throw Error(msg() << "output " << path << " exists and is " << node_kind(st.st_mode) << ", not "
                    << (want_dir ? "a directory" : "a regular file") << "; vidax writes a new "
                    << (want_dir ? "folder" : "file")
                    << " and renames it into place, which would replace it: choose another path");
}

}  // namespace vidax::io
