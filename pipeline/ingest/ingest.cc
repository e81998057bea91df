#include "pipeline/ingest/ingest.h"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "base/civil_time.h"
#include "base/sha256.h"
#include "config/careful_file.h"
#include "pipeline/ingest/access_log.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/connection.h"
#include "base/fault.h"
#include "stages/db/heartbeat.h"
#include "stages/control/progress.h"
#include "stages/control/sleep.h"
#include "stages/db/retry.h"
#include "stages/db/row_writer.h"
#include "stages/db/table_admin.h"

namespace rw {
namespace {

struct Counts {
  uint64_t lines = 0, stored = 0;
  std::map<std::string, uint64_t> skipped;  // by reason

  std::string Text(bool dry_run) const {
    uint64_t skips = 0;
    std::string reasons;
    for (const auto& [reason, n] : skipped) {
      skips += n;
      reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", reason, WithThousands(n));
    }
    return fmt::format("{}{} lines read, {} events {}, {} skipped ({})", dry_run ? "dry run: " : "",
                       WithThousands(lines), WithThousands(stored),
                       dry_run ? "would be stored (nothing was written)" : "stored", WithThousands(skips),
                       reasons.empty() ? "none" : reasons);
  }
};

// How much the payload column holds, read before the first batch: an event longer than that
// is refused by its line number, never stored cut (issue 37 part 4).
struct ColumnRoom {
  std::string type;  // as the server spells it, e.g. "text"
  uint64_t bytes = UINT64_MAX, chars = UINT64_MAX;

  // Why `payload` does not fit, or empty when it does.
  std::string Misfit(std::string_view payload) const {
    if (payload.size() > bytes) {
      return fmt::format("its event is {} bytes, more than the column ({}) holds ({} bytes)",
                         WithThousands(payload.size()), type, WithThousands(bytes));
    }
    if (chars != UINT64_MAX && payload.size() > chars) {
      const uint64_t n = static_cast<uint64_t>(std::count_if(
          payload.begin(), payload.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
      if (n > chars) {
        return fmt::format("its event is {} characters, more than the column ({}) holds ({})",
                           WithThousands(n), type, WithThousands(chars));
      }
    }
    return {};
  }
};

Result<ColumnRoom> PayloadRoom(Connection& c, const EventTableOptions& t) {
  Result<Rows> r = c.Query(fmt::format(
      "SELECT COLUMN_TYPE, CHARACTER_OCTET_LENGTH, CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS "
      "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} AND COLUMN_NAME = {}",
      c.Quote(t.table), c.Quote(t.payload_column)));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) {
    return Status::Error(Status::Code::kInvalidInput,
                         fmt::format("ingest writes its events to {}, which has no column {} in this database "
                                     "(create the events table first, or name its columns in the config)",
                                     QuoteIdentifier(t.table), QuoteIdentifier(t.payload_column)));
  }
  const auto& row = r->rows[0];
  ColumnRoom room;
  room.type = row[0].value_or("?");
  if (!row[1]) {
    return Status::Error(Status::Code::kInvalidInput,
                         fmt::format("the column {} of {} is {}, which cannot hold an event's JSON text",
                                     QuoteIdentifier(t.payload_column), QuoteIdentifier(t.table), room.type));
  }
  room.bytes = std::stoull(*row[1]);
  if (row[2]) room.chars = std::stoull(*row[2]);
  return room;
}

// A random (version 4) UUID.
std::string NewUuid(std::mt19937_64& rng) {
  const uint64_t a = rng(), b = rng();
  std::string hex = fmt::format("{:016x}{:016x}", a, b);
  hex[12] = '4';
  hex[16] = "89ab"[(b >> 62) & 3];
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) +
         "-" + hex.substr(20, 12);
}

std::string ThrottleText(const IpThrottle& t) {
  std::string out;
  for (const auto& [ip, at] : t.latest()) out += fmt::format("{}={}\n", ip, at);
  return out;
}

void RestoreThrottle(IpThrottle& t, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.rfind('=');
    if (eq == std::string::npos) continue;
    t.Throttled(line.substr(0, eq), std::stoll(line.substr(eq + 1)));
  }
}

// A path as positions are keyed: absolute, normalised.
std::string Normal(const std::string& path) {
  std::error_code ec;
  return std::filesystem::absolute(path, ec).lexically_normal().string();
}

bool IsGzipName(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

// What zlib says of `gz` after a read that brought nothing (`n` <= 0): Ok at the end of a
// whole gzip stream, else why `path` cannot be trusted (`good` bytes were read before).
Status GzipState(gzFile gz, int n, const std::string& path, uint64_t good) {
  int code = Z_OK;
  std::string what = gzerror(gz, &code);
  if (n == 0 && code == Z_OK) return Status::Ok();
  if (what.starts_with(path + ": ")) what.erase(0, path.size() + 2);
  if (code == Z_BUF_ERROR) {
    return Status::InvalidInput(
        fmt::format("{} is truncated: its gzip stream ends early, after {} bytes of log; nothing "
                    "of it was stored. Ingest it again once it is whole (is it still being "
                    "compressed?) or put an intact copy in its place",
                    path, WithThousands(good)));
  }
  return Status::InvalidInput(
      fmt::format("{} is corrupt (zlib: {}); nothing of it was stored. Put an intact copy in its "
                  "place (`gzip -t` checks one)",
                  path, what.empty() ? "read error" : what));
}

// Reads the whole of a `.gz` file, as `gzip -t` does: Ok when it is one or more whole gzip
// streams (`size`: the bytes of log in it). Deflate has no checksum but the one at the end,
// so a damaged file is only known to be damaged once it has all been read.
Status CheckGzip(const std::string& path, uint64_t& size) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) return Status::NotFound(fmt::format("cannot read '{}'", path));
  Status s;
  if (gzdirect(gz) == 1) {
    s = Status::InvalidInput(
        fmt::format("{} is named .gz but is not a gzip file; nothing of it was stored (a plain "
                    "log must not end in .gz: rename it)",
                    path));
  } else {
    std::vector<char> chunk(1 << 16);
    uint64_t good = 0;
    for (;;) {
      const int n = gzread(gz, chunk.data(), static_cast<unsigned>(chunk.size()));
      if (n <= 0) {
        s = GzipState(gz, n, path, good);
        break;
      }
      good += static_cast<uint64_t>(n);
    }
    size = good;
  }
  gzclose(gz);
  return s;
}

