// The rewind command line: parses the options, asks for the password, installs the signal
// handlers and runs one command of the command table (pipeline/commands.h), whose run
// function returns the exit code; `rewind stress` runs rewind-stress (pipeline/entry.h).
// See `rewind --help`.
#include "pipeline/entry.h"

int main(int argc, char** argv) { return rw::RewindMain(argc, argv); }
