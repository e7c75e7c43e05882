// Writing a file whole or not at all: the text goes to a temporary file created
// exclusively (O_EXCL, a random name, never through a symlink) in the destination's
// folder, is flushed, and is renamed over the destination. A reader sees the old file
// or the new one, never half of one; a symlink planted at a guessable temporary name
// cannot redirect the write; and a failed write leaves no temporary file behind.
#pragma once

#include <string>

namespace pto {

// Creates the destination's folder when missing. An Error naming the path (and `what`
// the file is, e.g. "coefficients file") when any step fails: Usage when the path cannot
// be written as named (a folder, a file where a folder should be, a name too long, no
// permission), Io when the write itself fails (a full or failing disk).
void write_file_atomically(const std::string& path, const std::string& text, const std::string& what);

// A file the user named (a trace, a report, an export): what is there decides how it is
// written. A regular file (or none) is replaced atomically as above; a symlink stays, what
// it points to written by these rules; a character device (/dev/null) or a FIFO with a
// reader is written through, never replaced; a folder, socket, block device, a FIFO
// nobody reads or a link that loops is a usage Error, as is a path that cannot be written. (The files pto-tune keeps itself, such as calibrations,
// use write_file_atomically: a link planted there is replaced, not followed.)
void write_output_file(const std::string& path, const std::string& text, const std::string& what);

// Usage Error when `output` is the file `input` is (the same path, a link to it, a hard
// link): written there, the output would destroy what the command reads, e.g. an export
// or a report of a tuning database written onto that database. `input_what` names the
// input in the message ("the database").
void refuse_output_onto_input(const std::string& output, const std::string& input, const std::string& what,
                              const std::string& input_what);

}  // namespace pto
