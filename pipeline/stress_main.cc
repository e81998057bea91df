// rewind-stress: `rewind stress`, a program of its own (the rebuild binary does not link the
// stress harness); rewind runs it with its own arguments. Run on its own,
// `rewind-stress --quick` is `rewind stress --quick`.
#include <fmt/core.h>

#include "pipeline/entry.h"
#include "pipeline/stress/stress.h"

namespace {

int RunStress(const rw::CommandLine& cl, const rw::CommandContext& c) {
  using namespace rw;
  if (!cl.names.empty()) {
    fmt::print(stderr, "rewind: stress takes no names (its options: {})\n", FlagsOf(OptionGroup::kStress));
    return exit_code::kUsage;
  }
  StressOptions o = OptionsFor<StressOptions>(cl.options);
  o.your_models_file = cl.options.models_file;  // --models: the user's read models for their table
  return StressCommand(o, c.stop, c.out);
}

}  // namespace

int main(int argc, char** argv) { return rw::ProgramMain(argc, argv, "stress", RunStress); }
