#include "core/json_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/warning.h"

namespace pto::json_read {

namespace {

constexpr size_t kMaxShown = 60;

// Appends `value` to `out` as JSON until `out` holds more than kMaxShown characters:
// containers are walked only as far as what is shown, and a long string is cut
// before it is escaped, so the cost is bounded whatever the value.
void show_into(const json& value, std::string& out) {
  if (out.size() > kMaxShown) return;
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    // `replace` keeps a message printable even for strings that are not valid UTF-8.
    out += json(s.substr(0, kMaxShown + 1)).dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  if (!value.is_structured()) {
    out += value.dump();
    return;
  }
  const bool object = value.is_object();
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = value.begin(); it != value.end() && out.size() <= kMaxShown; ++it) {
    if (!first) out += ',';
    first = false;
    if (object) {
      show_into(json(it.key()), out);
      out += ':';
    }
    show_into(*it, out);
  }
  out += object ? '}' : ']';
}

}  // namespace

std::string show(const json& value) {
  std::string text;
  show_into(value, text);
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown - 3) + "...";
  return text;
}

void bad_value(const std::string& path, std::string_view expected, const json& got) {
  usage_error(path + ": expected " + std::string(expected) + ", got " + show(got));
}

int64_t integer(const json& value, const std::string& path, int64_t min, int64_t max,
                std::string_view expected) {
  if (!value.is_number_integer()) bad_value(path, expected, value);
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    bad_value(path, expected, value);
  }
  const int64_t v = value.get<int64_t>();
  if (v < min || v > max) bad_value(path, expected, value);
  return v;
}

double positive_number(const json& value, const std::string& path, bool allow_zero) {
  const char* expected = allow_zero ? "a non-negative number" : "a positive number";
  if (!value.is_number()) bad_value(path, expected, value);
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < 0 || (v == 0 && !allow_zero)) bad_value(path, expected, value);
  return v;
}

bool boolean(const json& value, const std::string& path) {
  if (!value.is_boolean()) bad_value(path, "true or false", value);
  return value.get<bool>();
}

std::string string(const json& value, const std::string& path) {
  if (!value.is_string()) bad_value(path, "a string", value);
  return value.get<std::string>();
}

const json& object(const json& value, const std::string& path) {
  if (!value.is_object()) bad_value(path.empty() ? "config" : path, "an object", value);
  return value;
}

const json& array(const json& value, const std::string& path, size_t min_size, size_t max_size) {
  std::string expected = "an array of ";
  if (min_size == max_size) {
    expected += std::to_string(min_size);
  } else if (max_size == std::numeric_limits<size_t>::max()) {
    expected += "at least " + std::to_string(min_size);
  } else {
    expected += std::to_string(min_size) + " to " + std::to_string(max_size);
  }
  expected += (max_size == 1 ? " element" : " elements");
  if (!value.is_array() || value.size() < min_size || value.size() > max_size) {
    bad_value(path, expected, value);
  }
  return value;
}

void reject_unknown_keys(const json& obj, const std::string& path,
                         const std::vector<std::string_view>& known) {
  for (const auto& [key, unused] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    usage_error((path.empty() ? std::string("config") : path) + ": unknown key " +
                show(json(key)) + " (known keys: " + list + ")");
  }
}

std::string member_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string index_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

namespace {

// Watches the parser's events: stops a document nested deeper than kMaxDepth before
// it is built, and notes keys that appear twice in one object.
class ParseGuard {
 public:
  struct TooDeep {};

  bool operator()(int depth, json::parse_event_t event, json& parsed) {
    using Event = json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (depth >= kMaxDepth) throw TooDeep{};
        open_.push_back(event == Event::object_start ? std::optional<std::set<std::string>>(std::in_place)
                                                     : std::nullopt);
        break;
      case Event::object_end:
      case Event::array_end:
        if (!open_.empty()) open_.pop_back();
        break;
      case Event::key:
        if (!open_.empty() && open_.back() && !open_.back()->insert(parsed.get<std::string>()).second &&
            duplicates_.size() < 3) {
          duplicates_.push_back(show(parsed));
        }
        break;
      case Event::value:
        break;
    }
    return true;
  }

  const std::vector<std::string>& duplicates() const { return duplicates_; }

 private:
  std::vector<std::optional<std::set<std::string>>> open_;  // one per open container
  std::vector<std::string> duplicates_;
};

}  // namespace

json parse(const std::string& text, std::string_view what) {
  ParseGuard guard;
  try {
    json j = json::parse(text, std::ref(guard));
    for (const std::string& key : guard.duplicates()) {
      warn(std::string(what) + ": key " + key + " is given more than once in one object; the last one is used");
    }
    return j;
  } catch (const ParseGuard::TooDeep&) {
    usage_error(std::string(what) + " is not valid input: JSON nested deeper than " +
                std::to_string(kMaxDepth) + " levels");
  } catch (const json::exception& e) {  // parse errors, and numbers too large for a double
    // Drop the library's "[json.exception.parse_error.101] " tag; keep where and why.
    std::string why = e.what();
    if (const size_t tag_end = why.find("] "); why.starts_with("[json.exception") && tag_end != std::string::npos) {
      why = why.substr(tag_end + 2);
    }
    usage_error(std::string(what) + " is not valid JSON: " + why);
  }
}

namespace {

// Opens `path` for reading without waiting for a writer: open(2) of a FIFO blocks until
// one comes (a FIFO nobody writes would hang the command), but with O_NONBLOCK it
// returns at once, and a read then sees end of file when no writer is there. Reads are
// blocking again after the open, so a pipe with a writer (`batch /dev/stdin`) is read
// whole. A file descriptor closed when the reader goes.
class ReadFd {
 public:
  ReadFd(const std::string& path, const std::string& named) : fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
    if (fd_ < 0) usage_error("cannot read " + named + ": " + std::strerror(errno));
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  }
  ~ReadFd() { ::close(fd_); }
  ReadFd(const ReadFd&) = delete;
  ReadFd& operator=(const ReadFd&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string read_text_file(const std::string& path, std::string_view what, size_t max_bytes) {
  const std::string named = std::string(what) + " '" + path + "'";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) usage_error("cannot read " + named + ": no such file");
  // A directory opens fine on Linux and then reads nothing.
  if (std::filesystem::is_directory(path, ec)) usage_error("cannot read " + named + ": it is a folder");
  const ReadFd in(path, named);
  // Read in chunks, stopping past the cap, so that /dev/zero or a huge file stops here.
  std::string text;
  std::array<char, 1 << 16> chunk;
  for (;;) {
    const ssize_t n = ::read(in.fd(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(ErrorCategory::Io, "cannot read " + named + ": " + std::strerror(errno));
    if (n == 0) break;
    text.append(chunk.data(), static_cast<size_t>(n));
    if (text.size() > max_bytes)
      usage_error(named + " is larger than " + std::to_string(max_bytes >> 20) + " MiB, the most pto-tune reads");
  }
  if (text.empty()) usage_error(named + " is empty");
  return text;
}

}  // namespace pto::json_read
