// rewind-completion: writes rewind's bash completion from its template
// (scripts/completion/rewind.bash.in) and the tables --help is printed from, so that adding a
// command or an option is one row of its table (issue 34, part 6): the commands
// (pipeline/commands.h), the long options with and without a value, the options whose value
// is a file (config/options.h OptionDocs), and the short options that take a value. The
// build runs it (cmake/package.cmake): `rewind-completion TEMPLATE build/rewind.bash`;
// tests/install_test.cc checks the result against `rewind --help` and runs it in bash.
//
// A program of its own, single-threaded.
#include <fmt/core.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "config/options.h"
#include "pipeline/commands.h"

namespace {

using namespace rw;

std::string Joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

// Words joined by spaces, in lines of at most 90 characters (continued with two spaces).
std::string Wrapped(const std::vector<std::string>& words) {
  std::string out, line;
  for (const std::string& w : words) {
    if (!line.empty() && line.size() + 1 + w.size() > 90) {
      out += line + "\n  ";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  return out + line;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rewind-completion TEMPLATE OUTPUT\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "rewind-completion: cannot read %s\n", argv[1]);
    return 1;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  std::vector<std::string> commands;
  for (const Command& c : Commands()) commands.push_back(c.name);
  std::vector<std::string> flags = {"--help", "--version"}, valued, files, short_valued, short_other;
  for (const OptionDoc& d : OptionDocs()) {
    const std::string name = "--" + d.name;
    if (d.value_name.empty()) {
      flags.push_back(name);
      continue;
    }
    valued.push_back(name);
    if (!d.short_name.empty()) short_valued.push_back(d.short_name);
    if (d.value_name == "FILE") {
      files.push_back(name);
      if (!d.short_name.empty()) files.push_back(d.short_name);
    } else if (!d.short_name.empty()) {
      short_other.push_back(d.short_name);
    }
  }
  const std::map<std::string, std::string> fill = {
      {"@COMMANDS@", Joined(commands, " ")},
      {"@FLAGS@", Wrapped(flags)},
      {"@VALUED@", Wrapped(valued)},
      {"@FILE_OPTIONS@", Joined(files, " | ")},
      {"@SHORT_VALUED@", Joined(short_valued, " ")},
      {"@SHORT_VALUED_CASE@", Joined(short_other, " | ")},
  };
  for (const auto& [key, value] : fill) {
    const size_t at = text.find(key);
    if (at == std::string::npos) {
      std::fprintf(stderr, "rewind-completion: the template has no %s\n", key.c_str());
      return 1;
    }
    text.replace(at, key.size(), value);
  }
  std::ofstream out(argv[2]);
  out << text;
  if (!out) {
    std::fprintf(stderr, "rewind-completion: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
