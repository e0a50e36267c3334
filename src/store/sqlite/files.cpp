#include "store/sqlite/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/errors.hpp"
#include "store/store.hpp"

namespace idem::store::sqlite {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// mkdir -p; folders idem creates are 0700 whatever the umask (captured output may hold secrets).
void make_private_dirs(const std::string& dir, Created& created) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw StoreError("store folder " + dir + " is not a directory");
    return;
  }
  if (errno != ENOENT) throw StoreError("store folder " + dir + ": " + errno_text());
  std::string parent = parent_dir(dir);
  if (parent != dir) make_private_dirs(parent, created);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    if (errno == EEXIST) return;
    throw StoreError("cannot create store folder " + dir + ": " + errno_text());
  }
  created.dirs.push_back(dir);
  ::chmod(dir.c_str(), 0700);
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", unsigned(mode & 07777));
  return text;
}

// The database file's companions (-wal, -shm, -journal) must not be symlinks (a link would let
// someone else choose where captured output is written); the folders above them may be. One
// that is there must be a regular file too (SQLite fails on a folder only once the database file
// exists, and then with "disk I/O error"), this user's, and writable by no one else: SQLite
// believes what a WAL or a hot journal holds, so a companion planted by another user (in a
// folder others can write, once a client had removed the old one) would replay their record and
// run nothing.
void refuse_odd_companion(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISLNK(st.st_mode))
    throw StoreError("store " + path + " is a symlink; refusing to follow it");
  if (!S_ISREG(st.st_mode))
    throw StoreError("store " + path + " is not a regular file; move it away");
  if (st.st_uid != ::geteuid())
    throw StoreError("store " + path + " is owned by uid " + std::to_string(st.st_uid) +
                     ", not by you: someone else may have put it there; refusing the store "
                     "(remove it once no idem of yours uses the store)");
  if ((st.st_mode & 0022) != 0)
    throw StoreError("store " + path + " is mode " + octal_mode(st.st_mode) +
                     ": others can write it; refusing the store (chmod 600 " + path + ")");
}

bool is_empty_file(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::optional<std::string> shared_folder(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  if ((st.st_mode & 0002) != 0)
    return "store folder " + dir + " is mode " + octal_mode(st.st_mode) +
           ": anyone can put files beside the store";
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return "store folder " + dir + " is owned by uid " + std::to_string(st.st_uid) +
           ", who can put files beside the store";
  return std::nullopt;
}

mode_t prepare_db_file(const std::string& path, Created& created) {
  // In a folder others can write, a companion could be planted between the checks below and
  // SQLite's own open of it: refused unless the user says so (docs/internals.md).
  if (!store::shared_folders_allowed())
    if (auto why = shared_folder(parent_dir(path)))
      throw StoreError(*why +
                       " (a -wal planted there would be believed); refusing it: move the "
                       "store to a private folder, or set IDEM_ALLOW_SHARED_FOLDER=1");
  for (const char* suffix : {"-wal", "-shm", "-journal"}) refuse_odd_companion(path + suffix);
  for (int tries = 0; tries < 2; ++tries) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      if (S_ISLNK(st.st_mode))
        throw StoreError("store " + path + " is a symlink; refusing to follow it");
      if (!S_ISREG(st.st_mode)) throw StoreError("store " + path + " is not a regular file");
      if (st.st_uid != ::geteuid())
        throw StoreError("store " + path + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not by you; refusing to use it");
      return st.st_mode & 07777;
    }
    if (errno != ENOENT) throw StoreError("store " + path + ": " + errno_text());
    make_private_dirs(parent_dir(path), created);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::fchmod(fd, 0600);
      ::close(fd);
      created.file = true;
      return 0600;
    }
    if (errno != EEXIST) throw StoreError("cannot create store " + path + ": " + errno_text());
    // Another process created it between our lstat and open: check it like any existing file.
  }
  throw StoreError("store " + path + " keeps appearing and vanishing; try again",
                   StoreFailure::transient);
}

void make_private(const std::string& path, mode_t mode) {
  if ((mode & 0077) != 0 && ::chmod(path.c_str(), mode & 0700) != 0)
    throw StoreError("cannot make store " + path + " private: " + errno_text());
}

std::string resolved_path(const std::string& path) {
  std::string dir = parent_dir(path);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (real == nullptr) throw StoreError("store folder " + dir + ": " + errno_text());
  std::string resolved(real);
  std::free(real);
  return (resolved == "/" ? "" : resolved) + "/" + base_name(path);
}

void take_back(const std::string& path, const Created& created) {
  if (created.file && is_empty_file(path) && !is_regular_file(path + "-wal")) {
    ::unlink(path.c_str());
    if (is_empty_file(path + "-shm")) ::unlink((path + "-shm").c_str());
  }
  for (auto dir = created.dirs.rbegin(); dir != created.dirs.rend(); ++dir)
    if (::rmdir(dir->c_str()) != 0) break;
}

GcMark::GcMark(const std::string& db_path) : path_(db_path + ".gc") {
  util::Fd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.valid() && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) fd_ = std::move(fd);
}

GcMark::~GcMark() {
  if (fd_.valid()) ::unlink(path_.c_str());  // then the lock goes with the descriptor
}

bool gc_marked(const std::string& db_path) {
  const std::string path = db_path + ".gc";
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid()) return false;
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return false;  // left by a gc that was killed
  return errno == EWOULDBLOCK;
}

}  // namespace idem::store::sqlite
