// The decoder on both payload encodings and on every kind of bad payload.
#include "stages/flow/decoder.h"
#include "tests/page_decoder.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <thread>

namespace rw {
namespace {

// A batch holding `payloads` as events 1..n, laid out as the reader lays them out.
std::unique_ptr<Batch> MakeBatch(const std::vector<std::string>& payloads) {
  auto b = std::make_unique<Batch>();
  int64_t id = 0;
  for (const std::string& p : payloads) {
    b->raw.push_back(RawEvent{++id, static_cast<uint32_t>(b->payloads.size()),
                              static_cast<uint32_t>(p.size())});
    b->payloads += p;
  }
  b->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  b->last_id = id;
  return b;
}

constexpr uint32_t kAll = kFieldVisitedAt | kFieldUrl | kFieldIp | kFieldUserAgent;

TEST(Decoder, ReadsTheLiteralUtf8Encoding) {
  auto b = MakeBatch({R"({"uuid":"u","url":"/blog/Café/🎉","visitedAt":"2024-01-19T12:34:56+00:00",)"
                      R"("ip":"10.0.0.1","userAgent":"Mozilla/5.0 [X11]","raw":"GET / \"q\"","uri":"/blog"})"});
  const std::vector<PageVisit> b_visits = PageDecoder(kAll).Decode(*b);
  ASSERT_EQ(b_visits.size(), 1u);
  ASSERT_TRUE(b->failures.empty());
  const PageVisit& v = b_visits[0];
  EXPECT_EQ(v.id, 1);
  EXPECT_EQ(v.url, "/blog/Café/🎉");
  EXPECT_EQ(v.ip, "10.0.0.1");
  EXPECT_EQ(v.user_agent, "Mozilla/5.0 [X11]");
  EXPECT_EQ(v.visited_at.days, DaysFromCivil(2024, 1, 19));
  EXPECT_EQ(v.visited_at.second_of_day, 45296);
  // No escapes: the view points into the batch's own payload bytes (no copy).
  EXPECT_GE(v.url.data(), b->payloads.data());
  EXPECT_LT(v.url.data(), b->payloads.data() + b->payloads.size());
}

TEST(Decoder, ReadsTheOldEscapedEncoding) {
  auto b = MakeBatch({R"({"url":"\/blog\/Caf\u00e9\/\ud83c\udf89","visitedAt":"2024-01-19T12:34:56+00:00",)"
                      R"("ip":"10.0.0.1","userAgent":"Mozilla\/5.0 \"quoted\" back\\slash"})"});
  const std::vector<PageVisit> b_visits = PageDecoder(kAll).Decode(*b);
  ASSERT_EQ(b_visits.size(), 1u) << (b->failures.empty() ? "" : b->failures[0].reason);
  EXPECT_EQ(b_visits[0].url, "/blog/Café/🎉");
  EXPECT_EQ(b_visits[0].user_agent, "Mozilla/5.0 \"quoted\" back\\slash");
}

TEST(Decoder, ReadsEscapedKeys) {
  // "visit\u0065dAt" is the key "visitedAt"; "ur\u006c" is "url": JSON says they are equal.
  auto b = MakeBatch({R"({"ur\u006c":"/a","visit\u0065dAt":"2024-01-19T12:34:56Z","ip":"i","userAgent":"u"})"});
  const std::vector<PageVisit> b_visits = PageDecoder(kAll).Decode(*b);
  ASSERT_EQ(b_visits.size(), 1u) << (b->failures.empty() ? "" : b->failures[0].reason);
  EXPECT_EQ(b_visits[0].url, "/a");
  EXPECT_EQ(b_visits[0].visited_at.days, DaysFromCivil(2024, 1, 19));
}

TEST(Decoder, KeepsLongUrlsWhole) {
  const std::string url = "/long/" + std::string(2000, 'x');
  auto b = MakeBatch({R"({"url":")" + url + R"(","visitedAt":"2024-01-19T12:34:56Z","ip":"i","userAgent":"u"})",
                      R"({"url":"\/)" + std::string(3000, 'y') + R"(","visitedAt":"2024-01-19T12:34:56Z","ip":"i","userAgent":"u"})"});
  const std::vector<PageVisit> b_visits = PageDecoder(kAll).Decode(*b);
  ASSERT_EQ(b_visits.size(), 2u);
  EXPECT_EQ(b_visits[0].url, url);
  EXPECT_EQ(b_visits[1].url, "/" + std::string(3000, 'y'));
}

// Read models key on PageVisit::url_id and visitor_id: equal bytes must get equal ids
// and different bytes different ids, across batches and decoding threads, whatever the
// encoding of the payload.
TEST(Decoder, GivesEqualTextsOneIdForTheWholeRun) {
  std::vector<std::vector<std::string>> batches(4);
  for (int i = 0; i < 6000; ++i) {  // enough distinct texts per batch to grow the tables
    const std::string url = "/p/" + std::to_string(i % 1700);
    const bool escaped = i % 3 == 0;  // "\/p\/12" is "/p/12"
    batches[i % 4].push_back(R"({"url":")" + (escaped ? "\\/p\\/" + std::to_string(i % 1700) : url) +
                             R"(","visitedAt":"2024-01-19T12:34:56Z","ip":")" + std::to_string(i % 7) +
                             R"(","userAgent":"ua)" + std::to_string(i % 900) + R"("})");
  }
  // A pair whose concatenations are equal: two visitors, never one.
  batches[0].push_back(R"({"url":"/","visitedAt":"2024-01-19T12:34:56Z","ip":"1.1","userAgent":"1.1A"})");
  batches[1].push_back(R"({"url":"/","visitedAt":"2024-01-19T12:34:56Z","ip":"1.11","userAgent":".1A"})");
  std::vector<std::unique_ptr<Batch>> decoded;
  for (const auto& payloads : batches) decoded.push_back(MakeBatch(payloads));
  const PageDecoder decoder(kAll);
  std::vector<std::thread> threads;
  for (auto& b : decoded) threads.emplace_back([&decoder, &b] { decoder.Decode(*b); });
  for (auto& t : threads) t.join();

