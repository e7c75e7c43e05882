// write_output_file: a regular file is replaced whole; a symlink stays a link and its
// target gets the text; /dev/null and a FIFO with a reader are written through, never
// replaced; a folder, a FIFO nobody reads, a link that loops or a path that cannot be
// written as named is a usage Error (exit 2: the path is the user's to fix; it was an
// Io Error, exit 1, until scripts/probe_hostile.py said so) that changes nothing.
#include "core/atomic_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/core/error_testing.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t entries(const fs::path& folder) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

TEST(AtomicFile, ReplacesARegularFileAndFollowsASymlinkToIt) {
  const testing::TempDir dir("atomic_regular");
  const fs::path file = dir.path() / "out.json", link = dir.path() / "link.json";
  write_file_atomically(file.string(), "one", "a test file");
  fs::create_symlink(file, link);
  write_output_file(link.string(), "two", "a test file");
  EXPECT_TRUE(fs::is_symlink(link)) << "the link stays a link";
  EXPECT_EQ(read(file), "two");
  EXPECT_EQ(entries(dir.path()), 2u) << "no temporary file left";
}

TEST(AtomicFile, WritesThroughDevicesAndReadFifosWithoutReplacingThem) {
  write_output_file("/dev/null", "discarded", "a trace");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));

  const testing::TempDir dir("atomic_fifo");
  const fs::path fifo = dir.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  pto::testing::expect_error([&] { write_output_file(fifo.string(), "lost", "a trace"); }, ErrorCategory::Usage,
                             {"pipe", "a FIFO that nothing reads"});
  auto reader = std::async(std::launch::async, [&] { return read(fifo); });
  // The reader opens the FIFO; retry until it has (open for writing needs a reader).
  for (int attempt = 0;; ++attempt) {
    try {
      write_output_file(fifo.string(), "through", "a trace");
      break;
    } catch (const Error&) {
      ASSERT_LT(attempt, 1000);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  EXPECT_EQ(reader.get(), "through");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(AtomicFile, AFolderIsRefusedAndLeftAlone) {
  const testing::TempDir dir("atomic_folder");
  const fs::path folder = dir.path() / "results";
  fs::create_directory(folder);
  pto::testing::expect_error([&] { write_output_file(folder.string(), "x", "a report"); }, ErrorCategory::Usage,
                             {"a report", "results", "not a regular file"});
  EXPECT_TRUE(fs::is_directory(folder));
  EXPECT_EQ(entries(dir.path()), 1u);
}

// A link that loops was replaced by a regular file (exit 0); a name too long, or a file
// where a folder should be, were Io Errors (exit 1).
TEST(AtomicFile, PathsThatCannotBeWrittenAsNamedAreUsageErrorsAndChangeNothing) {
  const testing::TempDir dir("atomic_bad_paths");
  const fs::path loop = dir.path() / "loop";
  fs::create_symlink("loop", loop);
  pto::testing::expect_error([&] { write_output_file(loop.string(), "x", "a trace"); }, ErrorCategory::Usage,
                             {"a trace", "loop", "symbolic links"});
  EXPECT_TRUE(fs::is_symlink(loop));
  const std::string plain = dir.write("plain", "mine");
  pto::testing::expect_error([&] { write_output_file(plain + "/out", "x", "the export file"); }, ErrorCategory::Usage,
                             {"plain/out", "Not a directory"});
  pto::testing::expect_error([&] { write_output_file((dir.path() / std::string(300, 'n')).string(), "x", "the report"); },
                             ErrorCategory::Usage, {"File name too long"});
  EXPECT_EQ(read(plain), "mine");
  EXPECT_EQ(entries(dir.path()), 2u);
}

}  // namespace
}  // namespace pto
