// rewind-man: writes rewind's man page (roff, man(7)) from the tables --help is printed
// from, so the two never disagree: the command table (pipeline/commands.h: SYNOPSIS,
// COMMANDS, the DESCRIPTION's paragraphs, EXIT STATUS), the option table (config/options.h
// OptionDocs: OPTIONS by group, ENVIRONMENT) and the config search (FILES). The build runs
// it (cmake/package.cmake): `rewind-man build/rewind.1 build/rewind-gen.1` (the second page
// from rewind-gen's usage text, scripts/generate/usage.h); tests/tool_test.cc renders the
// page with `man --warnings` and checks it names every command and option.
//
// A program of its own, single-threaded.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "config/options.h"
#include "pipeline/commands.h"
#include "pipeline/version.h"
#include "scripts/generate/usage.h"

namespace {

using namespace rw;

// Text as roff reads it: backslashes and minus signs escaped, a newline inside a
// table's text is a space, and no line starts with a control character.
std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  while (out.find("  ") != std::string::npos) out.replace(out.find("  "), 2, " ");
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string Bold(const std::string& text) { return "\\fB" + Roff(text) + "\\fR"; }
std::string Italic(const std::string& text) { return "\\fI" + Roff(text) + "\\fR"; }

// The groups in the option table's order of first appearance.
std::vector<OptionGroup> Groups(const std::vector<OptionDoc>& docs) {
  std::vector<OptionGroup> groups;
  for (const OptionDoc& d : docs) {
    if (std::find(groups.begin(), groups.end(), d.group) == groups.end()) groups.push_back(d.group);
  }
  return groups;
}

// The commands that take `g`, unless every command with options does (as --help says it).
std::string Takers(OptionGroup g) {
  std::string who;
  bool everyone = true;
  for (const Command& c : Commands()) {
    if (c.groups.empty()) continue;
    if (std::find(c.groups.begin(), c.groups.end(), g) == c.groups.end()) {
      everyone = false;
    } else {
      who += (who.empty() ? "" : ", ") + c.name;
    }
  }
  return everyone || who.empty() ? "" : " (" + who + ")";
}

std::string Header() {
  std::string m;
  m += fmt::format(".TH REWIND 1 \"\" \"rewind {}\" \"User Commands\"\n", VersionNumber());
  m += ".nh\n";  // no hyphenation: an option stays one word to search for
  m += ".SH NAME\nrewind \\- rebuild event\\-sourced read models from an event table in MariaDB\n";

  m += ".SH SYNOPSIS\n.nf\n\\fBrewind\\fR [\\fIOPTION\\fR]... \\fICOMMAND\\fR [\\fINAME\\fR]...\n";
  for (const Command& c : Commands()) {
    for (const Command::Usage& u : c.usage) m += Bold(u.line) + "\n";
  }
  m += ".fi\n";
  return m;
}

std::string Description() {
  std::string m;
  m += ".SH DESCRIPTION\n"
       "rewind rebuilds the read models of an event\\-sourced application from its event "
       "table in MariaDB: it reads the events once, in id order, applies them to shadow "
       "copies of the read models' tables and swaps the copies in with one RENAME TABLE. "
       "It can keep following new events, verify the live tables against a rebuild, ingest "
       "access logs into the event table and measure the event store.\n";
  for (const Command& c : Commands()) {
    if (!c.about.empty()) m += ".PP\n" + Roff(c.about) + "\n";
  }

  m += ".SH COMMANDS\n";
  for (const Command& c : Commands()) {
    for (const Command::Usage& u : c.usage)
      m += ".TP\n" + Bold(u.line) + "\n" + Roff(u.what) + "\n";
  }

  return m;
}

std::string Options(const std::vector<OptionDoc>& docs) {
  std::string m;
  m += ".SH OPTIONS\n"
       "Every option can also be given in the config file (its long name is the key; see "
       "FILES) and many in the environment (see ENVIRONMENT). The command line beats the "
       "environment, which beats the config file.\n";
  m += ".SS General\n.TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nprint the options, the commands "
       "and the exit codes, and exit\n.TP\n\\fB\\-V\\fR, \\fB\\-\\-version\\fR\nprint the "
       "version, the build type and the versions of the libraries rewind was built with, "
       "and exit\n";
  for (OptionGroup g : Groups(docs)) {
    m += ".SS " + Roff(GroupTitle(g) + Takers(g)) + "\n";
    for (const OptionDoc& d : docs) {
      if (d.group != g) continue;
      m += ".TP\n";
      if (!d.short_name.empty()) m += Bold(d.short_name) + ", ";
      m += Bold("--" + d.name);
      if (!d.value_name.empty()) m += " " + Italic(d.value_name);
      m += "\n" + Roff(d.help);
      if (!d.default_value.empty()) m += ". Default: " + Roff(d.default_value);
      if (!d.env.empty()) {
        std::string env;
        for (const std::string& e : d.env) env += (env.empty() ? "" : ", ") + Bold("$" + e);
        m += ". Environment: " + env;
      }
      m += "\n";
    }
  }

  return m;
}

std::string ExitStatusAndGrants() {
  std::string m;
  m += ".SH EXIT STATUS\n";
  for (const ExitCodeRow& e : ExitCodes())
    m += fmt::format(".TP\n.B {}\n{}\n", e.code, Roff(e.meaning));

  m += ".SH GRANTS\n"
       "What the MariaDB user needs on the database (\\fIdb\\fR.*):\n"
       ".TP\n\\fBstatus\\fR, \\fBlist\\fR\nSELECT (status creates nothing; a read\\-only user "
       "can run it).\n"
       ".TP\n\\fBreplay\\fR, \\fBreplay \\-\\-follow\\fR\nSELECT, INSERT, UPDATE, DELETE, "
       "CREATE, DROP, ALTER (rewind's own tables, the shadow tables, the swap) and LOCK "
       "TABLES (the cut\\-over's brief hold on the event table); the first run on a database "
       "also creates rewind's bookkeeping tables.\n"
       ".TP\n\\fBverify\\fR\nas replay, but not LOCK TABLES (it never swaps).\n"
       ".PP\n\\fBrewind replay \\-\\-all \\-\\-dry\\-run\\fR lists the grants a run would "
       "miss, and touches nothing.\n";

  return m;
}

std::string Files() {
  const ConfigPlaces places = BuiltInConfigPlaces();
  std::string m;
  m += ".SH FILES\n"
       "rewind reads one config file of \\fIkey\\fR = \\fIvalue\\fR lines (the keys are the "
       "long option names), the first that exists of the places below; never one in the "
       "current directory. A place that exists but cannot be read (a directory, no "
       "permission) is an error naming it. rewind says which file it read.\n"
       ".TP\n\\fB\\-\\-config\\fR \\fIFILE\\fR, else \\fB$REWIND_CONFIG\\fR\n"
       "the file named.\n"
       ".TP\n\\fI$XDG_CONFIG_HOME\\fR/rewind/rewind.conf\n"
       "the user's file (\\fI~\\fR/.config/rewind/rewind.conf when $XDG_CONFIG_HOME is "
       "unset).\n";
  if (!places.system_file.empty()) {
    m += ".TP\n" + Italic(places.system_file) + "\nthe system's file.\n";
  }
  m += ".TP\nthe repository's \\fIconfig/rewind.conf\\fR\nonly for a binary running from "
       "the build tree it was built in; an installed binary never looks beside itself.\n";
#ifdef REWIND_DOC_DIR
  m += ".PP\nA commented sample, every option at its default:\n.RS\n" +
       Italic(std::string(REWIND_DOC_DIR) + "/rewind.conf") + "\n.RE\n";
#endif

  return m;
}

std::string Environment(const std::vector<OptionDoc>& docs) {
  std::string m;
  m += ".SH ENVIRONMENT\n";
  std::set<std::string> seen;
  for (const OptionDoc& d : docs) {
    for (const std::string& e : d.env) {
      if (!seen.insert(e).second) continue;
      m += ".TP\n" + Bold(e) + "\nas " + Bold("--" + d.name) + "\n";
    }
  }
  m += ".TP\n.B REWIND_CONFIG\nthe config file (see FILES)\n"
       ".TP\n.B XDG_CONFIG_HOME\\fR, \\fBHOME\nwhere the user's config file is (see FILES)\n";

  return m;
}

std::string Examples() {
  std::string m;
  m += ".SH EXAMPLES\n"
       ".TP\n\\fBrewind replay \\-\\-all \\-\\-dry\\-run\\fR\n"
       "what a rebuild of every read model would read, write and need; touches nothing.\n"
       ".TP\n\\fBrewind replay \\-\\-all \\-S /run/mysqld/mysqld.sock \\-u rewind \\-p \\-D "
       "blog\\fR\n"
       "rebuild every read model of the database blog, asking for the password.\n"
       ".TP\n\\fBrewind replay \\-\\-resume \\-\\-all\\fR\n"
       "continue a rebuild that was interrupted (Ctrl\\-C, exit 130).\n"
       ".TP\n\\fBrewind replay \\-\\-all \\-\\-follow \\-\\-resume\\fR\n"
       "rebuild, swap in, then keep applying new events; started again, each read model continues its live "
       "table from its checkpoint (a service's command line).\n"
       ".TP\n\\fBrewind verify\\fR\n"
       "rebuild into scratch tables and compare them with the live ones (exit 4 on a "
       "difference).\n"
       ".TP\n\\fBrewind status \\-\\-json\\fR\n"
       "the checkpoints, the lag and the failures of every read model, as JSON.\n";
  m += ".SH SEE ALSO\n\\fBrewind\\-gen\\fR(1), \\fBmariadb\\fR(1)\n";
  return m;
}

std::string ManPage() {
  const std::vector<OptionDoc> docs = OptionDocs();
  return Header() + Description() + Options(docs) + ExitStatusAndGrants() + Files() +
         Environment(docs) + Examples();
}

// rewind-gen(1), from the text its --help prints (scripts/generate/usage.h).
std::string GenManPage() {
  std::string m = fmt::format(".TH REWIND\\-GEN 1 \"\" \"rewind {}\" \"User Commands\"\n.nh\n",
                              VersionNumber());
  m += ".SH NAME\nrewind\\-gen \\- " + Roff(gen_usage::kSummary) + "\n";
  m += ".SH SYNOPSIS\n.nf\n";
  for (const char* line : gen_usage::kSynopsis) m += Bold(line) + "\n";
  m += ".fi\n.SH DESCRIPTION\n";
  for (const char* p : gen_usage::kDescription) m += ".PP\n" + Roff(p) + "\n";
  m += ".SH OPTIONS\n";
  for (const gen_usage::Option& o : gen_usage::kOptions) {
    const std::string flag = o.flag;
    const auto space = flag.find(' ');
    m += ".TP\n" + Bold(flag.substr(0, space));
    if (space != std::string::npos) m += " " + Italic(flag.substr(space + 1));
    m += "\n" + Roff(o.help) + "\n";
  }
  m += ".SH EXIT STATUS\n.TP\n.B 0\nthe events were written\n.TP\n.B 1\nan error (the message "
       "says which)\n.TP\n.B 2\na bad command line\n";
  m += ".SH SEE ALSO\n\\fBrewind\\fR(1)\n";
  return m;
}

// Writes `text` to `out` through a temporary file beside it. False (said) on failure.
bool WriteFile(const std::string& out, const std::string& text) {
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    if (!f.flush()) {
      fmt::print(stderr, "rewind-man: cannot write '{}'\n", tmp);
      return false;
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    fmt::print(stderr, "rewind-man: cannot rename '{}' to '{}'\n", tmp, out);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fmt::print(stderr, "usage: rewind-man REWIND.1 [REWIND-GEN.1]\n");
    return 2;
  }
  if (!WriteFile(argv[1], ManPage())) return 1;
  if (argc == 3 && !WriteFile(argv[2], GenManPage())) return 1;
  return 0;
}