  std::map<uint32_t, std::string> url_of_id;
  std::map<std::string, uint32_t> id_of_url;
  std::map<uint32_t, std::pair<std::string, std::string>> visitor_of_id;
  std::map<std::pair<std::string, std::string>, uint32_t> id_of_visitor;
  size_t visits = 0;
  for (const auto& b : decoded) {
    ASSERT_TRUE(b->failures.empty()) << b->failures[0].reason;
    for (const PageVisit& v : decoder.Visits(*b)) {
      ++visits;
      const std::string url(v.url);
      const std::pair<std::string, std::string> visitor{std::string(v.ip), std::string(v.user_agent)};
      EXPECT_EQ(url_of_id.try_emplace(v.url_id, url).first->second, url);
      EXPECT_EQ(id_of_url.try_emplace(url, v.url_id).first->second, v.url_id);
      EXPECT_EQ(visitor_of_id.try_emplace(v.visitor_id, visitor).first->second, visitor);
      EXPECT_EQ(id_of_visitor.try_emplace(visitor, v.visitor_id).first->second, v.visitor_id);
    }
  }
  EXPECT_EQ(visits, 6002u);
  EXPECT_EQ(id_of_url.size(), 1701u);
  EXPECT_EQ(id_of_visitor.size(), 6000u + 2u);  // (i % 7, i % 900) repeats only after 6300
  // Dense: the ids are 0..n-1.
  EXPECT_EQ(url_of_id.rbegin()->first, 1700u);
  EXPECT_EQ(visitor_of_id.rbegin()->first, 6001u);
}

// The record fields read models key by text: one id per distinct text in a batch, escaped
// or not, a number's literal like the same string; none for other values and fields.
TEST(Decoder, GivesEqualRecordTextsOneIdPerBatch) {
  EventCatalog catalog;
  const uint16_t a = catalog.ClassIndex("A");
  catalog.WantRecords(a);
  const uint32_t k = catalog.Slot(FieldSource{false, "k"}), other = catalog.Slot(FieldSource{false, "o"});
  catalog.WantText(k);
  auto batch = MakeBatch({R"({"k":"x","o":"x"})", R"({"k":"\u0078"})", R"({"k":"y"})", R"({"k":7})", R"({"k":"7"})",
                          R"({"k":null})", R"({"o":"y"})", R"({"k":{"x":1}})"});
  for (RawEvent& r : batch->raw) r.event_class = a;
  const Decoder decoder(catalog);
  decoder.Decode(*batch);
  ASSERT_EQ(batch->records.size(), 8u);
  std::vector<uint32_t> ids;
  for (const EventRecord& r : batch->records) {
    ids.push_back(batch->values[r.first_value + k].text_id);
    EXPECT_EQ(batch->values[r.first_value + other].text_id, 0u);
  }
  EXPECT_EQ(ids[0], ids[1]);  // "x" and "\u0078"
  EXPECT_NE(ids[0], 0u);
  EXPECT_NE(ids[2], 0u);
  EXPECT_NE(ids[2], ids[0]);
  EXPECT_NE(ids[3], 0u);
  EXPECT_EQ(ids[3], ids[4]);  // 7 and "7"
  EXPECT_NE(ids[3], ids[0]);
  EXPECT_NE(ids[3], ids[2]);
  EXPECT_EQ(ids[5], 0u);  // null
  EXPECT_EQ(ids[6], 0u);  // missing
  EXPECT_EQ(ids[7], 0u);  // an object
}