// The first line of a log file, plain or `.gz` (its first bytes only: a `.gz` is not checked
// whole here), when it is complete.
std::optional<std::string> FirstLineOf(const std::string& path) {
  std::string line;
  if (IsGzipName(path)) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) return std::nullopt;
    char chunk[1 << 14];
    size_t nl = std::string::npos;
    int n;
    while (nl == std::string::npos && (n = gzread(gz, chunk, sizeof chunk)) > 0) {
      const size_t from = line.size();
      line.append(chunk, static_cast<size_t>(n));
      nl = line.find('\n', from);
    }
    gzclose(gz);
    if (nl == std::string::npos) return std::nullopt;
    line.resize(nl);
    return line;
  }
  std::ifstream in(path, std::ios::binary);
  if (!std::getline(in, line) || in.eof()) return std::nullopt;
  return line;
}

// Where a rotation put the previous file of `path` (`before`: where it was left): the file
// beside it whose name starts as its own (<path>.1; dateext's <path>-20261201; compress's
// <path>.1.gz; <path>.2.gz after a second rotation) and whose first line is `before`'s,
// <path>.1 first, then the one with `before`'s inode, then by name. A plain one shorter than
// `before`'s offset is not it. Empty when there is none.
std::string RotatedName(const std::string& path, const IngestPosition& before) {
  namespace fs = std::filesystem;
  const fs::path given(path);
  const std::string base = given.filename().string();
  const fs::path dir = given.has_parent_path() ? given.parent_path() : fs::path(".");
  std::vector<std::pair<std::tuple<bool, bool, std::string>, std::string>> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= base.size() || !name.starts_with(base) ||
        std::string_view("._-").find(name[base.size()]) == std::string_view::npos) {
      continue;
    }
    const std::string candidate = path + name.substr(base.size());
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (!IsGzipName(candidate) && static_cast<uint64_t>(st.st_size) < before.offset) continue;
    const std::optional<std::string> first = FirstLineOf(candidate);
    if (!first || Sha256Hex(*first, 32) != before.first_line_hash) continue;
    const bool same_inode = static_cast<uint64_t>(st.st_ino) == before.inode &&
                            static_cast<uint64_t>(st.st_dev) == before.device;
    found.push_back({{candidate != path + ".1", !same_inode, candidate}, candidate});
  }
  if (found.empty()) return std::string();
  return std::min_element(found.begin(), found.end())->second;
}

// The lines of a log file, plain or gzip (`.gz`, read directly), from a byte offset of its
// (uncompressed) content. A `.gz` file is checked whole before any of it is read: one that
// is truncated, corrupt or not gzip at all is refused.
class LineSource {
 public:
  static Result<std::unique_ptr<LineSource>> Open(const std::string& path) {
    auto s = std::unique_ptr<LineSource>(new LineSource());
    s->path_ = path;
    if (IsGzipName(path)) {
      if (Status ok = CheckGzip(path, s->gz_size_); !ok.ok()) return ok;
      s->gz_ = gzopen(path.c_str(), "rb");
      if (s->gz_ == nullptr) return Status::NotFound(fmt::format("cannot read '{}'", path));
    } else {
      s->in_.open(path, std::ios::binary);
      if (!s->in_) return Status::NotFound(fmt::format("cannot read '{}'", path));
    }
    return s;
  }
  ~LineSource() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  // A `.gz` (checked whole): its last line is final even without a newline.
  bool compressed() const { return gz_ != nullptr; }
  // Why reading stopped early (a `.gz` damaged after it was checked), else Ok.
  const Status& status() const { return status_; }

  // The first `n` bytes of the content (fewer when it is shorter), the read position kept.
  std::string Prefix(size_t n) {
    std::string out(n, '\0');
    if (gz_ != nullptr) {  // a second reader: a `.gz` is final, its name its own
      gzFile other = gzopen(path_.c_str(), "rb");
      const int got = other == nullptr ? 0 : gzread(other, out.data(), static_cast<unsigned>(n));
      if (other != nullptr) gzclose(other);
      out.resize(got > 0 ? static_cast<size_t>(got) : 0);
      return out;
    }
    in_.clear();
    const std::streampos at = in_.tellg();
    in_.seekg(0);
    in_.read(out.data(), static_cast<std::streamsize>(n));
    out.resize(static_cast<size_t>(in_.gcount()));
    in_.clear();
    in_.seekg(at);
    return out;
  }
  // The content's size now, in bytes (a `.gz`'s uncompressed size), the read position kept.
  uint64_t Size() {
    if (gz_ != nullptr) return gz_size_;
    in_.clear();
    const std::streampos at = in_.tellg();
    in_.seekg(0, std::ios::end);
    const std::streampos end = in_.tellg();
    in_.seekg(at);
    return end < 0 ? 0 : static_cast<uint64_t>(end);
  }

