// The progress line: percent of the id range, counts, the slowest read model, the phase;
// fitted to the terminal's width, redrawn in place, and the write phase shown as its own.
#include "stages/control/progress.h"

#include "stages/control/console.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace rw {
namespace {

// Display columns of `s`, counted here independently of progress.cc: one per UTF-8 code
// point (every test string below is narrow: no wide or combining characters).
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// What a Progress wrote to its stream, captured with open_memstream.
class Captured {
 public:
  Captured() : f_(open_memstream(&buf_, &size_)) {}
  ~Captured() {
    if (f_) std::fclose(f_);
    std::free(buf_);
  }
  std::FILE* file() { return f_; }
  std::string text() {
    std::fflush(f_);
    return std::string(buf_, size_);
  }

 private:
  char* buf_ = nullptr;
  size_t size_ = 0;
  std::FILE* f_;
};

TEST(Progress, LineReportsPercentEventsAndTheSlowestReadModel) {
  Progress p(ProgressMode::kQuiet, 1000, 3000, {"visits_per_day", "sessions_per_day"});
  p.Done(500, 1500);
  p.Position(0, 2000);
  p.Position(1, 1500);
  const std::string line = p.Line(/*bar=*/true);
  EXPECT_NE(line.find(" 25.0%"), std::string::npos) << line;
  EXPECT_NE(line.find("500 events"), std::string::npos) << line;
  EXPECT_NE(line.find("slowest: sessions_per_day at id 1,500"), std::string::npos) << line;
  EXPECT_NE(line.find("[######.................."), std::string::npos) << line;
  EXPECT_EQ(p.events_done(), 500u);
}

TEST(Progress, ShowsThePhaseOnceReadingIsOver) {
  Progress p(ProgressMode::kQuiet, 0, 100, {"visits_per_day"});
  p.Done(100, 100);
  p.SetPhase("all events read; writing the read models");
  const std::string line = p.Line(false);
  EXPECT_NE(line.find("writing the read models"), std::string::npos) << line;
  EXPECT_EQ(line.find("slowest"), std::string::npos) << line;
}

// The write phase does not pose as the end of the reading: no percent, no ETA it cannot
// compute; its own elapsed time, and what the reading did.
TEST(Progress, TheWritePhaseShowsItsOwnElapsedTimeNotAPercentOrAnEta) {
  Progress p(ProgressMode::kQuiet, 0, 1000, {"visits_per_day"});
  p.Done(990, 990);
  const std::string reading = p.Line(true);
  EXPECT_NE(reading.find("99.0%"), std::string::npos) << reading;
  EXPECT_NE(reading.find("ETA"), std::string::npos) << reading;
  p.SetPhase("all events read; writing the read models");
  for (bool bar : {true, false}) {
    const std::string line = p.Line(bar);
    EXPECT_EQ(line.find('%'), std::string::npos) << line;
    EXPECT_EQ(line.find("ETA"), std::string::npos) << line;
    EXPECT_EQ(line.find('['), std::string::npos) << "no bar: it would claim a fraction: " << line;
    EXPECT_EQ(line.rfind("write phase 0:00:0", 0), 0u) << line;
    EXPECT_NE(line.find("all events read; writing the read models"), std::string::npos) << line;
    EXPECT_NE(line.find("990 events read in 0:00:0"), std::string::npos) << line;
    EXPECT_NE(line.find("ev/s"), std::string::npos) << line;
  }
  // The phase that ends it keeps counting the same write phase (it does not start at 0
  // again), and the reading's figures stay.
  // A note (a cap, a throttle) concerns the reading: in the write phase it goes before
  // what the reading did.
  p.SetNote("cap 5,000 events/s");
  const std::string with_note = p.Line(false);
  ASSERT_NE(with_note.find("[cap 5,000 events/s]"), std::string::npos) << with_note;
  const std::string short_of_note = p.Line(false, static_cast<int>(Columns(with_note)) - 3);
  EXPECT_NE(short_of_note.find("990 events read in 0:00:0"), std::string::npos) << short_of_note;
  EXPECT_NE(short_of_note.find(" ev/s"), std::string::npos) << short_of_note;
  EXPECT_EQ(short_of_note.find("[cap 5,000 events/s]"), std::string::npos) << short_of_note;
  p.SetNote("");
  // Too narrow for the phase's text: its clock stays, the text is what is shortened.
  const std::string narrow = p.Line(false, 40);
  EXPECT_EQ(narrow.rfind("write phase 0:00:0", 0), 0u) << narrow;
  EXPECT_NE(narrow.find("all events read"), std::string::npos) << narrow;
  p.SetPhase("read models written");
  const std::string done = p.Line(false);
  EXPECT_EQ(done.rfind("write phase 0:00:0", 0), 0u) << done;
  EXPECT_NE(done.find("read models written"), std::string::npos) << done;
  EXPECT_NE(done.find("990 events read"), std::string::npos) << done;
}

TEST(Progress, NoLineIsWiderThanTheTerminalLessOneColumn) {
  Progress p(ProgressMode::kQuiet, 0, 2'000'000,
             {"visits_per_day", "a_read_model_with_a_rather_long_name_indeed"});
  p.Done(1'234'567, 1'234'567);
  p.Position(0, 1'500'000);
  p.Position(1, 1'234'567);
  p.SetNote("cap 5,000 events/s; throttled: threads_running 57 > 40");
  for (int width = 1; width <= 200; ++width) {
    for (bool bar : {true, false}) {
      const std::string line = p.Line(bar, width);
      EXPECT_LE(Columns(line), static_cast<size_t>(std::max(width - 1, 0)))
          << "width " << width << ": " << line;
    }
  }
  p.SetPhase("all events read; writing the read models");
  for (int width = 1; width <= 200; ++width) {
    const std::string line = p.Line(true, width);
    EXPECT_LE(Columns(line), static_cast<size_t>(std::max(width - 1, 0)))
        << "width " << width << ": " << line;
  }
}

// Display columns, not bytes: a read model's name (from a models file) can be non-ASCII.
TEST(Progress, CountsDisplayColumnsNotBytesAndCutsOnlyWholeCharacters) {
  Progress p(ProgressMode::kQuiet, 0, 100, {"visites_journalières_éèêëàâäôöûü"});
  p.Done(10, 10);
  p.Position(0, 10);
  p.Stop();  // freezes the clock: every line below shows the same rate
  const std::string full = p.Line(false);
  ASSERT_GT(full.size(), Columns(full)) << "the test needs a multi-byte name";
  // Room for all of it in columns, though not in bytes: nothing is shortened.
  const std::string fits = p.Line(false, static_cast<int>(Columns(full)) + 1);
  EXPECT_EQ(fits, full);
  for (int width = 1; width <= static_cast<int>(Columns(full)) + 1; ++width) {
    const std::string line = p.Line(false, width);
    EXPECT_LE(Columns(line), static_cast<size_t>(std::max(width - 1, 0))) << line;
    // No character cut in half: the text stays valid UTF-8 (every lead byte has its
    // continuation bytes).
    for (size_t i = 0; i < line.size();) {
      const unsigned char c = static_cast<unsigned char>(line[i]);
      const size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      ASSERT_LE(i + len, line.size()) << "width " << width << ": " << line;
      for (size_t k = 1; k < len; ++k) {
        ASSERT_EQ(static_cast<unsigned char>(line[i + k]) & 0xC0, 0x80)
            << "width " << width << ": " << line;
      }
      i += len;
    }
  }
}

// Narrower terminals lose the tail first: the per-read-model detail, then the note; the
// percent, the rate and the ETA stay as long as they fit at all.
TEST(Progress, ShortensTheTailFirstAndKeepsPercentRateAndEta) {
  Progress p(ProgressMode::kQuiet, 0, 1000, {"visits_per_day"});
  p.Done(250, 250);
  p.Position(0, 250);
  p.SetNote("cap 5,000 events/s");
  p.Stop();  // freezes the clock: every line below shows the same rate
  const std::string full = p.Line(true);
  ASSERT_NE(full.find("slowest: visits_per_day at id 250"), std::string::npos) << full;
  ASSERT_NE(full.find("[cap 5,000 events/s]"), std::string::npos) << full;
  const int full_width = static_cast<int>(Columns(full)) + 1;
  EXPECT_EQ(p.Line(true, full_width), full);

  // A few columns short: the detail is shortened (or dropped), the note kept whole.
  const std::string less = p.Line(true, full_width - 5);
  EXPECT_NE(less.find("[cap 5,000 events/s]"), std::string::npos) << less;
  EXPECT_EQ(less.find("slowest: visits_per_day at id 250"), std::string::npos) << less;

  // Narrower still: the detail goes before the note is touched.
  bool saw_note_without_detail = false;
  for (int width = full_width; width > 20; --width) {
    const std::string line = p.Line(true, width);
    const bool detail = line.find("slowest") != std::string::npos;
    const bool whole_note = line.find("[cap 5,000 events/s]") != std::string::npos;
    if (detail) {
      EXPECT_TRUE(whole_note) << "width " << width
                              << ": the note shortened before the detail: " << line;
    }
    if (!detail && whole_note) saw_note_without_detail = true;
  }
  EXPECT_TRUE(saw_note_without_detail);

  // At a narrow 40 columns: no tail at all, but percent, rate and ETA.
  const std::string narrow = p.Line(true, 40);
  EXPECT_EQ(narrow.find("slowest"), std::string::npos) << narrow;
  EXPECT_EQ(narrow.find("cap"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("25.0%"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("ev/s"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("ETA"), std::string::npos) << narrow;
}

// The detail keeps the slowest read model's name longer than its id: the name says which
// one to look at.
TEST(Progress, TheSlowestReadModelsIdGoesBeforeItsName) {
  Progress p(ProgressMode::kQuiet, 0, 2'000'000, {"visits_per_minute"});
  p.Done(1'000'000, 1'000'000);
  p.Position(0, 1'166'070);
  p.SetNote("cap 50,000 events/s");
  p.Stop();  // freezes the clock
  const std::string full = p.Line(true);
  ASSERT_NE(full.find("slowest: visits_per_minute at id 1,166,070"), std::string::npos) << full;
  const std::string shorter = p.Line(true, static_cast<int>(Columns(full)) - 3);
  EXPECT_NE(shorter.find("slowest: visits_per_minute  [cap 50,000 events/s]"), std::string::npos)
      << shorter;
}

// The ETA is rounded up: it never says 0:00:00 while events are left to read.
TEST(Progress, TheEtaIsNeverZeroBeforeTheEnd) {
  Progress p(ProgressMode::kQuiet, 0, 1000, {"visits_per_day"});
  p.Done(999, 999);
  p.Stop();  // a clock frozen a moment after the start: any ETA computed is well under 1 s
  const std::string line = p.Line(false);
  EXPECT_NE(line.find("ETA 0:00:01"), std::string::npos) << line;
}

// On a terminal: carriage return, the line, erase to the end of the line; and the width
// the screen reports.
TEST(Progress, RedrawsInPlaceOnATerminal) {
  Captured out;
  Progress p(ProgressMode::kAuto, 0, 1000, {"visits_per_day"}, out.file(),
             ProgressScreen{/*terminal=*/1, /*columns=*/50});
  p.Done(500, 500);
  p.Position(0, 500);
  const std::string frame = p.Frame();
  ASSERT_GE(frame.size(), 4u);
  EXPECT_EQ(frame.front(), '\r') << frame;
  EXPECT_EQ(frame.substr(frame.size() - 3), "\x1b[K") << frame;
  const std::string line = frame.substr(1, frame.size() - 4);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_LE(Columns(line), 49u) << line;
  EXPECT_NE(line.find("50.0%"), std::string::npos) << line;

  // The last frame, on Stop(), ends the line; every frame written fits.
  p.Start();
  p.SetPhase("all events read; writing the read models");
  p.Stop();
  const std::string text = out.text();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line, redrawn: " << text;
  size_t at = 0;
  while ((at = text.find('\r', at)) != std::string::npos) {
    const size_t end = text.find("\x1b[K", at);
    ASSERT_NE(end, std::string::npos) << text;
    EXPECT_LE(Columns(text.substr(at + 1, end - at - 1)), 49u) << text;
    at = end;
  }
  EXPECT_NE(text.rfind("write phase 0:00:0"), std::string::npos) << text;
  EXPECT_NE(text.rfind("all events read"), std::string::npos) << text;
}

// A message while the line is drawn (the throttle pausing the reading, a flush retried):
// the progress line is erased, the message gets a line of its own, the progress line is
// drawn again below it; the message is never glued to a half-drawn line.
TEST(Progress, AMessageGetsItsOwnLineAboveTheProgressLine) {
  Captured out;
  Progress p(ProgressMode::kAuto, 0, 1000, {"visits_per_day"}, out.file(),
             ProgressScreen{/*terminal=*/1, /*columns=*/60});
  p.Done(500, 500);
  p.Position(0, 500);
  p.Start();
  PrintLine("threads_running 57 > 40; reading pauses");
  p.Done(100, 600);
  PrintLine("reading resumes");
  p.Stop();
  const std::string text = out.text();
  for (const std::string m : {"threads_running 57 > 40; reading pauses", "reading resumes"}) {
    const std::string want = "\r\x1b[Krewind: " + m + "\n\r";
    const size_t at = text.find(want);
    ASSERT_NE(at, std::string::npos) << "'" << m << "' not on a clean line of its own, "
                                     << "followed by the progress line: " << text;
    const size_t redraw_end = text.find("\x1b[K", at + want.size());
    ASSERT_NE(redraw_end, std::string::npos) << text;
    EXPECT_NE(text.substr(at + want.size(), redraw_end - at - want.size()).find('%'), std::string::npos)
        << "the progress line is drawn again after the message: " << text;
  }
  // Once stopped, a message is a plain line again, not on the Progress's stream.
  const size_t before = out.text().size();
  PrintLine("after the run");
  EXPECT_EQ(out.text().size(), before);
}

// Not a terminal (a pipe, a log): full lines, as before, without control characters.
TEST(Progress, WritesPlainLinesWhenNotATerminal) {
  Captured out;
  Progress p(ProgressMode::kAuto, 0, 1000, {"visits_per_day"}, out.file(),
             ProgressScreen{/*terminal=*/0, /*columns=*/50});
  p.Done(500, 500);
  p.Position(0, 500);
  const std::string frame = p.Frame();
  EXPECT_EQ(frame.rfind("rewind: ", 0), 0u) << frame;
  EXPECT_EQ(frame.back(), '\n') << frame;
  EXPECT_EQ(frame.find('\r'), std::string::npos) << frame;
  EXPECT_EQ(frame.find('\x1b'), std::string::npos) << frame;
  EXPECT_NE(frame.find("slowest: visits_per_day at id 500"), std::string::npos)
      << "a log line is not cut to a width: " << frame;
  p.Start();
  PrintLine("reading resumes");
  p.Stop();
  EXPECT_EQ(out.text().find('\r'), std::string::npos);
  EXPECT_NE(out.text().find("rewind: reading resumes\n"), std::string::npos)
      << "a message is a whole line of the same log: " << out.text();
}

// The width: TIOCGWINSZ when the stream is a terminal, else $COLUMNS, else 80.
TEST(Progress, TheWidthComesFromColumnsWhenTheStreamIsNoTerminal) {
  Captured out;  // a memory stream: not a terminal, no window size
  const char* saved = std::getenv("COLUMNS");
  const std::string keep = saved ? saved : "";
  setenv("COLUMNS", "57", 1);
  EXPECT_EQ(TerminalColumns(out.file()), 57);
  setenv("COLUMNS", "not a number", 1);
  EXPECT_EQ(TerminalColumns(out.file()), 80);
  unsetenv("COLUMNS");
  EXPECT_EQ(TerminalColumns(out.file()), 80);
  if (saved) setenv("COLUMNS", keep.c_str(), 1);
}

TEST(Progress, ThousandsSeparators) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1000), "1,000");
  EXPECT_EQ(WithThousands(11000000), "11,000,000");
}

}  // namespace
}  // namespace rw