TEST(Decoder, EveryBadPayloadBecomesAFailureWithAReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"<html>502 Bad Gateway</html>", "not JSON"},
      {R"({"url":"/x","visitedAt":"2023-01-01T00:00:00Z","ip":"1","userAg)", "not JSON"},
      {R"({"url":"/x","ip":"1","userAgent":"u"})", "missing field 'visitedAt'"},
      {R"({"visitedAt":"2023-01-01T00:00:00Z","ip":"1","userAgent":"u"})", "missing field 'url'"},
      {R"({"url":12345,"visitedAt":"2023-01-01T00:00:00Z","ip":"1","userAgent":"u"})",
       "field 'url' is a number, expected a string"},
      {R"({"url":"/x","visitedAt":"yesterday","ip":"1","userAgent":"u"})", "unparseable visitedAt 'yesterday'"},
      {R"({"url":"/x","visitedAt":"2023-02-29T10:00:00Z","ip":"1","userAgent":"u"})", "unparseable visitedAt"},
      {R"(["not","an","object"])", "is an array, expected an object"},
      {"", "empty payload"},
      {R"({"url":"/x","visitedAt":"2023-01-01T00:00:00Z","ip":null,"userAgent":"u"})", "field 'ip' is null"},
      {"{\"url\":\"/\xff\xfe\",\"visitedAt\":\"2023-01-01T00:00:00Z\",\"ip\":\"1\",\"userAgent\":\"u\"}", "UTF-8"},
      {R"({"url":"/x\ud800","visitedAt":"2023-01-01T00:00:00Z","ip":"1","userAgent":"u"})", "not a valid string"},
      // Stray text after the object: simdjson's structural pass already rejects it.
      {R"({"url":"/x","visitedAt":"2023-01-01T00:00:00Z","ip":"1","userAgent":"u"} trailing text)",
       "payload is not a JSON object"},
      // A second object glued on is valid JSON token by token: the decoder must notice.
      {R"({"url":"/x","visitedAt":"2023-01-01T00:00:00Z","ip":"1","userAgent":"u"}{"url":"/y"})",
       "bytes after the JSON object: '{\"url\":\"/y\"}'"},
  };
  std::vector<std::string> payloads;
  for (const auto& c : cases) payloads.push_back(c.first);
  // Whitespace after the object is not an error.
  payloads.push_back("{\"url\":\"/ok\",\"visitedAt\":\"2023-01-01T00:00:00Z\",\"ip\":\"1\",\"userAgent\":\"u\"} \n\t ");
  auto b = MakeBatch(payloads);
  const std::vector<PageVisit> b_visits = PageDecoder(kAll).Decode(*b);
  ASSERT_EQ(b->failures.size(), cases.size());
  // Events with a bad url or ip stay, marked, for the projectors that need neither.
  ASSERT_EQ(b_visits.size(), 5u);
  std::vector<int64_t> partial;
  for (const PageVisit& v : b_visits) {
    EXPECT_TRUE(v.fields_ok & kFieldVisitedAt);
    if (v.fields_ok != kAll) partial.push_back(v.id);
  }
  // No url, url 12345, ip null, a lone surrogate in url. (Invalid UTF-8 anywhere makes
  // the whole payload invalid: simdjson validates the document first.)
  EXPECT_EQ(partial, (std::vector<int64_t>{4, 5, 10, 12}));
  EXPECT_EQ(b_visits.back().url, "/ok");
  EXPECT_EQ(b_visits.back().fields_ok, kAll);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(b->failures[i].event_id, static_cast<int64_t>(i + 1));
    EXPECT_EQ(b->failures[i].stage, "decoder");
    EXPECT_NE(b->failures[i].reason.find(cases[i].second), std::string::npos)
        << "payload: " << cases[i].first << "\nreason: " << b->failures[i].reason;
  }
}

