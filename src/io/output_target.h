// What an output path may be before a finished temporary file (or folder) is
// renamed over it. rename(2) replaces whatever directory entry holds the name:
// renaming over /dev/null, a FIFO or a socket replaces that node with a plain
// file (as root, /dev/null is gone), and renaming over a symbolic link replaces
// the link, never writing where it points. So an existing target must be of the
// kind the writer produces, and never a link.
#pragma once
#include <string>

namespace vidax::io {

enum class OutputKind { File, Directory };

// Throws vidax::Error naming `path` and what it is when it exists and is a
// symbolic link or not of `kind` (a device, FIFO, socket; a directory where a
// file is written, or a file where a folder is). A path that does not exist
// passes. Writers call it before they start (a refusal costs no work) and again
// just before the rename (the window between the two is what is left).
void check_output_target(const std::string& path, OutputKind kind = OutputKind::File);

// What an input path is when it cannot be read as a file, following links: ""
// for a regular file or a path that does not exist, else "a directory", "a FIFO
// (named pipe)", "a character device" (/dev/zero reads forever), "a socket", or
// the OS's words for a link that cannot be followed ("a symbolic link that cannot
// be followed: Too many levels of symbolic links"). Readers call it before
// open(2): a FIFO blocks there, a device never ends.
std::string input_file_problem(const std::string& path);

}  // namespace vidax::io
