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

// A file of the folder as this user's own: a regular file (never a link: O_NOFOLLOW; never a
// fifo: O_NONBLOCK), with one name, of this user's. Anything else was planted.
void check_file(int fd, const std::string& what, struct stat& st) {
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1)
    throw StoreError("the live output file " + what +
                     " is not a file of this user's alone; remove it");
}

// A spool file's name: 32 hex digits, '.', the attempt.
bool spool_name(std::string_view name) {
  const size_t dot = name.find('.');
  if (dot != 32 || name.size() == dot + 1) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = i < dot ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
                            : i == dot || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string LiveSpool::name_of(const std::string& key, int64_t attempt) {
  return util::sha256_hex(key).substr(0, 32) + "." + std::to_string(attempt);
}

util::Fd LiveSpool::folder(bool create) const {
  if (create && ::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    throw StoreError("cannot make the live output folder " + dir_ + ": " + std::strerror(errno));
  util::Fd fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0 && errno == ENOENT && !create) return fd;
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    throw StoreError("the live output folder " + dir_ +
                     " is not a folder (no link) of this user's that only it can use; remove it");
  return fd;
}

void LiveSpool::append(const std::string& key, int64_t attempt, const core::LiveSegment& segment) {
  const util::Fd dir = folder(true);
  const std::string name = name_of(key, attempt);
  // An attempt's first segment starts its file anew: one an earlier attempt of the same number
  // left (a crash, then rm) is never read as this one's.
  const int flags = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                    (segment.offset == 0 ? O_TRUNC : 0);
  const util::Fd fd(::openat(dir.get(), name.c_str(), flags, 0600));
  const std::string path = dir_ + "/" + name;
  if (fd.get() < 0)
    throw StoreError("cannot open the live output file " + path + ": " + std::strerror(errno));
  struct stat st {};
  check_file(fd.get(), path, st);
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

size_t LiveSpool::read(const std::string& key, int64_t attempt, int64_t from, int64_t max_bytes,
                       std::vector<core::LiveSegment>& into) {
  size_t count = 0;  // segments of `into` filled
  const util::Fd dir = folder(false);
  if (dir.get() < 0) return 0;
  const std::string name = name_of(key, attempt);
  const util::Fd fd(
      ::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return 0;
  struct stat st {};
  check_file(fd.get(), dir_ + "/" + name, st);
  std::string named;
  off_t at = 0;
  if (!read_header(fd.get(), st.st_size, named, at) || named != key) return 0;
  int64_t next = 0;  // where the next record must begin, at least
  char head[k_record_head];
  // Going on from the last read: its next record, once there, must begin where it said (a file
  // started anew, or another key's, never does).
  Resume last;
  {
    const std::lock_guard lock(resume_mutex_);
    last = resume_;
  }
  if (last.name == name && last.inode == st.st_ino && from >= last.next && last.at >= at &&
      (last.at == st.st_size || (last.at + off_t(k_record_head) <= st.st_size &&
                                 pread_all(fd.get(), head, sizeof head, last.at) &&
                                 int64_t(get_le(head, 8)) == last.next))) {
    at = last.at;
    next = last.next;
  }
  int64_t held = 0;
  while (held < std::max<int64_t>(max_bytes, 1) && at + off_t(k_record_head) <= st.st_size &&
         pread_all(fd.get(), head, sizeof head, at)) {
    const auto offset = int64_t(get_le(head, 8));
    const auto size = int64_t(get_le(head + 8, 8));
    const auto length = off_t(get_le(head + 16, 4));
    const off_t body = at + off_t(k_record_head);
    if (body + length > st.st_size) break;  // still being written
    if (offset < next) break;               // not this attempt's order: never shown
    if (offset + size > from) {
      if (count == into.size()) into.emplace_back();
      core::LiveSegment& s = into[count];
      s.offset = offset;
      s.size = size;
      s.frames.resize(size_t(length));
      if (length > 0 && !pread_all(fd.get(), s.frames.data(), size_t(length), body)) break;
      ++count;
      held += int64_t(length);
    }
    next = offset + size;
    at = body + length;
  }
  {
    const std::lock_guard lock(resume_mutex_);
    resume_ = Resume{name, st.st_ino, at, next};
  }
  return count;
}

void LiveSpool::remove(const std::string& key, int64_t attempt) const {
  try {
    const util::Fd dir = folder(false);
    if (dir.get() >= 0) ::unlinkat(dir.get(), name_of(key, attempt).c_str(), 0);
  } catch (const StoreError&) {
    // A folder that is not idem's: nothing of it is touched.
  }
}

void LiveSpool::remove_file(const std::string& name) const {
  const util::Fd dir = folder(false);
  if (dir.get() >= 0 && spool_name(name)) ::unlinkat(dir.get(), name.c_str(), 0);
}

std::vector<LiveSpool::File> LiveSpool::files(size_t limit, int64_t now_s) const {
  std::vector<File> found;
  util::Fd dir = folder(false);
  if (dir.get() < 0) return found;
  DIR* listing = ::fdopendir(::dup(dir.get()));
  if (listing == nullptr) return found;
  while (found.size() < limit) {
    const dirent* e = ::readdir(listing);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    if (!spool_name(name)) continue;  // only idem's names are ever looked at, or removed
    File f;
    f.name = name;
    f.attempt = std::atoll(name.c_str() + 33);
    const util::Fd fd(
        ::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    off_t records = 0;
    if (!read_header(fd.get(), st.st_size, f.key, records)) {
      // Being made (its first write comes right after), or torn: left a minute first.
      if (now_s - int64_t(st.st_mtime) < 60) continue;
      f.key.clear();
    }
    found.push_back(std::move(f));
  }
  ::closedir(listing);
  return found;
}

}  // namespace idem::store::sqlite
