#include "config/careful_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rw {
namespace {

std::string UserName(uid_t uid) {
  if (const passwd* p = ::getpwuid(uid); p != nullptr && p->pw_name != nullptr) return p->pw_name;
  return fmt::format("uid {}", uid);
}

}  // namespace

bool CarefulFile::OwnedByUsOrRoot() const { return owner == ::geteuid() || owner == 0; }

Result<CarefulFile> ReadCarefully(const std::string& path, std::string_view what) {
  auto unreadable = [&] { return Status::NotFound(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno))); };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return unreadable();
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return unreadable();
  if (S_ISDIR(st.st_mode)) return Status::InvalidInput(fmt::format("{} '{}' is a directory", what, path));
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {  // /dev/null, <(…) pass
    return Status::InvalidInput(fmt::format("{} '{}' is not a regular file", what, path));
  }
  if (S_ISREG(st.st_mode) && (st.st_mode & S_IWOTH) != 0) {
    return Status::InvalidInput(fmt::format(
        "{} '{}' is writable by every user (mode {:04o}): anyone could change where rewind connects "
        "and what it writes, so it is not read; make it yours alone (chmod o-w '{}')",
        what, path, st.st_mode & 07777, path));
  }
  CarefulFile out;
  out.owner = st.st_uid;
  char buffer[1 << 14];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return unreadable();
    }
    out.text.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

Status RefuseSecretFrom(const CarefulFile& file, const std::string& path, std::string_view what,
                        std::string_view secret) {
  if (file.OwnedByUsOrRoot()) return Status::Ok();
  return Status::InvalidInput(fmt::format(
      "{} '{}' holds {} but belongs to {}, not to {} who runs rewind: its owner could point rewind at "
      "another server and collect it, so it is not used; keep the file yourself (or root), or pass the "
      "secret through the environment",
      what, path, secret, UserName(file.owner), UserName(::geteuid())));
}

}  // namespace rw