  void Seek(uint64_t offset) {
    if (gz_ != nullptr) {
      gzrewind(gz_);
      if (gzseek(gz_, static_cast<z_off_t>(offset), SEEK_SET) < 0) {
        status_ = GzipState(gz_, -1, path_, 0);
      }
      read_ = offset;
    } else {
      in_.clear();
      in_.seekg(static_cast<std::streamoff>(offset));
    }
    buffer_.clear();
  }
  // The next line and whether it ended with a newline (false: the file ends, or is still
  // being written, in the middle of it). False when nothing is left, or on a read error
  // (status()).
  bool Next(std::string& line, bool& complete) {
    if (gz_ == nullptr) {
      if (!in_.good()) in_.clear();  // at the end last time: the file may have grown
      if (!std::getline(in_, line)) return false;
      complete = !in_.eof();
      if (!complete) in_.clear();  // more may be appended later
      return true;
    }
    if (!status_.ok()) return false;
    char chunk[1 << 16];
    size_t nl;
    while ((nl = buffer_.find('\n')) == std::string::npos) {
      const int n = gzread(gz_, chunk, sizeof chunk);
      if (n <= 0) {
        status_ = GzipState(gz_, n, path_, read_);
        if (!status_.ok()) return false;
        break;
      }
      read_ += static_cast<uint64_t>(n);
      buffer_.append(chunk, static_cast<size_t>(n));
    }
    if (nl == std::string::npos) {
      if (buffer_.empty()) return false;
      line.swap(buffer_);
      buffer_.clear();
      complete = false;
      return true;
    }
    line.assign(buffer_, 0, nl);
    buffer_.erase(0, nl + 1);
    complete = true;
    return true;
  }

 private:
  LineSource() = default;
  std::string path_;
  std::ifstream in_;
  gzFile gz_ = nullptr;
  uint64_t read_ = 0;  // uncompressed bytes read from a `.gz`
  uint64_t gz_size_ = 0;  // a `.gz`'s uncompressed size (known from its check)
  std::string buffer_;
  Status status_;
};

// One log file (and, when following, whatever takes its name after a rotation): read from
// its saved position, the kept lines appended batch by batch with the position.
class FileIngest {
 public:
  FileIngest(const IngestOptions& o, Connection* c, const ColumnRoom& room, std::string path, Counts& counts,
             std::mt19937_64& rng)
      : o_(o), c_(c), room_(room), path_(std::move(path)), counts_(counts), rng_(rng),
        rules_(AccessLogRules::Blog()), throttle_(rules_.throttle_seconds) {
    pos_.source = Normal(path_);
    reading_ = pos_.source;
    shown_ = path_;
    const std::string columns = fmt::format(
        "{}, {}, {}, {}", QuoteIdentifier(o.events.uuid_column), QuoteIdentifier(o.events.type_column),
        QuoteIdentifier(o.events.payload_column), QuoteIdentifier(o.events.time_column));
    insert_prefix_ = fmt::format("INSERT INTO {} ({}) VALUES ", QuoteIdentifier(o.events.table), columns);
    load_tail_ = LoadDataInto(o.events.table, columns);
    // A batch is one in-memory LOAD DATA where the server allows it (perf/ingest_bench, 1M
    // lines, with the parser as it was then: 90k lines/s instead of 66k with multi-row
    // INSERTs); multi-row INSERTs otherwise.
    if (c_ != nullptr) {
      auto allowed = c_->QueryValue("SELECT @@local_infile");
      bulk_ = allowed.ok() && *allowed && **allowed == "1";
    }
  }

  // Opens the file, takes its locks and finds where to start: the saved position when it is
  // the same file.
  Status Start() {
    if (Status s = OpenCurrent(); !s.ok()) return s;
    if (c_ == nullptr) return Status::Ok();
    if (Status s = TakeLocks(); !s.ok()) return s;
    // A file never ingested gets its row now (nothing read), so every batch has one to lock.
    if (Status s = checkpoint_store::CreateIngestPosition(*c_, pos_); !s.ok()) return s;
    Result<std::optional<IngestPosition>> saved = checkpoint_store::LoadIngestPosition(*c_, pos_.source);
    if (!saved.ok()) return saved.status();
    if (!*saved) return Status::Internal(fmt::format("the saved position of {} vanished", path_));
    saved_ = **saved;
    if (o_.from_start) return Status::Ok();
    const IngestPosition& p = saved_;
    RestoreThrottle(throttle_, p.throttle);
    if (p.device == pos_.device && p.inode == pos_.inode && p.offset > 0 && p.first_line_hash == FirstLineHash()) {
      pos_.offset = p.offset;
      pos_.lines_read = p.lines_read;
      pos_.events_stored = p.events_stored;
      pos_.first_line_hash = p.first_line_hash;
      source_->Seek(pos_.offset);
      resumed_ = true;  // KnowFile checks that its first bytes are still the ones stored
      fmt::print(stderr, "rewind: {} continues at byte {} ({} lines read before)\n", path_, pos_.offset,
                 pos_.lines_read);
    } else if (p.offset > 0) {
      // Rotated since: what was left of the old file is in <path>.1 (renamed or copied).
      if (Status s = DrainRotatedRemainder(p); !s.ok()) return s;
      fmt::print(stderr, "rewind: {} is another file than the one ingested before (rotated or "
                         "truncated); reading it from the start\n", path_);
    }
    return Status::Ok();
  }

