// RunSpec: one run of read models, made once by the command from its options and checked
// there (Make returns the first problem, before any work). Everything below the command
// (the replay application's build, its finishers and segments, verify, the dry run, list
// and status, stress's rebuilds) takes the spec, never the command line's options: only the
// option table (config/options.h) and the command files (pipeline/commands.cc,
// pipeline/replay/replay_command.*) name the command's options struct.
//
// It keeps the option parts a run reads, as parsed (the server, the event table, reading,
// the replay's and the controls' choices, output), and what Make resolves once:
//  - `known`: every read model the run knows, the compiled ones then those declared in
//    --models (the file is read here, once: a segment's catch-up or a verify makes fresh
//    instances from these factories, never parsing it again);
//  - `selected`: the ones it rebuilds, named or --all's (Make refuses names it does not
//    know, and a selection that is both or neither, as the command asks);
//  - the event table's id form (one question to the server, base/id_form.h), so that the
//    build, the reader and the messages agree without asking again.
// A segment's catch-up is spec.ForSegment(...): the same run narrowed to one read model's
// segment, built only, resumed, up to a head, quiet.
//
// Thread safety: a value, copied freely; read-only once made (every reader holds it const),
// so thread-safe to read.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/options.h"
#include "projectors/projector.h"
#include "projectors/segment.h"

namespace rw {

struct RunSpec : ServerPart, EventTablePart, ReadingPart, ReplayPart, ControlPart, OutputPart {
  // What the command asks of the names it was given.
  enum class Selection {
    kNone,         // list, status: the read models the run knows, none selected
    kRequired,     // replay: names or --all, one of them
    kAllIfNone,    // verify: the names, or every read model when none is named
  };
  // `parts`: the option parts as parsed (PartsOf<RunSpec>, config/options.h), `names` the
  // read models named on the command line.
  static Result<RunSpec> Make(RunSpec parts, const std::vector<std::string>& names, Selection selection);

  std::vector<ProjectorInfo> known;
  std::vector<ProjectorInfo> selected;

  // Fresh instances of the selected read models, in the order of `known`.
  std::vector<std::unique_ptr<Projector>> MakeSelected() const;
  // The known read model named `name`, or nullptr.
  const ProjectorInfo* Known(const std::string& name) const;
  // The catch-up of segment `segment` of the read model `model` up to `head`: a build only,
  // resumed, of that one read model, never followed, quiet.
  RunSpec ForSegment(const std::string& model, const Segment& segment, EventId head) const;
};

// Whether `--all` takes `info`: every read model without --models; with it, the declared
// ones, and the compiled ones (the blog's, reading its PageVisited events) only on the
// blog's own event table (elsewhere their tables would be made, empty, in the
// application's database). `rewind list` lists what --all takes.
bool InAll(const RunSpec& spec, const ProjectorInfo& info);

}  // namespace rw
