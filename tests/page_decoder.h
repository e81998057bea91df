// Tests' view of the blog's PageVisited events as its compiled read models see them: a
// decoder bound to the fields they read (PageFields), and the visits of a decoded batch.
#pragma once

#include <memory>
#include <vector>

#include "projectors/page_visit.h"
#include "stages/flow/decoder.h"

namespace rw {

class PageDecoder {
 public:
  explicit PageDecoder(uint32_t fields) {
    EventCatalog catalog;
    page_.Bind(catalog, fields);
    decoder_ = std::make_unique<Decoder>(catalog);
  }
  // Decodes `batch` and returns its visits with a usable visitedAt (the others are no visits).
  std::vector<PageVisit> Decode(Batch& batch) const {
    decoder_->Decode(batch);
    return Visits(batch);
  }
  std::vector<PageVisit> Visits(const Batch& batch) const {
    std::vector<PageVisit> visits;
    const EventRecords view{batch.records, batch.values, batch.width};
    for (const EventRecord& r : batch.records) {
      const PageVisit v = page_.View(view, r);
      if (v.fields_ok & kFieldVisitedAt) visits.push_back(v);
    }
    return visits;
  }

 private:
  PageFields page_;
  std::unique_ptr<Decoder> decoder_;
};

}  // namespace rw
