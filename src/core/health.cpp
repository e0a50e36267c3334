#include "core/health.hpp"

#include "core/duration.hpp"
#include "core/key.hpp"
#include "util/clock.hpp"

namespace idem::core {

namespace {

std::string octal(uint32_t mode) {
  std::string digits;
  for (int shift = 9; shift >= 0; shift -= 3) digits += char('0' + ((mode >> shift) & 7));
  return digits;
}

Finding finding(Severity severity, std::string check, std::string subject, std::string problem,
                std::string fix) {
  return Finding{severity, std::move(check), std::move(subject), std::move(problem),
                 std::move(fix)};
}

std::string owner_text(const Owner& owner) {
  return "pid " + std::to_string(owner.pid) + " on " + (owner.host.empty() ? "?" : owner.host);
}

}  // namespace

std::string_view to_string(Severity severity) {
  return severity == Severity::error ? "error" : "warning";
}

std::string finding_line(const Finding& f) {
  return std::string(to_string(f.severity)) + ": " + f.problem + "; " + f.fix;
}

nlohmann::json finding_json(const Finding& f) {
  return {{"severity", to_string(f.severity)},
          {"check", f.check},
          {"subject", f.subject},
          {"problem", f.problem},
          {"fix", f.fix}};
}

std::vector<Finding> folder_findings(const std::string& path, const PathFacts& facts, uint32_t euid,
                                     bool shared_allowed) {
  std::vector<Finding> out;
  if (!facts.exists) return out;
  if (!facts.is_dir) {
    out.push_back(finding(Severity::error, "folder-type", path,
                          "store folder " + path + " is not a directory",
                          "give the store a path in a folder of its own"));
    return out;
  }
  const uint32_t others = facts.mode & 0077;
  const bool foreign = facts.uid != euid && facts.uid != 0;
  const std::string allowed =
      ": IDEM_ALLOW_SHARED_FOLDER=1 lets idem use it, checking the companions' owner and mode "
      "before each open; one planted between that check and SQLite's own open would be believed";
  if ((facts.mode & 0002) != 0 && shared_allowed)
    out.push_back(finding(Severity::warning, "folder-shared", path,
                          "store folder " + path + " is mode " + octal(facts.mode) + allowed,
                          "move the store to a private folder"));
  else if ((facts.mode & 0002) != 0)
    out.push_back(finding(Severity::error, "folder-world-writable", path,
                          "store folder " + path + " is mode " + octal(facts.mode) +
                              ": anyone can put files beside the store (a planted -wal would be "
                              "believed): idem refuses a store there",
                          "move the store to a private folder, chmod 700 " + path +
                              ", or set IDEM_ALLOW_SHARED_FOLDER=1"));
  else if (others != 0)
    out.push_back(finding(Severity::warning, "folder-mode", path,
                          "store folder " + path + " is mode " + octal(facts.mode) +
                              ": others can see or change what is in it",
                          "chmod 700 " + path));
  if (facts.uid != euid) {
    const std::string owned = "store folder " + path + " is owned by uid " +
                              std::to_string(facts.uid) + ", not by you (uid " +
                              std::to_string(euid) + ")";
    if (foreign && !shared_allowed)
      out.push_back(finding(Severity::error, "folder-owner", path,
                            owned + ", who can put files beside the store: idem refuses it",
                            "keep the store in a folder of the user that runs idem, or set "
                            "IDEM_ALLOW_SHARED_FOLDER=1"));
    else
      out.push_back(finding(Severity::warning, "folder-owner", path,
                            foreign ? owned + allowed : owned,
                            "keep the store in a folder of the user that runs idem"));
  }
  return out;
}

std::vector<Finding> file_findings(const std::string& path, std::string_view what,
                                   const PathFacts& facts, uint32_t euid) {
  std::vector<Finding> out;
  if (!facts.exists) return out;
  const std::string name = std::string(what) + " " + path;
  if (facts.is_symlink) {
    out.push_back(finding(Severity::error, "file-symlink", path,
                          name + " is a symlink: idem refuses to follow it",
                          "replace the link with the file itself"));
    return out;
  }
  if (!facts.is_regular) {
    out.push_back(finding(Severity::error, "file-type", path, name + " is not a regular file",
                          "move it away: idem keeps a file there"));
    return out;
  }
  if (facts.uid != euid)
    out.push_back(finding(Severity::error, "file-owner", path,
                          name + " is owned by uid " + std::to_string(facts.uid) +
                              ", not by you (uid " + std::to_string(euid) + "): idem refuses it",
                          "run idem as its owner, or chown it to the user that runs idem"));
  if ((facts.mode & 0022) != 0)
    out.push_back(finding(
        Severity::error, "file-writable", path,
        name + " is mode " + octal(facts.mode) + ": others can write it: idem refuses the store",
        "chmod 600 " + path + ", or remove it if it is not yours"));
  else if ((facts.mode & 0077) != 0)
    out.push_back(finding(Severity::warning, "file-mode", path,
                          name + " is mode " + octal(facts.mode) +
                              ": others can read what it holds (outputs may hold secrets)",
                          "chmod 600 " + path));
  return out;
}

std::optional<Finding> wal_finding(const std::string& path, const PathFacts& facts) {
  if (!facts.exists || facts.size <= k_wal_warning_bytes) return std::nullopt;
  return finding(Severity::warning, "wal-size", path,
                 "WAL " + path + " holds " + std::to_string(facts.size >> 20) +
                     " MiB: checkpoints are held off (a process reading the store for long, or "
                     "one that could not take the writer lock)",
                 "run idem gc, which truncates it once no one reads the store");
}

std::optional<Finding> free_space_finding(const std::string& folder, int64_t available_bytes) {
  if (available_bytes >= k_free_space_warning_bytes) return std::nullopt;
  const std::string has = "the file system of store folder " + folder + " has " +
                          format_size(available_bytes) + " free";
  const std::string fix = "free space on it, or give idem a store on another one";
  if (available_bytes < k_free_space_error_bytes)
    return finding(Severity::error, "free-space", folder,
                   has +
                       ": a run's claim or outcome may not fit, and every run then fails "
                       "(exit 74)",
                   fix);
  return finding(Severity::warning, "free-space", folder,
                 has + ", less than the " + format_size(k_free_space_warning_bytes) +
                     " the store may need between checkpoints (an outcome of 16MiB, the default "
                     "--max-output, in the WAL, then in the database)",
                 fix);
}

Finding writable_finding(const std::string& subject, const std::string& problem, bool locked) {
  if (locked)
    return finding(Severity::error, "store-writable", subject, problem,
                   "find the process that holds the store's writer lock (fuser), or give idem a "
                   "store it may write");
  return finding(Severity::error, "store-writable", subject,
                 "a trial write to the store failed: " + problem,
                 "until it can write, every run fails (exit 74): make its file system or server "
                 "writable, free space on it, or give idem a store it may write");
}

std::optional<Finding> record_finding(const Record& r, std::string_view shown_status,
                                      int64_t now_ms) {
  if (shown_status != "abandoned") return std::nullopt;
  const std::string key = display_key(r.key);
  const std::string attempt = "attempt " + std::to_string(r.attempt) + ", started " +
                              util::iso8601_utc(r.started_ms) + " by " + owner_text(r.owner);
  const std::string rm = "idem rm " + shell_word(r.key);
  if (r.status == Status::abandoned)
    return finding(Severity::warning, "abandoned", r.key,
                   "'" + key + "' is abandoned (" + attempt + "): its outcome is unknown",
                   "check whether its side effect happened, then " + rm +
                       " (or run it again with --retry-abandoned)");
  const std::string why = lease_expired(r, now_ms)
                              ? "its lease ran out at " + util::iso8601_utc(r.lease_expires_ms)
                              : "its owner is gone";
  return finding(Severity::warning, "owner-gone", r.key,
                 "'" + key + "' is still marked running, but " + why + " (" + attempt + ")",
                 "the next attempt finds it abandoned (exit 69): check whether its side effect "
                 "happened, then " +
                     rm);
}

std::optional<Finding> leftovers_finding(const Record& r, std::string_view shown_status,
                                         bool group_alive, const std::string& cgroup_mount) {
  const bool held = shown_status == "failed" || shown_status == "abandoned" ||
                    (shown_status == "expired" && r.status == Status::failed);
  if (!group_alive || !held) return std::nullopt;
  const std::string group = std::to_string(r.process_group.pgid);
  const std::string& cgroup = r.process_group.cgroup;
  const std::string see = cgroup.empty()
                              ? "see them with pgrep -a -g " + group + "; end them (kill -- -" +
                                    group + "), or run the key with --kill-stale"
                              : "see them with cat " + cgroup_mount + cgroup +
                                    "/cgroup.procs; end them (echo 1 > " + cgroup_mount + cgroup +
                                    "/cgroup.kill), or run the key with --kill-stale";
  return finding(Severity::warning, "leftovers", r.key,
                 "'" + display_key(r.key) + "': its " +
                     std::string(shown_status == "expired" ? to_string(r.status) : shown_status) +
                     " attempt " + std::to_string(r.attempt) + " left live processes in " +
                     processes_place(r.process_group) +
                     ", which hold the key: the next run waits for them (exit 75)",
                 see);
}

std::string shell_word(std::string_view text) {
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-.,:/@%+=").find(c) != std::string_view::npos;
  };
  bool safe = !text.empty();
  for (char c : text) safe = safe && plain(c);
  if (safe) return std::string(text);
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace idem::core
