// A read model of handlers (issue 53, part 3): the application's own projector as SQL, one
// statement per event class, run in id order with each event's values bound. Apply queues
// each event's statements with their values (the decoder already read the payload paths
// and columns its parameters name); a flush runs them (stages/flow/flush_writer.h), grouped
// into bulk executions of consecutive events of one statement.
//
// Thread safety: none (see projector.h).
#include <fmt/core.h>

#include <charconv>

#include "projectors/declared.h"

namespace rw {
namespace {

const char* KindText(ValueKind k) { return k == ValueKind::kObject ? "an object" : "an array"; }

// Whether `text` (a JSON number's literal) is an integer that fits 64 bits.
bool IsInt64(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size();
}

class HandlersProjector final : public Projector, OrderDependent, RunsStatements, HandsOver {
 public:
  explicit HandlersProjector(ModelPlan plan) : plan_(std::move(plan)), version_(PlanVersion(plan_)) {
    table_.name = plan_.name;
    table_.by_statements = true;
    for (const HandlerPlan& h : plan_.handlers) {
      for (const HandlerParam& p : h.params) {
        reads_payload_ = reads_payload_ || (p.kind == HandlerParam::Kind::kField && !p.source.column);
      }
    }
    for (const Condition& c : plan_.conditions) reads_payload_ = reads_payload_ || !c.source.column;
  }

  std::string_view name() const override { return plan_.name; }
  const TableSpec& table() const override { return table_; }
  std::string version() const override { return version_; }
  std::string origin() const override { return plan_.origin; }
  std::string hand_over() const override { return plan_.hand_over; }
  const HandsOver* hands_over() const override { return this; }
  // Its statements see the table as every earlier event left it: id order, held above an
  // open hole. Its state is all in its table: a resume continues it.
  const OrderDependent* order_dependent() const override { return this; }
  bool resumes() const override { return true; }
  RunsStatements* runs_statements() override { return this; }
  bool reads_payload() const override { return reads_payload_; }
  std::vector<ColumnIn> where() const override { return plan_.where; }

  void Bind(EventCatalog& catalog) override {
    by_class_.clear();
    slots_.assign(plan_.handlers.size(), {});
    for (size_t i = 0; i < plan_.handlers.size(); ++i) {
      const HandlerPlan& h = plan_.handlers[i];
      const uint16_t c = catalog.ClassIndex(h.on);
      catalog.WantRecords(c);
      if (by_class_.size() <= c) by_class_.resize(c + 1u);
      by_class_[c].push_back(i);
      for (const HandlerParam& p : h.params) {
        slots_[i].push_back(p.kind == HandlerParam::Kind::kField ? catalog.Slot(p.source) : 0);
      }
    }
    condition_slots_.clear();
    for (const Condition& c : plan_.conditions) condition_slots_.push_back(catalog.Slot(c.source));
  }

  bool reads_class(uint16_t c) const override { return c < by_class_.size() && !by_class_[c].empty(); }

  bool Selects(const EventRecords& records, const EventRecord& e) const override {
    return reads_class(e.event_class) && AllHold(plan_.conditions, condition_slots_, records, e);
  }

  Folded Apply(const EventRecords& records, std::vector<EventFailure>& failures) override {
    Folded folded;
    for (const EventRecord& e : records.events) {
      if (!reads_class(e.event_class)) continue;
      if (!Usable(e)) {
        ++folded.events;
        ++folded.unusable;
        continue;
      }
      if (!Selects(records, e)) continue;
      ++folded.events;
      // Every parameter of every statement of the event is read before any is queued: an
      // event runs wholly or not at all.
      std::string reason;
      for (size_t h : by_class_[e.event_class]) {
        const HandlerPlan& plan = plan_.handlers[h];
        for (size_t p = 0; p < plan.params.size() && reason.empty(); ++p) {
          if (plan.params[p].kind != HandlerParam::Kind::kField) continue;
          const FieldValue& v = records.value(e, slots_[h][p]);
          if (v.kind == ValueKind::kObject || v.kind == ValueKind::kArray) {
            reason = fmt::format("handler on '{}' at {}: parameter {} is {}; a statement binds numbers, strings, "
                                 "booleans and null",
                                 plan.on, Origin(plan), plan.params[p].written, KindText(v.kind));
          }
        }
      }
      if (!reason.empty()) {
        failures.push_back({e.id, std::move(reason)});
        continue;
      }
      for (size_t h : by_class_[e.event_class]) Queue(h, records, e);
    }
    return folded;
  }

  size_t pending_rows() const override { return queued_; }
  size_t state_bytes() const override {
    size_t bytes = 0;
    for (const BoundStatements& g : groups_) {
      bytes += sizeof(g) + g.sql.capacity() + g.ids.capacity() * sizeof(EventId) +
               g.values.capacity() * sizeof(BoundStatements::Value) + g.bytes.capacity();
    }
    return bytes;
  }
  void Flush(RowSink& /*sink*/) override {}  // its statements are taken by TakeStatements

