// Console: the one way rewind prints a message line on stderr while a run may be drawing its
// progress line there (stages/control/progress.h).
//
// A message printed with fmt::print in the middle of a terminal's progress line would be
// glued to it ("[#####   ] 45% ... rewind: reading pauses") and then overdrawn by the next
// redraw. PrintLine() instead erases the progress line, prints the message on a line of its
// own and draws the progress line again below it. With no progress line on a terminal it is
// a plain line; when a Progress is active the message goes to that Progress's stream.
//
// Thread safety: PrintLine() may be called from any thread; lines never interleave with
// each other or with the progress line's redraws.
#pragma once

#include <mutex>
#include <string_view>

namespace rw {

class Progress;

// Prints "rewind: " + line + "\n" on stderr (or on the active progress line's stream).
void PrintLine(std::string_view line);

namespace console_internal {
// For Progress only. The mutex every write to the console takes, progress redraws
// included; and the line being drawn (nullptr: none), read and set under that mutex.
std::mutex& Mutex();
Progress*& ActiveLocked();
}  // namespace console_internal

}  // namespace rw
