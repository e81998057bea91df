#include "pipeline/stress/questions.h"

namespace rw {

const std::vector<QuestionRow>& Questions() {
  static const std::vector<QuestionRow> kQuestions = {
      {1, "aggregate load time vs stream length", MakeAggregateLoad},
      {2, "snapshot + tail vs full replay", MakeSnapshots},
      {3, "projection rebuild across volumes", MakeRebuild},
      {4, "appends by concurrent writers", MakeAppends},
      {0, "your event table", MakeYourTable},
  };
  return kQuestions;
}

}  // namespace rw
