#pragma once
// The SQLite store's live output (Store::append_live, read_live; SPEC §10): a spool of files
// beside the database, one per running attempt that wrote something, in the folder PATH.live
// (0700, files 0600, never synced). A store of one host needs nothing more: its followers read
// the same file system. Writing the bytes through the database instead cost a run a second
// write of them to the WAL and, at its end, the freeing of every page they took (16 MiB of
// output: 40 ms more); a file costs a write(2) per segment and an unlink.
//
// The folder must be this user's with no access for others, a file a regular one of this
// user's with one name (never followed through a link, never a fifo): anything else beside a
// store was planted, and is refused rather than written to, read or removed.
//
// A file: "IDEMLIVE1\n", the key's length (4 bytes little-endian) and the key, then one record
// per segment: its offset and size (8 bytes little-endian each), the length of its frames (4
// bytes) and the frames (core/live.hpp). Each record is appended by one write(2); a reader stops
// at a record it does not yet see whole.
#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/live.hpp"
#include "util/fd.hpp"

namespace idem::store::sqlite {

class LiveSpool {
 public:
  explicit LiveSpool(const std::string& db_path) : dir_(db_path + ".live") {}

  // Appends `segment` to the file of `key`'s attempt `attempt`, making the folder and the file
  // as needed. Throws StoreError (a full disk, a folder that is not idem's).
  void append(const std::string& key, int64_t attempt, const core::LiveSegment& segment);
  // The segments holding bytes from `from` on (the one it falls in, then the next ones), up to
  // about `max_bytes` of them (at least one, if any), into the first segments of `into`
  // (Store::read_live_into), how many; none when there is no file. A read that goes on from
  // where the last one ended starts at the record after it instead of walking the file.
  size_t read(const std::string& key, int64_t attempt, int64_t from, int64_t max_bytes,
              std::vector<core::LiveSegment>& into);
  // Removes the file of an attempt, if there is one. Never throws.
  void remove(const std::string& key, int64_t attempt) const;

  // A file of the folder, as found (for gc: Store::drop_stale_live).
  struct File {
    std::string name;
    std::string key;  // empty: its header cannot be read (torn): removed by gc too
    int64_t attempt = 0;
  };
  // Up to `limit` of the files whose names are idem's (others are never looked at); one whose
  // header is not yet written is left while younger than a minute (at `now_s`, Unix seconds).
  std::vector<File> files(size_t limit, int64_t now_s) const;
  void remove_file(const std::string& name) const;

 private:
  static std::string name_of(const std::string& key, int64_t attempt);
  // The folder, opened (never through a link) and checked: this user's, no one else's access;
  // made 0700 with `create`. Not there (without `create`): an fd of -1. StoreError for one that
  // is not idem's.
  util::Fd folder(bool create) const;
  const std::string dir_;

  // Where the last read ended: in file `name` (inode `inode`), the record at `at`, which must
  // begin at byte `next` of the output. Used only when that record is found there as such.
  struct Resume {
    std::string name;
    ino_t inode = 0;
    off_t at = 0;
    int64_t next = 0;
  };
  std::mutex resume_mutex_;  // a store is one thread's at a time; a mutex costs nothing here
  Resume resume_;
};

}  // namespace idem::store::sqlite
