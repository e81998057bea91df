// The blog's `PageVisited` event as its compiled read models read it: the fields they bind in
// the run's catalog (PageFields), and one record's view (PageVisit).
//
// Nothing here decodes: the decoder (stages/flow/decoder.h) fills every record's values from
// the catalog. What the compiled read models need beyond a declared one is asked of the
// catalog, not written into the stages: `visitedAt` checked as an ISO-8601 timestamp (an
// event without it is no visit), `url`, `ip` and `userAgent` checked as strings (the url of
// at most kMaxUrlBytes), each failed check recorded once per event by the decoder; the url
// and the visitor (ip, userAgent) keyed by run-wide dense ids.
//
// Thread safety: PageFields is written by Bind() before the run, then only read.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/civil_time.h"
#include "base/event_id.h"
#include "projectors/event_record.h"

namespace rw {

// The payload fields a compiled read model can ask for; `visitedAt` is always read.
enum Field : uint32_t {
  kFieldVisitedAt = 1u << 0,
  kFieldUrl = 1u << 1,
  kFieldIp = 1u << 2,
  kFieldUserAgent = 1u << 3,
};

// The longest URL rewind stores (the URL tables' column holds up to 16 MiB; one row must
// also fit a statement). A longer one is a failure of that event's URL, never cut.
inline constexpr size_t kMaxUrlBytes = 1 << 20;

// One record of the page class, as a compiled read model sees it. A view: its strings point
// into the batch that carries the record.
struct PageVisit {
  EventId id = 0;
  CivilTime visited_at{};    // wall-clock time as written, offset ignored
  std::string_view url;      // empty unless kFieldUrl was bound and is usable
  std::string_view ip;
  std::string_view user_agent;
  // Dense run-wide ids (0, 1, 2...): equal bytes have equal ids and different bytes
  // different ids, for the whole run: of the url, and of the pair (ip, user agent).
  uint32_t url_id = 0;
  uint32_t visitor_id = 0;
  // The bound fields that were present and well-formed (visitedAt's bit: the event is usable).
  uint32_t fields_ok = 0;
};

// The slots and checks of the page class's fields a compiled read model reads.
class PageFields {
 public:
  static constexpr uint32_t kNone = ~uint32_t{0};

  // Registers the page class (the catalog's default class) and the fields `fields` names.
  void Bind(EventCatalog& catalog, uint32_t fields) {
    fields_ = fields | kFieldVisitedAt;
    page_class_ = catalog.ClassIndex(catalog.default_class());
    catalog.WantRecords(page_class_);
    at_ = catalog.Slot(FieldSource{false, "visitedAt"});
    at_check_ = catalog.Check(page_class_, at_, FieldCheck{.iso_time = true, .required = true});
    needed_ = at_check_;
    if (fields_ & kFieldUrl) {
      url_ = catalog.Slot(FieldSource{false, "url"});
      catalog.WantRunWide(url_);
      url_check_ = catalog.Check(page_class_, url_, FieldCheck{.max_bytes = kMaxUrlBytes});
      needed_ |= url_check_;
    }
    if (fields_ & (kFieldIp | kFieldUserAgent)) {
      ip_ = catalog.Slot(FieldSource{false, "ip"});
      user_agent_ = catalog.Slot(FieldSource{false, "userAgent"});
      ip_check_ = catalog.Check(page_class_, ip_, FieldCheck{});
      user_agent_check_ = catalog.Check(page_class_, user_agent_, FieldCheck{});
      needed_ |= ip_check_ | user_agent_check_;
      visitor_ = catalog.PairSlot(ip_, user_agent_);
    }
  }

  uint16_t page_class() const { return page_class_; }
  bool reads_class(uint16_t c) const { return c == page_class_; }
  // Whether a record of the page class has every field bound (else it counts as failed).
  bool Usable(const EventRecord& e) const { return e.decoded && (e.failed_checks & needed_) == 0; }
  uint32_t at() const { return at_; }
  uint32_t url() const { return url_; }
  uint32_t visitor() const { return visitor_; }

  // The view of a record of the page class (tests and tools; the read models read slots).
  PageVisit View(const EventRecords& records, const EventRecord& e) const {
    PageVisit v;
    v.id = e.id;
    if (!e.decoded || (e.failed_checks & at_check_)) return v;
    v.fields_ok = kFieldVisitedAt;
    v.visited_at = records.value(e, at_).time;
    if (url_ != kNone && !(e.failed_checks & url_check_)) {
      v.fields_ok |= kFieldUrl;
      v.url = records.value(e, url_).text();
      v.url_id = records.value(e, url_).text_id - 1;
    }
    if (ip_ != kNone) {
      if (!(e.failed_checks & ip_check_)) v.fields_ok |= kFieldIp, v.ip = records.value(e, ip_).text();
      if (!(e.failed_checks & user_agent_check_)) {
        v.fields_ok |= kFieldUserAgent;
        v.user_agent = records.value(e, user_agent_).text();
      }
      if ((v.fields_ok & (kFieldIp | kFieldUserAgent)) == (kFieldIp | kFieldUserAgent)) {
        v.visitor_id = records.value(e, visitor_).text_id - 1;
      }
    }
    return v;
  }

 private:
  uint32_t fields_ = kFieldVisitedAt;
  uint16_t page_class_ = 0;
  uint32_t at_ = kNone, url_ = kNone, ip_ = kNone, user_agent_ = kNone, visitor_ = kNone;
  uint8_t at_check_ = 0, url_check_ = 0, ip_check_ = 0, user_agent_check_ = 0;
  uint8_t needed_ = 0;  // the checks a record must pass
};

}  // namespace rw
