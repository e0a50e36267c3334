#include "util/system_files.hpp"

#include <cctype>
#include <charconv>
#include <fstream>

namespace idem::util {

namespace {

// Lines of /etc files are short; a longer one is skipped whole, and reading stops after
// k_max_lines, so a huge or endless file (a FIFO, /dev/zero bound over it) costs bounded time.
constexpr size_t k_max_line = 64 * 1024;
constexpr size_t k_max_lines = 1'000'000;

// Calls `each(line)` for every line of `path` until it returns true; false when none did.
template <typename Each>
bool for_each_line(const std::string& path, Each each) {
  std::ifstream in(path);
  std::string line;
  for (size_t n = 0; n < k_max_lines && in; ++n) {
    line.clear();
    char c;
    bool too_long = false;
    while (in.get(c) && c != '\n')
      if (line.size() < k_max_line)
        line.push_back(c);
      else
        too_long = true;
    if (!too_long && each(std::string_view(line))) return true;
  }
  return false;
}

// The next whitespace-separated field of `rest`, taken off its front.
std::string_view next_field(std::string_view& rest) {
  size_t start = 0;
  while (start < rest.size() && std::isspace(static_cast<unsigned char>(rest[start]))) ++start;
  size_t end = start;
  while (end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[end]))) ++end;
  std::string_view field = rest.substr(start, end - start);
  rest.remove_prefix(end);
  return field;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

std::optional<std::string> passwd_home(uid_t uid, const std::string& path) {
  std::optional<std::string> home;
  for_each_line(path, [&](std::string_view line) {
    // name:password:UID:GID:gecos:home:shell
    std::string_view fields[7];
    size_t count = 0;
    while (count < 7) {
      const size_t colon = line.find(':');
      fields[count++] = line.substr(0, colon);
      if (colon == std::string_view::npos) break;
      line.remove_prefix(colon + 1);
    }
    if (count < 6) return false;
    uid_t found = 0;
    const std::string_view id = fields[2];
    auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), found);
    if (id.empty() || ec != std::errc() || end != id.data() + id.size() || found != uid)
      return false;
    if (!fields[5].empty() && fields[5].front() == '/') home = std::string(fields[5]);
    return true;  // the first entry of the uid decides, as getpwuid's
  });
  return home;
}

std::vector<std::string> hosts_addresses(std::string_view name, const std::string& path) {
  std::vector<std::string> addresses;
  if (name.empty()) return addresses;
  for_each_line(path, [&](std::string_view line) {
    line = line.substr(0, line.find('#'));
    const std::string_view address = next_field(line);
    for (std::string_view alias = next_field(line); !alias.empty(); alias = next_field(line))
      if (same_name(alias, name)) {
        addresses.emplace_back(address);
        break;
      }
    return false;
  });
  return addresses;
}

}  // namespace idem::util