  // Reads every complete line there is now. A last line without its newline may be in the
  // middle of being written: it is left for later (the position stays before it) unless
  // the file is `rotated` away or a `.gz` (checked whole), where it is final.
  Status ReadAvailable(bool rotated) {
    std::string line;
    bool complete = false;
    if (c_ != nullptr && !known_ && pos_.offset > 0) {  // continued from a saved position
      source_->Seek(0);
      const bool any = source_->Next(line, complete);
      source_->Seek(pos_.offset);
      if (any) {
        if (Status s = KnowFile(line); !s.ok()) return s;
      }
    }
    while (source_->Next(line, complete)) {
      if (!complete && !rotated && !source_->compressed()) {
        source_->Seek(pos_.offset);  // a line still being written: wait for its end
        if (!o_.follow) {
          fmt::print(stderr,
                     "rewind: {} ends in a line without a newline (still being written?); it is "
                     "left for the next run, which reads it once it is complete\n",
                     path_);
        }
        break;
      }
      if (pos_.offset == 0) {
        pos_.first_line_hash = Sha256Hex(line, 32);
        if (c_ != nullptr && !known_) {
          // Its first line: is it a file ingested before, under another name?
          if (Status s = KnowFile(line); !s.ok()) return s;
          if (pos_.offset > 0) continue;  // yes: where its lines were stored
        }
      }
      if (Status s = Take(line, pos_.offset + line.size() + (complete ? 1 : 0)); !s.ok()) return s;
    }
    if (!source_->status().ok()) return source_->status();  // nothing of the batch stored
    return Commit();
  }

