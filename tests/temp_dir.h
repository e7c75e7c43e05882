// A fresh temporary folder for one test, removed when it goes out of scope — also
// when an assertion ends the test early. Named with the process id so that tests
// running in parallel (ctest -j) never share one.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace pto::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() / ("pto_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // Writes `text` to path()/name and returns that file's path.
  std::string write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace pto::testing
