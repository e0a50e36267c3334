#include "core/notify.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/history.hpp"
#include "core/output.hpp"
#include "core/record_json.hpp"
#include "util/clock.hpp"
#include "util/hex.hpp"

namespace idem::core {

namespace {

nlohmann::json notify_time_or_null(int64_t unix_ms) {
  if (unix_ms == 0) return nullptr;
  return util::iso8601_utc(unix_ms);
}

// `<name>_bytes` the whole size; `<name>_b64` all of it when it is at most 2 * limit (then `head`
// and `tail` are its two halves, whole), else its first bytes, with `<name>_tail_b64` its last and
// `<name>_omitted_bytes` the count between.
void put_ends(nlohmann::json& j, const std::string& name, std::string_view head,
              std::string_view tail, int64_t total, size_t limit) {
  j[name + "_bytes"] = total;
  if (total <= int64_t(2 * limit)) {
    j[name + "_b64"] = util::to_base64(std::string(head) + std::string(tail));
    return;
  }
  j[name + "_b64"] = util::to_base64(head);
  j[name + "_tail_b64"] = util::to_base64(tail);
  j[name + "_omitted_bytes"] = total - int64_t(head.size() + tail.size());
}

// One stream's first `limit` bytes and its last `limit` after them (kept in a ring), fed a
// piece at a time: what the document shows of a stream of any size, holding at most 2 * limit.
class StreamEnds {
 public:
  explicit StreamEnds(int64_t keep) : limit_(size_t(std::max<int64_t>(keep, 0))) {}

  void add(std::string_view bytes) {
    total_ += int64_t(bytes.size());
    const size_t to_head = std::min(bytes.size(), limit_ - head_.size());
    head_.append(bytes.substr(0, to_head));
    bytes.remove_prefix(to_head);
    if (limit_ == 0 || bytes.empty()) return;
    if (bytes.size() >= limit_) {
      tail_.assign(bytes.substr(bytes.size() - limit_));
      tail_at_ = 0;
      return;
    }
    for (char c : bytes) {
      if (tail_.size() < limit_) {
        tail_.push_back(c);
      } else {
        tail_[tail_at_] = c;
        tail_at_ = (tail_at_ + 1) % limit_;
      }
    }
  }

  void put(nlohmann::json& j, const std::string& name) {
    std::rotate(tail_.begin(), tail_.begin() + std::ptrdiff_t(tail_at_), tail_.end());
    tail_at_ = 0;
    put_ends(j, name, head_, tail_, total_, limit_);
  }

