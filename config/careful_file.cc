#include "config/careful_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace rw {
namespace {

std::string UserName(uid_t uid) {
  if (const passwd* p = ::getpwuid(uid); p != nullptr && p->pw_name != nullptr) return p->pw_name;
  return fmt::format("uid {}", uid);
}

std::filesystem::path DirectoryOf(const std::string& path) {
  const std::filesystem::path target(path);
  return target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
}

}  // namespace

Status CheckWritable(const std::string& path, std::string_view option) {
  const std::filesystem::path dir = DirectoryOf(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidInput(fmt::format("{} {}: the directory {} does not exist", option, path, dir.string()));
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return Status::InvalidInput(fmt::format(
        "{} {}: every user may write the directory {} (mode {:04o}), and could swap the file after rewind writes "
        "it; choose a directory of your own",
        option, path, dir.string(), st.st_mode & 07777));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return Status::InvalidInput(
        fmt::format("{} {}: cannot write in the directory {} ({})", option, path, dir.string(), std::strerror(errno)));
  }
  struct stat at {};
  if (::lstat(path.c_str(), &at) == 0 && S_ISDIR(at.st_mode)) {
    return Status::InvalidInput(fmt::format("{} {}: is a directory", option, path));
  }
  return Status::Ok();
}

Status WriteCarefully(const std::string& path, const std::string& text, std::string_view option, mode_t mode) {
  if (Status s = CheckWritable(path, option); !s.ok()) return s;
  const std::filesystem::path target(path);
  std::string temp = (DirectoryOf(path) / fmt::format(".{}.XXXXXX", target.filename().string())).string();
  bool made = false;
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    if (made) (void)::unlink(temp.c_str());
    return Status::Error(Status::Code::kInvalidInput,
                         fmt::format("{} {}: {} ({}); check the directory exists and is writable", option, path,
                                     what, why));
  };
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return fail("cannot create a temporary file in " + DirectoryOf(path).string());
  made = true;
  std::FILE* f = ::fdopen(fd, "w");
  if (f == nullptr) {
    ::close(fd);
    return fail("cannot write " + temp);
  }
  const bool written = ::fchmod(fd, mode) == 0 && std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
                       std::fflush(f) == 0 && ::fsync(fd) == 0;
  if (std::fclose(f) != 0 || !written) return fail("cannot write " + temp);
  if (std::rename(temp.c_str(), path.c_str()) != 0) return fail("cannot rename " + temp + " to it");
  return Status::Ok();
}

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