  // Following: what became of the file since the last look. Rotated by rename (another
  // file under the name): the old one is read to its end first. Truncated in place
  // (copytruncate): the remainder is read from <path>.1, then the file from its start.
  Status CheckRotation() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return Status::Ok();  // between rename and create
    if (static_cast<uint64_t>(st.st_ino) != pos_.inode || static_cast<uint64_t>(st.st_dev) != pos_.device) {
      // The rest of the old file, its last line too.
      if (Status s = ReadAvailable(/*rotated=*/true); !s.ok()) return s;
      fmt::print(stderr, "rewind: {} was rotated; reading the new file from its start\n", path_);
      return Reopen();
    }
    if (static_cast<uint64_t>(st.st_size) < pos_.offset) {
      const IngestPosition before = pos_;
      if (Status s = OpenCurrent(); !s.ok()) return s;
      if (Status s = DrainRotatedRemainder(before); !s.ok()) return s;
      fmt::print(stderr, "rewind: {} was truncated (copytruncate); reading it from its start\n", path_);
    }
    return Status::Ok();
  }

 private:
  Status OpenCurrent() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return Status::NotFound(fmt::format("cannot read '{}'", path_));
    Result<std::unique_ptr<LineSource>> source = LineSource::Open(path_);
    if (!source.ok()) return source.status();
    source_ = std::move(*source);
    pos_.device = st.st_dev;
    pos_.inode = st.st_ino;
    pos_.offset = 0;
    pos_.first_line_hash.clear();
    ForgetFile(Normal(path_), path_);
    return Status::Ok();
  }

  // Another file's content is read from now on (under `path`, `shown` in messages): not
  // known until its first line is.
  void ForgetFile(const std::string& path, const std::string& shown) {
    known_ = false;
    file_.reset();
    head_.clear();
    reading_ = path;
    shown_ = shown;
  }

  // The record of the content being read (whose first line is `first`): a file ingested
  // before, under any name, when its first line and its first min(offset, 4 KiB) bytes are
  // that file's and it is at least as long as what was stored of it; then reading continues
  // there (unless --from-start). Else a new record. Server-wide locks: on the first line
  // while its records are looked up and one is chosen or made (two ingests of one log never
  // choose at once), then on the record chosen, held while it is read, so that two names of
  // one log are never read at once, while two logs that merely start alike are.
  Status KnowFile(const std::string& first) {
    const std::string hash = Sha256Hex(first, 32);
    const std::string db = c_->options().database;
    const std::string line_lock =
        table_admin::FitLockName("rewind-ingest", fmt::format("{}:file:{}", db, hash));
    if (Status s = TakeLock(line_lock, /*content=*/true); !s.ok()) return s;
    Status s = ChooseFile(hash);
    if (s.ok()) {
      const std::string lock =
          table_admin::FitLockName("rewind-ingest", fmt::format("{}:record:{}", db, file_->id));
      if (lock != file_lock_) {
        if (!file_lock_.empty()) s = table_admin::ReleaseLock(*c_, file_lock_);
        file_lock_.clear();
        if (s.ok()) s = TakeLock(lock, /*content=*/true);
        if (s.ok()) file_lock_ = lock;
      }
    }
    const Status released = table_admin::ReleaseLock(*c_, line_lock);
    return s.ok() ? released : s;
  }
  // A record the migration to layout 7 made of a saved position (its head not known) is
  // as far as the position of the same file (its path, inode and first line) is now: an
  // older rewind that ran on after the migration moved the position alone.
  Status CatchUpMigratedRecords(std::vector<IngestFile>& known) {
    for (IngestFile& f : known) {
      if (f.head_bytes != 0 || f.offset == 0) continue;
      Result<std::optional<IngestPosition>> p = checkpoint_store::LoadIngestPosition(*c_, f.source);
      if (!p.ok()) return p.status();
      if (*p && (*p)->device == f.device && (*p)->inode == f.inode &&
          (*p)->first_line_hash == f.first_line_hash && (*p)->offset > f.offset) {
        f.offset = (*p)->offset;
        f.lines_read = (*p)->lines_read;
        f.events_stored = (*p)->events_stored;
        f.throttle = (*p)->throttle;
      }
    }
    return Status::Ok();
  }
  // Of the records whose head this file starts with: the furthest read that fits in the file
  // (`same`) and the furthest that does not (`longer`); a record all of which is a prefix of
  // this file while its own file is still there is another log.
  void MatchRecords(const std::vector<IngestFile>& known, uint64_t size, const IngestFile** same,
                    const IngestFile** longer) {
    for (const IngestFile& f : known) {
      if (f.head_bytes > head_.size() ||
          (f.head_bytes > 0 &&
           Sha256Hex(std::string_view(head_).substr(0, f.head_bytes), 32) != f.head_hash)) {
        continue;
      }
      if (f.head_bytes > 0 && f.head_bytes < kIngestHeadBytes && StillThere(f)) continue;
      if (f.offset <= size) {
        if (*same == nullptr || f.offset > (*same)->offset) *same = &f;
      } else if (*longer == nullptr || f.offset > (*longer)->offset) {
        *longer = &f;
      }
    }
  }
  Status ChooseFile(const std::string& hash) {
    head_ = source_->Prefix(kIngestHeadBytes);
    const uint64_t size = source_->Size();
    Result<std::vector<IngestFile>> known = checkpoint_store::FindIngestFiles(*c_, hash);
    if (!known.ok()) return known.status();
    const std::vector<IngestFile> rows = *known;  // as stored: what each batch checks
    if (Status s = CatchUpMigratedRecords(*known); !s.ok()) return s;
    const IngestFile* same = nullptr;    // the furthest read that fits in the file
    const IngestFile* longer = nullptr;  // one that does not
    MatchRecords(*known, size, &same, &longer);
    if (o_.from_start) same = longer = nullptr;  // read again from its start: a record of its own
    if (same == nullptr && longer != nullptr) {
      return Status::InvalidInput(fmt::format(
          "{} starts as {} did, ingested before (its first line{} the same), but it is shorter ({} "
          "bytes) than the {} bytes stored of that file: it is not that file grown, and reading "
          "it could store its lines twice. If it is another log, ingest it with --from-start",
          shown_, longer->source,
          longer->head_bytes > 0 ? fmt::format(" and first {} bytes are", longer->head_bytes)
                                 : " is",
          size, longer->offset));
    }
    if (resumed_ && same == nullptr && longer == nullptr && !known->empty()) {
      // Continued from the path's saved position, yet no record of its first line fits
      // (none at all: a position no record was made for; trusted as before records were):
      // the same inode and first line, other bytes after (rewritten in place). Another file,
      // unless it is shorter than what was stored of it (cut in place: refused as above).
      if (size < pos_.offset) {
        return Status::InvalidInput(fmt::format(
            "{} starts with the line ingested before under this name, but it is shorter ({} "
            "bytes) than the {} bytes stored of it and its first bytes differ: cut or rewritten "
            "in place, and reading it could store its lines twice. If it is another log, ingest "
            "it with --from-start",
            shown_, size, pos_.offset));
      }
      fmt::print(stderr,
                 "rewind: {} starts with the line ingested before, but its first bytes differ "
                 "from those stored (rewritten in place); reading it from the start\n",
                 path_);
      pos_.offset = pos_.lines_read = pos_.events_stored = 0;
      source_->Seek(0);
    }
    resumed_ = false;
    known_ = true;
    if (same == nullptr) {
      IngestFile fresh;
      fresh.first_line_hash = hash;
      fresh.source = reading_;
      fresh.device = pos_.device;
      fresh.inode = pos_.inode;
      Result<uint64_t> id = checkpoint_store::CreateIngestFile(*c_, fresh);
      if (!id.ok()) return id.status();
      fresh.id = *id;
      file_ = fresh;
      file_saved_ = fresh;
      return Status::Ok();
    }
    file_ = *same;
    file_saved_ = rows[static_cast<size_t>(same - known->data())];
    if (same->offset > pos_.offset) {
      fmt::print(stderr,
                 "rewind: {} is the file ingested before as {}; continuing at byte {} ({} lines "
                 "read before)\n",
                 shown_, same->source, same->offset, same->lines_read);
      pos_.offset = same->offset;
      pos_.first_line_hash = hash;
      throttle_ = IpThrottle(rules_.throttle_seconds);
      RestoreThrottle(throttle_, same->throttle);
      source_->Seek(pos_.offset);
    }
    return Status::Ok();
  }
  // Whether the file of a record (`f`, shorter than kIngestHeadBytes when stored: its whole
  // stored content is its head) is still there as another file than the one being read: its
  // path still names its inode, which still starts with its head. Then a file that merely
  // starts as it did (two vhosts' logs opening with the same health check) is another log;
  // what was renamed (the same inode), gzipped (the original gone) or copied by copytruncate
  // (the original truncated) is not.
  bool StillThere(const IngestFile& f) {
    if (f.device == pos_.device && f.inode == pos_.inode) return false;
    struct stat st {};
    if (::stat(f.source.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_dev) != f.device ||
        static_cast<uint64_t>(st.st_ino) != f.inode) {
      return false;
    }
    Result<std::unique_ptr<LineSource>> there = LineSource::Open(f.source);
    if (!there.ok()) return false;
    const std::string head = (*there)->Prefix(f.head_bytes);
    return head.size() == f.head_bytes && Sha256Hex(head, 32) == f.head_hash;
  }

  Status Reopen() {
    if (Status s = OpenCurrent(); !s.ok()) return s;
    return Commit(/*force=*/true);  // the new identity, before any of its lines
  }

  std::string FirstLineHash() {
    std::string first;
    bool complete = false;
    const bool any = source_->Next(first, complete);
    source_->Seek(0);
    return any && complete ? Sha256Hex(first, 32) : std::string();
  }

  // The lines of the previous file (`before`, where it was left) that were not read yet:
  // in the file a rotation made of it (RotatedName: <path>.1, <path>-DATE, <path>.1.gz...),
  // known by the first line `before` remembers; all of them, the last one
  // too (the file was rotated away). Meanwhile the saved position is the old file's,
  // advanced through <path>.1, so a run killed here continues there; the last transaction
  // moves it to the file now open (pos_ on entry), at its start.
  // The old file's record (rewind_ingest_files) advances with it: it is known by its content
  // in <path>.1, and continues where that record says when the file was read further under
  // that name meanwhile.
  Status DrainRotatedRemainder(const IngestPosition& before) {
    const IngestPosition now = pos_;
    const std::string rotated = RotatedName(path_, before);
    Result<std::unique_ptr<LineSource>> opened =
        rotated.empty() ? Status::NotFound(path_ + ".1") : LineSource::Open(rotated);
    if (!opened.ok() && !rotated.empty()) {  // there, but unreadable (a .gz still being written?)
      return opened.status().With(
          fmt::format("reading what a rotation left of {} in {}", path_, rotated));
    }
    std::string line;
    bool complete = false;
    if (opened.ok() && (*opened)->Next(line, complete) &&
        Sha256Hex(line, 32) == before.first_line_hash) {
      std::unique_ptr<LineSource> current = std::move(source_);
      source_ = std::move(*opened);
      ForgetFile(Normal(rotated), rotated);
      pos_.device = before.device;
      pos_.inode = before.inode;
      pos_.offset = before.offset;
      pos_.first_line_hash = before.first_line_hash;
      source_->Seek(before.offset);
      const uint64_t lines_before = counts_.lines;
      if (Status s = ReadAvailable(/*rotated=*/true); !s.ok()) return s;
      const uint64_t read = counts_.lines - lines_before;
      if (read > 0) fmt::print(stderr, "rewind: read {} line(s) left in {}\n", read, rotated);
      source_ = std::move(current);
      ForgetFile(Normal(path_), path_);
      pos_.device = now.device;
      pos_.inode = now.inode;
      pos_.offset = now.offset;
      pos_.first_line_hash = now.first_line_hash;
    }
    return Commit(/*force=*/true);
  }

  // One ingest at a time per log file: server-wide locks, in this database, on its path
  // (the key of its saved position, the same through rotations), on its device and inode
  // (the same file under another name) and, once its first line is read, on its content
  // (KnowFile: a copy, a rotated or gzipped name). Held until the connection closes (the
  // content's until another file's content is read); taken again after a reconnect.
  Status TakeLocks() {
    if (lock_names_.empty()) {
      const std::string db = c_->options().database;
      lock_names_ = {table_admin::FitLockName("rewind-ingest", db + ":" + pos_.source),
                     table_admin::FitLockName(
                         "rewind-ingest", fmt::format("{}:{}:{}", db, pos_.device, pos_.inode))};
    }
    for (const std::string& name : lock_names_) {
      if (Status s = TakeLock(name, /*content=*/false); !s.ok()) return s;
    }
    if (!file_lock_.empty()) return TakeLock(file_lock_, /*content=*/true);
    return Status::Ok();
  }
  Status TakeLock(const std::string& name, bool content) {
    // A holder whose run stopped beating is a dead ingest's: stopped, and the lock taken.
    Result<std::optional<table_admin::LockHolder>> holder =
        table_admin::TakeLock(*c_, name, "the lock on ingesting " + shown_);
    if (!holder.ok()) return holder.status();
    if (!*holder) return Status::Ok();
    return Status::Error(
        Status::Code::kBusy,
        fmt::format("{} is already being ingested by another rewind{} (connection {}{}); wait for "
                    "it to finish or stop it (two at once would store its lines twice)",
                    shown_, content ? ", under another name (the same log: its first bytes)" : "",
                    (*holder)->connection,
                    (*holder)->run ? fmt::format(": pid {} on {}, beating", (*holder)->run->pid,
                                                 (*holder)->run->host)
                                   : std::string(", which keeps no heartbeat here")));
  }

  // Inside a batch's transaction, as CheckPositionUnmoved for the record of the content.
  Status CheckFileUnmoved() {
    Result<std::optional<IngestFile>> now = checkpoint_store::LoadIngestFile(*c_, file_->id, true);
    if (!now.ok()) return now.status();
    if (*now && checkpoint_store::SameIngestFile(**now, file_saved_)) return Status::Ok();
    return Status::Error(
        Status::Code::kBusy,
        fmt::format("the record of {}'s content moved while this ingest ran (byte {}, where this "
                    "run left it at byte {}): another rewind is ingesting it under another "
                    "name; stopped without storing this batch",
                    shown_, *now ? (*now)->offset : 0, file_saved_.offset));
  }

  // Inside a batch's transaction: the saved position, locked, must be the one this run
  // started from or last wrote. Another writer (an ingest that got past the locks) moved
  // it otherwise, and appending the batch could store its lines a second time.
  Status CheckPositionUnmoved() {
    Result<std::optional<IngestPosition>> now =
        checkpoint_store::LoadIngestPosition(*c_, pos_.source, true);
    if (!now.ok()) return now.status();
    if (*now && checkpoint_store::SameIngestPosition(**now, saved_)) return Status::Ok();
    return Status::Error(
        Status::Code::kBusy,
        fmt::format(
            "the saved position of {} moved while this ingest ran (byte {}, {} lines read, where "
            "this run left it at byte {}, {} lines): another rewind is ingesting it; stopped "
            "without storing this batch",
            path_, *now ? (*now)->offset : 0, *now ? (*now)->lines_read : 0, saved_.offset,
            saved_.lines_read));
  }

  // One line, which ends at byte `end` of the file.
  Status Take(const std::string& raw, uint64_t end) {
    std::string_view line(raw);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LogVisit v = ParseLogLine(line, rules_);
    std::string uuid, payload;
    if (c_ != nullptr && v.skip == SkipReason::kNone && !throttle_.WouldThrottle(v.ip, v.epoch_seconds)) {
      uuid = NewUuid(rng_);
      payload = PageVisitedPayload(uuid, v, line);
      // Refused before it counts (its IP's time untouched), so the next run meets it afresh.
      if (const std::string misfit = room_.Misfit(payload); !misfit.empty()) return Refuse(misfit);
    }
    ++batch_lines_;
    pos_.offset = end;
    if (v.skip == SkipReason::kNone && throttle_.Throttled(v.ip, v.epoch_seconds)) v.skip = SkipReason::kThrottled;
    if (v.skip != SkipReason::kNone) {
      ++counts_.skipped[SkipReasonName(v.skip)];
    } else {
      ++batch_events_;
      if (c_ != nullptr) {
        if (bulk_) {
          tsv_.Text(uuid);
          tsv_.Text(o_.events.page_visited_class);
          tsv_.Text(payload);
          tsv_.DateTimeMicros(v.epoch_seconds * 1'000'000);
          tsv_.EndRow();
        } else {
          char when[20];
          FormatDateTime(v.epoch_seconds, when);
          values_ += values_.empty() ? "(" : ",(";
          c_->AppendQuoted(values_, uuid);
          values_ += ',';
          c_->AppendQuoted(values_, o_.events.page_visited_class);
          values_ += ',';
          c_->AppendQuoted(values_, payload);
          values_ += fmt::format(",'{}')", std::string_view(when, 19));
        }
      }
    }
    if (batch_lines_ >= o_.batch_size || values_.size() + tsv_.bytes() >= (8u << 20)) return Commit();
    return Status::Ok();
  }

  // A line that cannot be stored whole: the lines before it are stored (the position stays
  // before it), then the ingest stops with its number, so that the next run starts there.
  Status Refuse(const std::string& why) {
    const uint64_t number = pos_.lines_read + batch_lines_ + 1;
    const uint64_t before = counts_.lines + batch_lines_;
    if (Status s = Commit(); !s.ok()) return s;
    return Status::Error(
        Status::Code::kInvalidInput,
        fmt::format("line {} of {} cannot be stored: {}. Nothing of it was stored ({} line(s) before it "
                    "were); widen the column (for example ALTER TABLE {} MODIFY {} MEDIUMTEXT) and run "
                    "again: the ingest continues at that line",
                    WithThousands(number), shown_, why, WithThousands(before), QuoteIdentifier(o_.events.table),
                    QuoteIdentifier(o_.events.payload_column)));
  }

  // One transaction: the batch's events and where the file stands after them.
  Status Commit(bool force = false) {
    if (batch_lines_ == 0 && !force) return Status::Ok();
    pos_.lines_read += batch_lines_;
    pos_.events_stored += batch_events_;
    counts_.lines += batch_lines_;
    counts_.stored += batch_events_;
    pos_.throttle = ThrottleText(throttle_);
    if (c_ != nullptr) {
      const std::string position_sql = checkpoint_store::SaveIngestPositionSql(*c_, pos_);
      std::string file_sql;
      if (file_) {  // the content's record, in the same transaction
        file_->offset = pos_.offset;
        file_->lines_read += batch_lines_;
        file_->events_stored += batch_events_;
        file_->throttle = pos_.throttle;
        file_->head_bytes = std::min<uint64_t>(pos_.offset, kIngestHeadBytes);
        if (head_.size() < file_->head_bytes) head_ = source_->Prefix(kIngestHeadBytes);
        file_->head_bytes = std::min<uint64_t>(file_->head_bytes, head_.size());
        file_->head_hash = Sha256Hex(std::string_view(head_).substr(0, file_->head_bytes), 32);
        file_->source = reading_;
        file_->device = pos_.device;
        file_->inode = pos_.inode;
        file_sql = checkpoint_store::SaveIngestFileSql(*c_, *file_);
      }
      const std::vector<std::string> rows = tsv_.Take();
      RetryPolicy lost_connections;
      lost_connections.retry_transient = false;
      RetryHooks hooks;
      hooks.after_reconnect = [&]() -> Result<bool> {
        // The locks went with the old connection. It died maybe during COMMIT: the position
        // row tells whether the batch landed.
        if (Status s = TakeLocks(); !s.ok()) return s;
        Result<std::optional<IngestPosition>> landed =
            checkpoint_store::LoadIngestPosition(*c_, pos_.source);
        if (!landed.ok()) return landed.status();
        return *landed && checkpoint_store::SameIngestPosition(**landed, pos_);
      };
      Status s = Retry(
          lost_connections, c_,
          [&]() -> Status {
            Status t = c_->Execute("START TRANSACTION");
            if (t.ok()) t = CheckPositionUnmoved();
            if (t.ok() && file_) t = CheckFileUnmoved();
            // Whatever the server's sql_mode, a value it cut or changed stops the batch.
            if (t.ok() && !values_.empty()) t = c_->Execute(insert_prefix_ + values_);
            if (t.ok() && !values_.empty()) t = c_->RefuseWarnings(fmt::format("the INSERT of {} line(s)", batch_lines_));
            if (t.ok() && !rows.empty()) t = c_->LoadData(load_tail_, rows);
            if (t.ok() && !rows.empty()) t = c_->RefuseWarnings(fmt::format("the LOAD DATA of {} line(s)", batch_lines_));
            if (t.ok()) t = c_->Execute(position_sql);
            if (t.ok() && !file_sql.empty()) t = c_->Execute(file_sql);
            if (t.ok()) FaultPoint("ingest-batch");
            if (t.ok()) t = c_->Execute("COMMIT");
            if (!t.ok() && t.code() != Status::Code::kConnection) (void)c_->Execute("ROLLBACK");
            return t;
          },
          hooks);
      if (!s.ok()) return s.With(fmt::format("appending a batch of {} up to byte {}", path_, pos_.offset));
      saved_ = pos_;
      if (file_) file_saved_ = *file_;
    }
    values_.clear();
    batch_lines_ = batch_events_ = 0;
    return Status::Ok();
  }

  const IngestOptions& o_;
  Connection* c_;
  const ColumnRoom& room_;
  const std::string path_;
  Counts& counts_;
  std::mt19937_64& rng_;
  const AccessLogRules rules_;
  IpThrottle throttle_;
  IngestPosition pos_;
  IngestPosition saved_;  // the saved position as this run last read or wrote it
  std::vector<std::string> lock_names_;
  // The content being read: its record once its first line is known (KnowFile), as this
  // run last read or wrote it, its first bytes (up to kIngestHeadBytes), its lock.
  bool known_ = false;
  bool resumed_ = false;  // continued from the path's saved position, its content unchecked
  std::optional<IngestFile> file_;
  IngestFile file_saved_;
  std::string head_;
  std::string file_lock_;
  std::string reading_, shown_;  // the path being read (normalised; as given, for messages)
  std::unique_ptr<LineSource> source_;
  std::string insert_prefix_, load_tail_, values_;
  bool bulk_ = false;
  TsvBuilder tsv_;
  uint64_t batch_lines_ = 0, batch_events_ = 0;
};

}  // namespace