 private:
  size_t limit_;
  std::string head_;
  std::string tail_;
  size_t tail_at_ = 0;
  int64_t total_ = 0;
};

// One stream of a stored output as the document shows it: its first `keep` bytes and its last
// `keep` (all of it when that is no more), read from the chunks in place.
void add_stream(nlohmann::json& j, const std::vector<ChunkView>& chunks, Stream stream,
                int64_t keep) {
  StreamEnds ends(keep);
  for (const auto& chunk : chunks)
    if (chunk.stream == stream) ends.add(chunk.bytes);
  ends.put(j, stream_name(stream));
}

// The request's body (a hook's or the proxy's "body_b64"), cut as a stream is.
void cut_request_body(nlohmann::json& request, int64_t keep) {
  if (!request.is_object()) return;
  auto it = request.find("body_b64");
  if (it == request.end() || !it->is_string()) return;
  const size_t limit = size_t(std::max<int64_t>(keep, 0));
  // Base64 of up to twice the limit: short enough as it is.
  if (it->get_ref<const std::string&>().size() <= (2 * limit + 2) / 3 * 4) return;
  const std::optional<std::string> body = util::from_base64(it->get<std::string>());
  if (!body) return;
  request.erase(it);
  const std::string_view bytes = *body;
  put_ends(request, "body", bytes.substr(0, limit), bytes.substr(bytes.size() - limit),
           int64_t(bytes.size()), limit);
}

}  // namespace

std::string_view to_string(NotifyEvent event) {
  switch (event) {
    case NotifyEvent::failed:
      return "failed";
    case NotifyEvent::abandoned:
      return "abandoned";
    case NotifyEvent::lease_lost:
      return "lease_lost";
    case NotifyEvent::recovered:
      return "recovered";
    case NotifyEvent::missed:
      return "missed";
    case NotifyEvent::overrun:
      return "overrun";
    case NotifyEvent::too_often:
      return "too-often";
  }
  return "?";
}

std::string_view to_string(NotifyOn on) { return on == NotifyOn::change ? "change" : "failure"; }

std::optional<NotifyOn> notify_on_from_string(std::string_view text) {
  if (text == "failure") return NotifyOn::failure;
  if (text == "change") return NotifyOn::change;
  return std::nullopt;
}

std::vector<std::string> shell_command(const std::string& line) { return {"/bin/sh", "-c", line}; }

bool notifies(NotifyOn on, NotifyEvent event) {
  return event != NotifyEvent::recovered || on == NotifyOn::change;
}

bool outcome_failed(const Outcome& outcome) {
  return outcome.status == Status::failed || (outcome.response && outcome.response->status >= 500);
}

std::optional<NotifyEvent> finish_event(std::optional<Status> previous, const Outcome& outcome,
                                        NotifyOn on) {
  if (outcome_failed(outcome)) {
    if (on == NotifyOn::change && previous == Status::failed) return std::nullopt;
    return NotifyEvent::failed;
  }
  if (previous == Status::failed || previous == Status::abandoned) return NotifyEvent::recovered;
  return std::nullopt;
}

std::string ended_by(const Record& r, std::optional<NotifyEvent> event) {
  if (event == NotifyEvent::lease_lost) return "lease lost";
  if (r.status == Status::abandoned) return abandon_reason(r.note);
  if (r.status == Status::running) return "running";
  Outcome o;
  o.timed_out = r.timed_out;
  o.signal = r.signal;
  o.exit_code = r.exit_code;
  o.response = r.response;
  return end_reason(o);
}

nlohmann::json attempt_json(const Record& r, std::optional<NotifyEvent> event) {
  nlohmann::json j;
  j["number"] = r.attempt;
  j["owner"] = {{"host", r.owner.host}, {"pid", r.owner.pid}};
  j["started_at"] = notify_time_or_null(r.started_ms);
  j["finished_at"] = notify_time_or_null(r.finished_ms);
  j["duration_ms"] = r.finished_ms != 0 && r.started_ms != 0
                         ? nlohmann::json(r.finished_ms - r.started_ms)
                         : nlohmann::json(nullptr);
  j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
  j["signal"] = r.signal ? nlohmann::json(*r.signal) : nlohmann::json(nullptr);
  j["http_status"] = r.response ? nlohmann::json(r.response->status) : nlohmann::json(nullptr);
  j["outcome"] = std::string(to_string(r.status));
  j["reason"] = ended_by(r, event);  // the name show --json and log give it
  j["note"] = r.note;
  return j;
}

std::string notify_document(NotifyEvent event, const Record& record, int64_t now_ms,
                            int64_t stream_bytes, const EncodedReader* output) {
  nlohmann::json doc;
  doc["event"] = std::string(to_string(event));
  doc["key"] = record.key;
  doc["time"] = util::iso8601_utc(now_ms);
  // The record as the store keeps it: its status is the one recorded, never re-judged here.
  doc["record"] = record_detail_json(record, now_ms, false, false, false);
  if (output != nullptr) {
    // Read from the store a window at a time, each stream's ends kept: never the whole output.
    StreamEnds ends[2] = {StreamEnds(stream_bytes), StreamEnds(stream_bytes)};
    const OutputWalk walk = walk_output(
        *output, [](Stream) { return true; },
        [&](Stream s, std::string_view piece) {
          ends[s == Stream::out ? 0 : 1].add(piece);
          return Take::more;
        });
    if (!walk.valid) throw StoreError("the stored output is not readable");
    ends[0].put(doc["record"], stream_name(Stream::out));
    ends[1].put(doc["record"], stream_name(Stream::err));
  } else {
    // record_detail_json read the output already: it is well-formed.
    const auto chunks = CapturedOutput::chunks_of(record.output);
    for (Stream stream : {Stream::out, Stream::err})
      add_stream(doc["record"], *chunks, stream, stream_bytes);
  }
  cut_request_body(doc["record"]["request"], stream_bytes);
  doc["attempt"] = attempt_json(record, event);
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace idem::core
