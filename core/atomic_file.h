// Writing a file whole or not at all: the text goes to a temporary file created
// exclusively (O_EXCL, a random name, never through a symlink) in the destination's
// folder, is flushed, and is renamed over the destination. A reader sees the old file
// or the new one, never half of one; a symlink planted at a guessable temporary name
// cannot redirect the write; and a failed write leaves no temporary file behind.
#pragma once

#include <string>

namespace pto {

// Creates the destination's folder when missing. Io Error naming the path (and `what`
// the file is, e.g. "coefficients file") when any step fails.
void write_file_atomically(const std::string& path, const std::string& text, const std::string& what);

// A file the user named (a trace, a report, an export): what is there decides how it is
// written. A regular file (or none) is replaced atomically as above; a symlink stays, what
// it points to written by these rules; a character device (/dev/null) or a FIFO with a
// reader is written through, never replaced; a folder, socket, block device or a FIFO
// nobody reads is an Io Error. (The files pto-tune keeps itself, such as calibrations,
// use write_file_atomically: a link planted there is replaced, not followed.)
void write_output_file(const std::string& path, const std::string& text, const std::string& what);

}  // namespace pto
