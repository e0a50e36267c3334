#include "store/sqlite_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/errors.hpp"

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

// The database file and its -wal and -shm must not be symlinks (a link would let someone else
// choose where captured output is written); the folders above them may be. A -wal or -shm that
// is there must be a regular file too: SQLite fails on a folder only once the database file
// exists, and then with "disk I/O error".
void refuse_odd_companion(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISLNK(st.st_mode))
    throw StoreError("store " + path + " is a symlink; refusing to follow it");
  if (!S_ISREG(st.st_mode))
    throw StoreError("store " + path + " is not a regular file; move it away");
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

mode_t prepare_db_file(const std::string& path, Created& created) {
  refuse_odd_companion(path + "-wal");
  refuse_odd_companion(path + "-shm");
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

}  // namespace idem::store::sqlite
