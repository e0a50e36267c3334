#include "store/sqlite/live_spool.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/errors.hpp"
#include "util/fd.hpp"
#include "util/sha256.hpp"

namespace idem::store::sqlite {

namespace {

constexpr std::string_view k_magic = "IDEMLIVE1\n";
constexpr size_t k_record_head = 20;  // offset, size, frames' length

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}

bool pread_all(int fd, char* into, size_t n, off_t at) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, into, n, at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    into += got;
    n -= size_t(got);
    at += got;
  }
  return true;
}

// The key a file names, and where its records begin; false for a torn or foreign header.
bool read_header(int fd, off_t size, std::string& key, off_t& records) {
  char head[14];
  if (size < off_t(sizeof head) || !pread_all(fd, head, sizeof head, 0) ||
      std::string_view(head, k_magic.size()) != k_magic)
    return false;
  const auto length = off_t(get_le(head + k_magic.size(), 4));
  if (off_t(sizeof head) + length > size) return false;
  key.resize(size_t(length));
  if (length > 0 && !pread_all(fd, key.data(), size_t(length), off_t(sizeof head))) return false;
  records = off_t(sizeof head) + length;
  return true;
}

// The folder, made 0700 if absent; refused unless it is a folder of this user's that others
// cannot write (never followed through a link).
void ensure_folder(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw StoreError("cannot make the live output folder " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 022) != 0)
    throw StoreError("the live output folder " + dir +
                     " is not a folder of this user's that only it can write; remove it");
}

}  // namespace

std::string LiveSpool::path_of(const std::string& key, int64_t attempt) const {
  return dir_ + "/" + util::sha256_hex(key).substr(0, 32) + "." + std::to_string(attempt);
}

void LiveSpool::append(const std::string& key, int64_t attempt, const core::LiveSegment& segment) {
  const std::string path = path_of(key, attempt);
  const int flags = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  util::Fd fd(::open(path.c_str(), flags, 0600));
  if (fd.get() < 0 && errno == ENOENT) {
    ensure_folder(dir_);
    fd = util::Fd(::open(path.c_str(), flags, 0600));
  }
  if (fd.get() < 0)
    throw StoreError("cannot open the live output file " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw StoreError("cannot read the live output file " + path + ": " + std::strerror(errno));
  // The header (and for a new file its name) and the frames, in one write: never a copy of the
  // frames.
  std::string head;
  if (st.st_size == 0) {
    head += k_magic;
    put_le(head, key.size(), 4);
    head += key;
  }
  put_le(head, uint64_t(segment.offset), 8);
  put_le(head, uint64_t(segment.size), 8);
  put_le(head, segment.frames.size(), 4);
  iovec parts[2] = {{head.data(), head.size()},
                    {const_cast<char*>(segment.frames.data()), segment.frames.size()}};
  size_t left = head.size() + segment.frames.size();
  int first = 0;
  while (left > 0) {
    const ssize_t n = ::writev(fd.get(), parts + first, 2 - first);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw StoreError("cannot write the live output file " + path + ": " + std::strerror(errno));
    left -= size_t(n);
    for (auto done = size_t(n); done > 0 && first < 2;) {
      const size_t take = std::min(done, parts[first].iov_len);
      parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + take;
      parts[first].iov_len -= take;
      done -= take;
      if (parts[first].iov_len == 0) ++first;
    }
  }
}

std::vector<core::LiveSegment> LiveSpool::read(const std::string& key, int64_t attempt,
                                               int64_t from, int64_t max_bytes) const {
  std::vector<core::LiveSegment> segments;
  const util::Fd fd(::open(path_of(key, attempt).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) return segments;
  std::string named;
  off_t at = 0;
  if (!read_header(fd.get(), st.st_size, named, at) || named != key) return segments;
  int64_t held = 0;
  char head[k_record_head];
  while (held < std::max<int64_t>(max_bytes, 1) && at + off_t(k_record_head) <= st.st_size &&
         pread_all(fd.get(), head, sizeof head, at)) {
    core::LiveSegment s;
    s.offset = int64_t(get_le(head, 8));
    s.size = int64_t(get_le(head + 8, 8));
    const auto length = off_t(get_le(head + 16, 4));
    const off_t body = at + off_t(k_record_head);
    if (body + length > st.st_size) break;  // still being written
    at = body + length;
    if (s.end() <= from) continue;
    s.frames.resize(size_t(length));
    if (length > 0 && !pread_all(fd.get(), s.frames.data(), size_t(length), body)) break;
    held += int64_t(length);
    segments.push_back(std::move(s));
  }
  return segments;
}

void LiveSpool::remove(const std::string& key, int64_t attempt) const {
  ::unlink(path_of(key, attempt).c_str());
}

void LiveSpool::remove_file(const std::string& path) { ::unlink(path.c_str()); }

std::vector<LiveSpool::File> LiveSpool::files(size_t limit) const {
  std::vector<File> found;
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return found;
  while (found.size() < limit) {
    const dirent* e = ::readdir(dir);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    const size_t dot = name.find('.');
    if (name == "." || name == ".." || dot == std::string::npos) continue;
    File f;
    f.path = dir_ + "/" + name;
    f.attempt = std::atoll(name.c_str() + dot + 1);
    const util::Fd fd(::open(f.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    off_t records = 0;
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 ||
        !read_header(fd.get(), st.st_size, f.key, records))
      f.key.clear();
    found.push_back(std::move(f));
  }
  ::closedir(dir);
  return found;
}

}  // namespace idem::store::sqlite
