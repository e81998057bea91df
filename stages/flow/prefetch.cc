#include "stages/flow/prefetch.h"

#include <algorithm>

namespace rw {

Prefetch::Prefetch(size_t batch_size, bool sparse, std::function<void(Connection&, EventPage&)> read,
                   std::function<void(EventPage&)> start)
    : batch_size_(batch_size),
      read_page_(std::move(read)),
      start_page_(std::move(start)),
      span_(sparse ? EventId(1) << 126 : static_cast<EventId>(batch_size)),
      widest_(sparse ? EventId(1) << 126 : EventId(1) << 65) {}

Prefetch::~Prefetch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  wake_.notify_all();
  for (Worker& w : workers_) w.thread.join();
}

void Prefetch::StartWorkers(const std::vector<Connection*>& connections) {
  workers_.resize(connections.size());
  for (size_t i = 0; i < workers_.size(); ++i) workers_[i].connection = connections[i];
  for (size_t i = 0; i < workers_.size(); ++i) {
    workers_[i].thread = std::thread([this, i] {
      for (;;) {
        EventPage* page = nullptr;
        {
          std::unique_lock<std::mutex> lock(mu_);
          wake_.wait(lock, [&] { return quit_ || workers_[i].page != nullptr; });
          if (workers_[i].page == nullptr) return;  // quit, and idle
          page = workers_[i].page;
        }
        read_page_(*workers_[i].connection, *page);
        {
          std::lock_guard<std::mutex> lock(mu_);
          page->done = true;
          workers_[i].page = nullptr;
        }
        read_.notify_all();
      }
    });
  }
}

void Prefetch::WaitForStarted() {
  std::unique_lock<std::mutex> lock(mu_);
  read_.wait(lock, [&] {
    for (const auto& p : pages_) {
      if (p->started && !p->done) return false;
    }
    return true;
  });
}

void Prefetch::Stop() {
  WaitForStarted();  // every worker is idle
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  wake_.notify_all();
  for (Worker& w : workers_) w.thread.join();
  workers_.clear();
  quit_ = false;
}

// A range wider than the span now (the rest of a page cut at the batch, or a span that
// shrank) is split first.
void Prefetch::StartPages() {
  bool started = false;
  for (size_t i = 0; i < std::min(pages_.size(), workers_.size()); ++i) {
    EventPage& page = *pages_[i];
    if (page.started) continue;
    // The idle worker after the one that got the last page, in turn: with one page read ahead
    // (two connections), both are idle whenever a page starts, and the first would take them
    // all; the connections may be on several replicas (reader.h), which should share them.
    Worker* idle = nullptr;
    for (size_t k = 0; k < workers_.size() && idle == nullptr; ++k) {
      Worker& w = workers_[(next_worker_ + k) % workers_.size()];
      if (w.page == nullptr) {
        idle = &w;
        next_worker_ = (next_worker_ + k + 1) % workers_.size();
      }
    }
    if (idle == nullptr) break;
    if (page.hi - page.lo > span_) pages_.insert(pages_.begin() + static_cast<long>(i) + 1, SplitOff(page, page.lo + span_));
    page.limit = batch_size_;
    start_page_(page);
    page.started = true;
    idle->page = &page;
    started = true;
  }
  if (started) wake_.notify_all();
}

std::unique_ptr<EventPage> Prefetch::SplitOff(EventPage& page, EventId at) {
  auto rest = std::make_unique<EventPage>();
  rest->lo = at;
  rest->hi = page.hi;
  page.hi = at;
  return rest;
}

std::unique_ptr<EventPage> Prefetch::Next(EventId after, EventId head, const std::vector<Connection*>& connections) {
  if (workers_.empty()) StartWorkers(connections);
  if (pages_.empty()) planned_to_ = after;  // the pages cover (after, planned_to_]
  // Plan one page per connection; start them as connections are free; wait for the first.
  while (pages_.size() < workers_.size() && planned_to_ < head) {
    auto page = std::make_unique<EventPage>();
    page->lo = planned_to_;
    page->hi = head - planned_to_ <= span_ ? head : planned_to_ + span_;
    planned_to_ = page->hi;
    pages_.push_back(std::move(page));
  }
  std::unique_ptr<EventPage> front;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      StartPages();
      if (pages_.front()->done) break;
      read_.wait(lock);
    }
    front = std::move(pages_.front());
    pages_.pop_front();
  }
  const bool cut = front->status.ok() && front->batch->rows_read >= front->limit && front->last_id < front->hi;
  if (cut) pages_.push_front(SplitOff(*front, front->last_id));  // the rest is the next page
  if (front->status.ok()) Learn(*front);
  return front;
}

// The span that holds about a batch: from this page's density, nine tenths of it (so that
// few ranges are cut), growing fourfold over a range with no event at all, up to the whole
// range of ids (a denser range than it guessed is cut at the batch). Never beyond widest_, and
// never overflowing on the way (a ULID range is 2^80 ids to a millisecond).
void Prefetch::Learn(const EventPage& page) {
  const EventId width = page.hi - page.lo;
  const auto rows = static_cast<EventId>(page.batch->rows_read);
  const EventId n = static_cast<EventId>(batch_size_);
  EventId next = widest_;
  if (rows == 0) {
    if (span_ < widest_ / 4) next = span_ * 4;
  } else if (width / rows < widest_ / (n * 9)) {
    next = std::max<EventId>(1, width / rows * n * 9 / 10 + (width % rows) * n * 9 / (rows * 10));
  }
  span_ = std::min<EventId>(std::max<EventId>(next, n), widest_);
}

}  // namespace rw