// --follow: reads what the file gains, through its rotations, until stopped; the counts every
// five seconds.
Status Follow(FileIngest& ingest, const IngestOptions& o, const std::string& file, const Counts& counts,
              const std::atomic<bool>& stop) {
  fmt::print(stderr, "rewind: following {} (Ctrl-C to stop)\n", file);
  auto said = std::chrono::steady_clock::now();
  const auto poll = std::chrono::milliseconds(static_cast<int64_t>(o.poll_seconds * 1000));
  while (!stop.load()) {
    (void)SleepUnlessStopped(poll, &stop);
    if (Status s = ingest.ReadAvailable(/*rotated=*/false); !s.ok()) return s;
    if (Status s = ingest.CheckRotation(); !s.ok()) return s;
    if (Status s = ingest.ReadAvailable(/*rotated=*/false); !s.ok()) return s;
    if (std::chrono::steady_clock::now() - said > std::chrono::seconds(5) && o.progress != ProgressMode::kQuiet) {
      fmt::print(stderr, "rewind: {}\n", counts.Text(o.dry_run));
      said = std::chrono::steady_clock::now();
    }
  }
  return Status::Ok();
}

int IngestCommand(const IngestOptions& o, const std::vector<std::string>& files,
                  const std::atomic<bool>& stop, std::FILE* out) {
  if (files.empty()) {
    fmt::print(stderr, "rewind: ingest needs one or more log files: rewind ingest FILE...\n");
    return exit_code::kUsage;
  }
  if (o.follow && files.size() != 1) {
    fmt::print(stderr, "rewind: ingest --follow follows one log file (older ones first without --follow)\n");
    return exit_code::kUsage;
  }
  if (!o.dry_run && o.connection.database.empty()) {
    fmt::print(stderr, "rewind: no database given: pass --database NAME or set REWIND_DATABASE\n");
    return exit_code::kUsage;
  }
  // The heartbeat names the connection that takes the per-file locks. It stops beating
  // first and its row goes last, after that connection has closed and let the locks go.
  std::unique_ptr<Heartbeat> heartbeat;
  std::unique_ptr<Connection> conn;
  struct StopBeatingFirst {
    std::unique_ptr<Heartbeat>& beat;
    ~StopBeatingFirst() {
      if (beat) beat->Stop();
    }
  } stop_beating_first{heartbeat};
  if (!o.dry_run) {
    Result<std::unique_ptr<Connection>> c = Connection::Open(o.connection);
    if (!c.ok()) {
      fmt::print(stderr, "rewind: {}\n", c.status().message());
      return exit_code::kError;
    }
    conn = std::move(*c);
    if (Status s = checkpoint_store::Ensure(*conn); !s.ok()) {
      fmt::print(stderr, "rewind: {}\n", s.message());
      return exit_code::kError;
    }
    Result<std::unique_ptr<Heartbeat>> beat =
        Heartbeat::Start(o.connection, *conn, fmt::format("ingest-{}", getpid()), "ingest");
    if (!beat.ok()) {
      fmt::print(stderr, "rewind: {}\n", beat.status().message());
      return exit_code::kError;
    }
    heartbeat = std::move(*beat);
  }
  std::random_device seed;
  std::mt19937_64 rng((static_cast<uint64_t>(seed()) << 32) ^ seed());
  Counts counts;
  auto fail = [&](const Status& s) {
    fmt::print(stderr, "rewind: {}\n", s.message());
    return exit_code::kError;
  };
  ColumnRoom room;
  if (conn) {
    Result<ColumnRoom> r = PayloadRoom(*conn, o.events);
    if (!r.ok()) return fail(r.status());
    room = *r;
  }
  for (const std::string& file : files) {
    FileIngest ingest(o, conn.get(), room, file, counts, rng);
    if (Status s = ingest.Start(); !s.ok()) return fail(s);
    if (Status s = ingest.ReadAvailable(/*rotated=*/false); !s.ok()) return fail(s);
    if (!o.follow) continue;
    if (Status s = Follow(ingest, o, file, counts, stop); !s.ok()) return fail(s);
  }
  fmt::print(out, "{}\n", counts.Text(o.dry_run));
  if (!o.stats_json.empty()) {
    nlohmann::json j = {{"lines_read", counts.lines}, {"events_stored", counts.stored},
                        {"dry_run", o.dry_run}, {"skipped", counts.skipped}};
    if (Status s = WriteCarefully(o.stats_json, j.dump(2) + "\n", "--stats-json"); !s.ok()) {
      fmt::print(stderr, "rewind: {}\n", s.message());
      return exit_code::kError;
    }
  }
  return exit_code::kOk;
}

}  // namespace rw
