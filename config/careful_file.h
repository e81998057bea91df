// Reading a file that tells rewind what to do (a config file, a models file) as careful Unix
// tools do (issue 37 part 5): opened once and judged by what was opened (fstat of its
// descriptor, so a rename between the check and the read changes nothing).
//
// - A file every user may write (mode o+w) is refused: anyone could change where rewind
//   connects and what it writes. (The mariadb client ignores such option files; refusing
//   says so instead of running with settings the user did not mean.) A group-writable file
//   is taken: a group of operators sharing one is a choice, not an accident.
// - A file that belongs to another user (neither this one nor root) is read, but a caller
//   holding a secret from it refuses it (RefuseSecretFrom): its owner could swap the host
//   and collect the password.
//
// Writing a file rewind was told to write (--textfile, --stats-json) is as careful: the
// text goes to a temporary file made afresh beside it (O_EXCL: never through a symlink or a
// file planted at its name), then renamed over the name, so a link planted there is replaced,
// never followed. A directory every user may write without the sticky bit is refused: anyone
// could swap the file after the rename.
//
// Thread safety: stateless functions.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace rw {

struct CarefulFile {
  std::string text;
  uid_t owner = 0;
  bool OwnedByUsOrRoot() const;
};

// `what` names the file in messages ("config file", "models file"). NotFound when it cannot
// be opened; InvalidInput for a directory, a file that is not regular, one others may write.
Result<CarefulFile> ReadCarefully(const std::string& path, std::string_view what);

// Ok, or the refusal of a secret (named by `secret`, e.g. "a password") read from a file
// that belongs to another user.
Status RefuseSecretFrom(const CarefulFile& file, const std::string& path, std::string_view what,
                        std::string_view secret);

// Writes `text` to `path` as above, made with `mode` whatever the umask, flushed to disk.
// `option` names the flag in messages ("--stats-json").
Status WriteCarefully(const std::string& path, const std::string& text, std::string_view option, mode_t mode = 0644);

// Whether WriteCarefully could write `path` (found out before an hour of work, touching
// nothing): its directory exists, is writable, and is not one every user may write.
Status CheckWritable(const std::string& path, std::string_view option);

}  // namespace rw
