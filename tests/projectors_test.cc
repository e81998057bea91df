// Each projector's rows for a small hand-written list of events.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>

#include "projectors/bucket_counts.h"
#include "base/flat_map.h"
#include "projectors/projector.h"
#include "stages/flow/decoder.h"
#include "text_sink.h"
#include "base/sha256.h"
#include "base/text_table.h"

namespace rw {
namespace {

using testing::TextSink;

std::unique_ptr<Projector> Make(const std::string& name) {
  for (const auto& info : AllProjectors()) {
    if (info.name == name) return info.make();
  }
  ADD_FAILURE() << "no projector " << name;
  return nullptr;
}

// A PageVisited event as the application writes it.
struct Visit {
  int64_t id;
  const char* when;
  std::string_view url;
  std::string_view ip = "1.1.1.1";
  std::string_view ua = "ua";
  Visit(int64_t i, const char* w, std::string_view u, std::string_view p = "1.1.1.1", std::string_view a = "ua")
      : id(i), when(w), url(u), ip(p), ua(a) {}
};

// Folds `visits` into `p` as a run does: their payloads decoded by a decoder of what `p`
// binds, the records handed to its Apply.
void Apply(Projector& p, const std::vector<Visit>& visits) {
  EventCatalog catalog;
  p.Bind(catalog);
  Batch batch;
  for (const Visit& v : visits) {
    const std::string payload = fmt::format(R"({{"url":"{}","visitedAt":"{}","ip":"{}","userAgent":"{}"}})", v.url,
                                            v.when, v.ip, v.ua);
    batch.raw.push_back(RawEvent{v.id, static_cast<uint32_t>(batch.payloads.size()),
                                 static_cast<uint32_t>(payload.size())});
    batch.payloads += payload;
  }
  batch.payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  Decoder(catalog).Decode(batch);
  ASSERT_TRUE(batch.failures.empty()) << batch.failures[0].reason;
  std::vector<EventFailure> failures;
  const Folded folded = p.Apply(EventRecords{batch.records, batch.values, batch.width}, failures);
  EXPECT_EQ(folded.events, visits.size());
  EXPECT_EQ(folded.unusable, 0u);
  EXPECT_TRUE(failures.empty());
}

std::vector<std::string> Rows(const std::string& name, const std::vector<Visit>& visits) {
  auto p = Make(name);
  Apply(*p, visits);
  TextSink sink;
  p->Flush(sink);
  EXPECT_EQ(p->pending_rows(), 0u);
  return sink.rows;
}

const std::string kLong(2000, 'x');
const std::vector<Visit> kVisits = {
    Visit(1, "2024-12-30T23:59:59+00:00", "/a"),
    Visit(2, "2024-12-31T00:00:00-05:00", "/a"),  // offset ignored: still Dec 31
    Visit(3, "2024-12-31T00:00:30+00:00", "/Café"),
    Visit(4, "2025-01-01T10:15:00Z", "/cafe"),
    Visit(5, "2025-01-05T10:15:59Z", "/a"),
    Visit(6, "2024-02-29T12:00:00Z", kLong),
};

TEST(Projectors, VisitsPerMinute) {
  EXPECT_EQ(Rows("visits_per_minute", kVisits),
            (std::vector<std::string>{"2024-02-29 12:00:00|1", "2024-12-30 23:59:00|1",
                                      "2024-12-31 00:00:00|2", "2025-01-01 10:15:00|1",
                                      "2025-01-05 10:15:00|1"}));
}

TEST(Projectors, VisitsPerHour) {
  EXPECT_EQ(Rows("visits_per_hour", kVisits),
            (std::vector<std::string>{"2024-02-29 12:00:00|1", "2024-12-30 23:00:00|1",
                                      "2024-12-31 00:00:00|2", "2025-01-01 10:00:00|1",
                                      "2025-01-05 10:00:00|1"}));
}

TEST(Projectors, VisitsPerDayMonthYear) {
  EXPECT_EQ(Rows("visits_per_day", kVisits),
            (std::vector<std::string>{"2024-02-29|1", "2024-12-30|1", "2024-12-31|2", "2025-01-01|1",
                                      "2025-01-05|1"}));
  EXPECT_EQ(Rows("visits_per_month", kVisits),
            (std::vector<std::string>{"2024-02-01|1", "2024-12-01|3", "2025-01-01|2"}));
  EXPECT_EQ(Rows("visits_per_year", kVisits), (std::vector<std::string>{"2024-01-01|4", "2025-01-01|2"}));
}

// A URL table's rows as sorted "uri|date|count" strings, after checking that rows come
// in date order (the stored key starts with the date).
std::vector<std::string> UrlRows(const std::string& name, const std::vector<Visit>& visits) {
  std::vector<std::string> out;
  std::string last_date;
  for (const std::string& row : Rows(name, visits)) {
    const size_t c = row.rfind('|'), d = row.rfind('|', c - 1);
    const std::string date = row.substr(d + 1, c - d - 1);
    EXPECT_LE(last_date, date) << "rows out of date order at " << row;
    last_date = date;
    out.push_back(row);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Projectors, VisitsPerPostPerDayComparesUrlsByteForByte) {
  EXPECT_EQ(UrlRows("visits_per_post_per_day", kVisits),
            (std::vector<std::string>{"/Café|2024-12-31|1", "/a|2024-12-30|1", "/a|2024-12-31|1",
                                      "/a|2025-01-05|1", "/cafe|2025-01-01|1", kLong + "|2024-02-29|1"}));
}

TEST(Projectors, VisitsPerPostPerWeekUsesTheIsoMonday) {
  // Dec 30 2024 .. Jan 5 2025 is one ISO week (2025-W01).
  EXPECT_EQ(UrlRows("visits_per_post_per_week", kVisits),
            (std::vector<std::string>{"/Café|2024-12-30|1", "/a|2024-12-30|3", "/cafe|2024-12-30|1",
                                      kLong + "|2024-02-26|1"}));
}

// The tests' pseudo-random numbers (xorshift64): the same sequence every run.
struct Xorshift {
  uint64_t x = 88172645463325252ull;
  uint64_t operator()() {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  }
};

// Counts n keys, the i-th drawn by `key_of(i, x)` with x pseudo-random, in `counts` and in a
// std::map, and returns the map: what the counts must equal.
template <typename Key, typename Counts, typename KeyOf>
std::map<Key, int64_t> CountInBoth(size_t n, Counts& counts, KeyOf key_of) {
  std::map<Key, int64_t> reference;
  Xorshift next;
  for (size_t i = 0; i < n; ++i) {
    const Key key = key_of(i, next());
    ++counts[key];
    ++reference[key];
  }
  return reference;
}

// The counters' map against std::map: any key (the one marking empty slots too), counts
// and sorted order, small maps (std::sort) and large ones (radix sort).
TEST(FlatMap, CountsAndSortsLikeAnOrderedMap) {
  for (size_t n : {size_t{100}, size_t{200000}}) {
    FlatMap<int64_t> flat;
    const auto reference = CountInBoth<uint64_t>(n, flat, [](size_t i, uint64_t x) -> uint64_t {
      switch (i % 4) {
        case 0: return x;                                                       // anywhere
        case 1: return (uint64_t{1} << 63) + (x % 5000) * 60;                   // biased minutes
        case 2: return (uint64_t{(x >> 40) % 700 + 0x80000000u} << 32) | (x % 3000);  // (day, url id)
        default: return (i % 8 == 3) ? ~uint64_t{0} : 7;                       // the empty marker, a repeat
      }
    });
    EXPECT_EQ(flat.size(), reference.size());
    const auto sorted = flat.TakeSorted();
    ASSERT_EQ(sorted.size(), reference.size());
    size_t i = 0;
    for (const auto& [key, count] : reference) {
      EXPECT_EQ(sorted[i].key, key) << "at " << i << " of " << n;
      EXPECT_EQ(sorted[i].value, count);
      if (sorted[i].key != key) break;
      ++i;
    }
    EXPECT_TRUE(flat.empty());
  }
}

// The time counters' array-or-map against std::map: buckets on the stride in one span
// (random order, as events come), a few far outliers and buckets off the stride (the map),
// a span that widens until the array takes over what the map held, negative buckets.
TEST(BucketCounts, CountsAndSortsLikeAnOrderedMap) {
  for (size_t n : {size_t{50}, size_t{300000}}) {
    BucketCounts counts(60);
    const auto reference = CountInBoth<int64_t>(n, counts, [](size_t i, uint64_t x) -> int64_t {
      switch (i % 16) {
        case 0: return static_cast<int64_t>(x >> 1) - (int64_t{1} << 62);       // anywhere
        case 1: return 1'700'000'000 + static_cast<int64_t>(x % 100'000);       // mostly off the stride
        case 2: return -62'135'596'800 + static_cast<int64_t>(x % 1000) * 60;   // year 1
        default:
          // Minutes of a span that widens with i: 1,000 minutes at first, ~2 years at the end.
          return 1'600'000'000 + static_cast<int64_t>(x % (1000 + i * 4)) * 60;
      }
    });
    EXPECT_EQ(counts.size(), reference.size()) << n;
    const auto sorted = counts.TakeSorted();
    EXPECT_EQ(sorted, (std::vector<std::pair<int64_t, int64_t>>(reference.begin(), reference.end()))) << n;
    EXPECT_EQ(counts.size(), 0u);
    EXPECT_TRUE(counts.TakeSorted().empty());
  }
}

std::string Hex(const Sha256Digest& d) {
  std::string hex;
  for (uint8_t c : d) hex += fmt::format("{:02x}", c);
  return hex;
}

TEST(Sha256, MatchesTheStandardsTestVectors) {
  // FIPS 180-4 / NIST examples, and lengths around the padding boundaries (55, 56, 64
  // bytes) checked against the server's SHA2() by the replay test's odd URLs.
  EXPECT_EQ(Hex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hex(Sha256(std::string(1'000'000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// A single text is the pair (text, empty view): the empty half is copied as well. Copying
// nothing from a view without data must not hand memcpy a null pointer (UBSan in
// scripts/sanitize caught it on every decoded batch).
TEST(TextTable, CopiesPairsWithAnEmptyOrNullHalf) {
  StringArena arena;
  TextTable table;
  const std::string_view none, empty(""), url("/post/1");
  const std::vector<std::pair<std::string_view, std::string_view>> pairs = {
      {url, none}, {none, url}, {none, none}, {url, empty}};
  std::vector<uint32_t> ids;
  for (const auto& [a, b] : pairs) ids.push_back(table.Intern(a, b, TextTable::HashOf(a, b), &arena));
  // (url, none) and (url, empty) are the same pair; the others are distinct.
  EXPECT_EQ(ids[0], 0u);
  EXPECT_EQ(ids[1], 1u);
  EXPECT_EQ(ids[2], 2u);
  EXPECT_EQ(ids[3], 0u);
  ASSERT_EQ(table.size(), 3u);
  for (uint32_t id = 0; id < 3; ++id) {
    EXPECT_EQ(table.entry(id).a, pairs[id].first);
    EXPECT_EQ(table.entry(id).b, pairs[id].second);
  }
  EXPECT_NE(table.entry(0).a.data(), url.data()) << "a copy, not the caller's bytes";
}

TEST(Projectors, SessionsPerDayFollowsEventOrder) {
  const std::vector<Visit> visits = {
      Visit(1, "2024-01-01T10:00:00Z", "/", "1.1.1.1", "A"),  // new session (day 1)
      Visit(2, "2024-01-01T10:20:00Z", "/", "1.1.1.1", "A"),  // same
      Visit(3, "2024-01-01T10:50:00Z", "/", "1.1.1.1", "A"),  // 30 min after 10:20: same
      Visit(4, "2024-01-01T11:20:01Z", "/", "1.1.1.1", "A"),  // 30:01 after: new
      Visit(5, "2024-01-01T10:00:00Z", "/", "1.1.1.1", "B"),  // other user agent: new
      Visit(6, "2024-01-01T11:00:00Z", "/", "1.1.1.1", "A"),  // older than latest: same
      Visit(7, "2024-01-01T23:50:00Z", "/", "2.2.2.2", "A"),  // new, day 1
      Visit(8, "2024-01-02T00:10:00Z", "/", "2.2.2.2", "A"),  // continues across midnight
      Visit(9, "2024-01-02T05:00:00Z", "/", "2.2.2.2", "A"),  // new, day 2
      // The key is length-prefixed: ("1.1", "1.1A") differs from ("1.11", ".1A").
      Visit(10, "2024-01-02T05:00:00Z", "/", "1.1", "1.1A"),
      Visit(11, "2024-01-02T05:00:00Z", "/", "1.11", ".1A"),
  };
  EXPECT_EQ(Rows("sessions_per_day", visits),
            (std::vector<std::string>{"2024-01-01|4", "2024-01-02|3"}));
  // Another order of the same events gives another answer: the read model is
  // order-dependent, which is what the pipeline tests rely on.
  const Visit a = Visit(1, "2024-01-01T10:00:00Z", "/"), b = Visit(2, "2024-01-01T10:25:00Z", "/"),
                  c = Visit(3, "2024-01-01T10:50:00Z", "/");
  EXPECT_EQ(Rows("sessions_per_day", {a, b, c}), (std::vector<std::string>{"2024-01-01|1"}));
  EXPECT_EQ(Rows("sessions_per_day", {a, c, b}), (std::vector<std::string>{"2024-01-01|2"}));
}

TEST(Projectors, FlushEmitsDeltasAndForgetsThem) {
  auto p = Make("visits_per_day");
  Apply(*p, {kVisits[0], kVisits[1]});
  TextSink first;
  p->Flush(first);
  Apply(*p, {kVisits[2]});
  TextSink second;
  p->Flush(second);
  EXPECT_EQ(first.rows, (std::vector<std::string>{"2024-12-30|1", "2024-12-31|1"}));
  EXPECT_EQ(second.rows, (std::vector<std::string>{"2024-12-31|1"}));
}

TEST(Projectors, RegistryIsCompleteAndConsistent) {
  std::map<std::string, std::string> tables;
  for (const auto& info : AllProjectors()) {
    auto p = info.make();
    EXPECT_EQ(p->name(), info.name);
    EXPECT_EQ(p->table().name, info.name);
    EXPECT_EQ(p->table().columns.back().name, "count");
    EXPECT_EQ(p->table().columns.back().merge, Merge::kAdd);
    EXPECT_TRUE(p->table().columns.front().key());
    EventCatalog catalog;  // every one reads the PageVisited class's visitedAt
    p->Bind(catalog);
    EXPECT_EQ(catalog.classes(), std::vector<std::string>{catalog.default_class()});
    EXPECT_EQ(catalog.fields().front().name, "visitedAt");
    tables[info.name] = p->table().name;
  }
  EXPECT_EQ(tables.size(), AllProjectors().size());  // names are unique
  EXPECT_NE(Make("sessions_per_day")->order_dependent(), nullptr);
  EXPECT_EQ(Make("visits_per_day")->order_dependent(), nullptr);
}

}  // namespace
}  // namespace rw