  std::vector<BoundStatements> TakeStatements() override {
    std::vector<BoundStatements> out = std::move(groups_);
    groups_.clear();
    queued_ = 0;
    last_handler_ = SIZE_MAX;
    return out;
  }

  std::vector<Handler> handlers() const override {
    std::vector<Handler> out;
    for (const HandlerPlan& h : plan_.handlers) {
      Handler handler{h.on, h.sql, h.prepared, Origin(h), h.params.size(), {}};
      for (const HandlerParam& p : h.params) {
        if (p.kind == HandlerParam::Kind::kField && p.source.column) handler.columns.push_back(p.source.name);
      }
      out.push_back(std::move(handler));
    }
    return out;
  }

 private:
  std::string Origin(const HandlerPlan& h) const {
    const std::string file = plan_.origin.substr(0, plan_.origin.rfind(':'));
    return fmt::format("{}:{}", file, h.line);
  }

  // The value a parameter binds: its type and bytes.
  static BoundStatements::Type TypeOf(const FieldValue& v) {
    switch (v.kind) {
      case ValueKind::kTrue:
      case ValueKind::kFalse: return BoundStatements::Type::kInt;
      case ValueKind::kNumber: {
        const std::string_view t = v.text();
        if (IsInt64(t)) return BoundStatements::Type::kInt;
        const bool exponent = t.find_first_of("eE") != std::string_view::npos;
        return exponent ? BoundStatements::Type::kDouble : BoundStatements::Type::kDecimal;
      }
      case ValueKind::kString: return BoundStatements::Type::kText;
      default: return BoundStatements::Type::kNull;
    }
  }

  // Queues handler h's statement for `e`, in the group of the statement before it when it
  // is the same statement and each value's type is that parameter's there (null fits any).
  // The values' bytes go straight into the group (no copy per event).
  void Queue(size_t h, const EventRecords& records, const EventRecord& e) {
    const HandlerPlan& plan = plan_.handlers[h];
    const size_t width = plan.params.size();
    types_.clear();
    id_text_.clear();
    for (size_t p = 0; p < width; ++p) {
      if (plan.params[p].kind == HandlerParam::Kind::kEventId) {
        if (id_text_.empty()) id_text_ = IdText(e.id);
        types_.push_back(IsInt64(id_text_) ? BoundStatements::Type::kInt : BoundStatements::Type::kDecimal);
      } else {
        types_.push_back(TypeOf(records.value(e, slots_[h][p])));
      }
    }
    BoundStatements* group = groups_.empty() || last_handler_ != h ? nullptr : &groups_.back();
    for (size_t p = 0; group != nullptr && p < width; ++p) {
      const BoundStatements::Type want = group->types[p], have = types_[p];
      if (want != have && want != BoundStatements::Type::kNull && have != BoundStatements::Type::kNull) group = nullptr;
    }
    if (group == nullptr) {
      groups_.emplace_back();
      group = &groups_.back();
      group->sql = plan.prepared;
      group->origin = Origin(plan);
      group->width = width;
      group->types.assign(width, BoundStatements::Type::kNull);
      last_handler_ = h;
    }
    for (size_t p = 0; p < width; ++p) {
      std::string_view bytes = id_text_;
      if (plan.params[p].kind != HandlerParam::Kind::kEventId) {
        const FieldValue& v = records.value(e, slots_[h][p]);
        bytes = v.kind == ValueKind::kTrue ? "1" : v.kind == ValueKind::kFalse ? "0" : v.text();
      }
      if (types_[p] == BoundStatements::Type::kNull) bytes = {};
      if (group->types[p] == BoundStatements::Type::kNull) group->types[p] = types_[p];
      group->values.push_back({types_[p], static_cast<uint32_t>(group->bytes.size()), static_cast<uint32_t>(bytes.size())});
      group->bytes += bytes;
    }
    group->ids.push_back(e.id);
    ++queued_;
  }

  const ModelPlan plan_;
  const std::string version_;
  TableSpec table_;
  bool reads_payload_ = false;
  std::vector<std::vector<size_t>> by_class_;    // by class index: its handlers, in order
  std::vector<std::vector<uint32_t>> slots_;      // by handler, by parameter
  std::vector<uint32_t> condition_slots_;         // by plan_.conditions
  std::vector<BoundStatements> groups_;           // queued, in id order
  size_t last_handler_ = SIZE_MAX;                // the handler of groups_.back()
  size_t queued_ = 0;
  std::vector<BoundStatements::Type> types_;  // Queue's scratch: this event's value types
  std::string id_text_;                      // ...and its id's text
};

}  // namespace

std::unique_ptr<Projector> MakeHandlersProjector(ModelPlan plan) {
  return std::make_unique<HandlersProjector>(std::move(plan));
}

}  // namespace rw
