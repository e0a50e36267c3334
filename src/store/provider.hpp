#pragma once
// Store connections for a long-running process (the daemon): opened lazily, reused, safe across
// threads. A connection is never used by two threads at once — SQLite's are opened NOMUTEX — so
// each lease hands one connection to one caller until the lease ends.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "store/store.hpp"

namespace idem::store {

class StoreProvider {
 public:
  using Opener = std::function<std::unique_ptr<Store>()>;

  // Keeps at most `max_idle` idle connections; a lease never waits for one: when none is idle it
  // opens another, and when a returned one finds the idle list full it is closed. So the
  // connections open at once are bounded by max_idle plus the leases held at that moment (at
  // most one per thread that uses the store).
  StoreProvider(StoreLocation where, StoreOptions options, size_t max_idle);
  StoreProvider(Opener open, size_t max_idle);  // tests: any way of opening a store
  StoreProvider(const StoreProvider&) = delete;
  StoreProvider& operator=(const StoreProvider&) = delete;

  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Gives the connection back; one released while an exception unwinds through the lease is
    // closed instead, so a connection in a doubtful state (lost, mid-transaction) is never
    // reused.
    ~Lease();
    Store& operator*() const { return *store_; }
    Store* operator->() const { return store_.get(); }

   private:
    friend class StoreProvider;
    Lease(StoreProvider& provider, std::unique_ptr<Store> store);
    StoreProvider* provider_;
    std::unique_ptr<Store> store_;
    int exceptions_at_start_;
  };

  // An idle connection, or a new one. Throws StoreError when a new one cannot be opened.
  Lease lease();

  int64_t opened() const;  // connections opened so far
  size_t idle() const;     // connections waiting for a lease now

 private:
  void give_back(std::unique_ptr<Store> store, bool reusable);

  const Opener open_;
  const size_t max_idle_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Store>> idle_;
  int64_t opened_ = 0;
};

// The output reader of `key`'s attempt (Store::open_output) on the leased connection, which it
// keeps leased until it is dropped (dropped first itself); null when there is none.
std::unique_ptr<OutputReader> leased_output(StoreProvider::Lease lease, const std::string& key,
                                            int64_t attempt);

// A Store whose every call leases a connection for that call alone, so that a caller waiting
// minutes between calls (the proxy's forward of a slow request) holds no connection meanwhile
// (PostgreSQL's are costly). An output reader keeps its connection until it is dropped.
class PerCallStore final : public Store {
 public:
  explicit PerCallStore(std::shared_ptr<StoreProvider> stores) : stores_(std::move(stores)) {}
  ClaimResult claim(const ClaimRequest& request, const OwnerGone& owner_gone) override;
  TurnResult take_turn(const TurnRequest& request, const OwnerGone& owner_gone) override;
  bool withdraw(const std::string& key, const std::string& token) override;
  std::vector<QueuedGroup> queued_groups(const std::string& prefix, int64_t limit) override;
  std::vector<core::Record> group_line(const std::string& group, int64_t limit) override;
  bool finish(const std::string& key, int64_t attempt, const core::Outcome& outcome) override;
  bool set_process_group(const std::string& key, int64_t attempt,
                         const core::ProcessGroup& group) override;
  bool mark_abandoned(const std::string& key, int64_t attempt) override;
  bool heartbeat(const std::string& key, const std::string& token, int64_t lease_ms,
                 int64_t now_ms) override;
  bool release(const std::string& key, const std::string& token) override;
  std::optional<core::Record> get(const std::string& key) override;
  std::optional<core::Record> get_without_output(const std::string& key) override;
  std::unique_ptr<OutputReader> open_output(const std::string& key, int64_t attempt) override;
  bool append_live(const std::string& key, int64_t attempt,
                   const core::LiveSegment& segment) override;
  size_t read_live_into(const std::string& key, int64_t attempt, int64_t from, int64_t max_bytes,
                        std::vector<core::LiveSegment>& into) override;
  int64_t drop_stale_live(const OwnerGone& owner_gone, int64_t now_ms) override;
  void put_expectation(const core::Expectation& expectation) override;
  bool remove_expectation(const std::string& pattern) override;
  std::vector<StoredExpectation> expectations() override;
  std::optional<std::vector<core::ScheduleFinding>> save_evaluation(
      const std::string& pattern, int64_t revision, const core::Evaluation& evaluation) override;
  std::vector<core::ScheduleFinding> findings(const std::string& pattern, bool open_only,
                                              int64_t limit) override;
  std::vector<core::AttemptFact> attempts_started(const core::KeyPattern& pattern, int64_t after_ms,
                                                  const std::string& after_key,
                                                  int64_t after_number, int64_t before_ms,
                                                  int64_t limit) override;
  HistoryPage history_page(const std::string& key, const HistoryQuery& query) override;
  void count_replays(std::span<const ReplayCount> counts) override;
  ListStop list(const ListQuery& query, const RecordVisitor& visit) override;
  RemoveResult remove(const std::string& key, bool force, const OwnerGone& owner_gone) override;
  GcResult gc(const GcQuery& query) override;
  std::vector<bool> put_all(std::span<const core::Record> records, bool replace,
                            std::span<const std::vector<core::HistoryEntry>> histories) override;
  void check_writable() override;
  StoreHealth health() override;
  bool spans_hosts() const override;

 private:
  const std::shared_ptr<StoreProvider> stores_;
};

}  // namespace idem::store