// The same escaped text repeated in a batch, good and bad: each event is judged on its own
// bytes, a bad text is bad every time it comes, and the reasons come in the same order
// (whichever events came before).
TEST(Decoder, JudgesEveryRepeatOfAnEscapedTextOnItsOwn) {
  const std::string at = R"("visitedAt":"2024-01-19T12:34:56Z")";
  const std::string good = R"({"url":"\/a",)" + at + R"(,"ip":"1","userAgent":"Mo\/z"})";
  const std::string bad = R"({"url":"\/a\ud800",)" + at + R"(,"ip":"1","userAgent":"Mo\/z\q"})";
  const std::string bad_reversed = R"({"userAgent":"Mo\/z\q",)" + at + R"(,"ip":"1","url":"\/a\ud800"})";
  const std::string too_long = R"({"url":"\/)" + std::string(kMaxUrlBytes, 'y') + R"(",)" + at +
                               R"(,"ip":"\/1","userAgent":"Mo\/z"})";
  auto b = MakeBatch({good, bad, bad, good, bad_reversed, too_long, too_long,
                      R"({"url":"/a",)" + at + R"(,"ip":"1","userAgent":"Mo/z"})"});
  const std::vector<PageVisit> b_visits = PageDecoder(kAll).Decode(*b);
  ASSERT_EQ(b->failures.size(), 5u);
  const std::vector<int64_t> failed = {2, 3, 5, 6, 7};
  for (size_t i = 0; i < failed.size(); ++i) EXPECT_EQ(b->failures[i].event_id, failed[i]);
  for (size_t i : {0, 1}) {
    const std::string& r = b->failures[i].reason;
    EXPECT_NE(r.find("field 'url' is not a valid string"), std::string::npos) << r;
    EXPECT_LT(r.find("field 'url'"), r.find("field 'userAgent' is not a valid string")) << r;
  }
  // The reasons come in the order of the fields' checks (url, then ip, then userAgent),
  // whatever the payload's order.
  const std::string& reversed = b->failures[2].reason;
  EXPECT_LT(reversed.find("field 'url'"), reversed.find("field 'userAgent' is not a valid string")) << reversed;
  for (size_t i : {3, 4}) EXPECT_NE(b->failures[i].reason.find("more than the"), std::string::npos);

  ASSERT_EQ(b_visits.size(), 8u);  // every event has its visitedAt: none is dropped
  const PageVisit& first = b_visits[0];
  EXPECT_EQ(first.url, "/a");
  EXPECT_EQ(first.user_agent, "Mo/z");
  for (size_t i : {0, 3, 7}) {  // escaped or not, the same texts and the same ids
    EXPECT_EQ(b_visits[i].fields_ok, kAll) << i;
    EXPECT_EQ(b_visits[i].url, "/a");
    EXPECT_EQ(b_visits[i].user_agent, "Mo/z");
    EXPECT_EQ(b_visits[i].url_id, first.url_id);
    EXPECT_EQ(b_visits[i].visitor_id, first.visitor_id);
  }
  for (size_t i : {1, 2, 4}) EXPECT_EQ(b_visits[i].fields_ok, kFieldVisitedAt | kFieldIp) << i;
  for (size_t i : {5, 6}) {  // the URL is refused; the visitor ("/1", "Mo/z") is a new one
    EXPECT_EQ(b_visits[i].fields_ok, kAll & ~kFieldUrl) << i;
    EXPECT_EQ(b_visits[i].ip, "/1");
    EXPECT_NE(b_visits[i].visitor_id, first.visitor_id);
  }
  EXPECT_EQ(b_visits[5].visitor_id, b_visits[6].visitor_id);
}

TEST(Decoder, ReadsOnlyTheFieldsItIsAskedFor) {
  // visits_per_day alone needs visitedAt only: a missing url does not fail it.
  auto b = MakeBatch({R"({"visitedAt":"2023-01-01T00:00:00Z","raw":{"nested":[1,2,3]}})"});
  const std::vector<PageVisit> b_visits = PageDecoder(kFieldVisitedAt).Decode(*b);
  ASSERT_EQ(b_visits.size(), 1u);
  EXPECT_TRUE(b_visits[0].url.empty());
  auto c = MakeBatch({R"({"visitedAt":"2023-01-01T00:00:00Z"})"});
  const std::vector<PageVisit> c_visits = PageDecoder(kFieldVisitedAt | kFieldUrl).Decode(*c);
  EXPECT_EQ(c->failures.size(), 1u);
  ASSERT_EQ(c_visits.size(), 1u);
  EXPECT_EQ(c_visits[0].fields_ok, kFieldVisitedAt);
  // A payload that breaks off after visitedAt is unusable for everyone.
  auto d = MakeBatch({R"({"visitedAt":"2023-01-01T00:00:00Z","url":"/x","ip":)"});
  const std::vector<PageVisit> d_visits = PageDecoder(kFieldVisitedAt).Decode(*d);
  EXPECT_EQ(d->failures.size(), 1u);
  EXPECT_TRUE(d_visits.empty());
}

}  // namespace
}  // namespace rw
