// The subcommands' table and the one argument mechanism all of them share: each command's flags
// are listed once (kCommands in main.cc), and that table drives the parser below, the command's
// `--help` and its paragraph of the man page, so the three cannot drift apart.
#pragma once

#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

// One flag of a subcommand. value: the name of its argument as usage shows it ("sh|slurm", "V"),
// nullptr for a switch; a flag with a value is accepted as `--flag=V` and as `--flag V`.
struct Flag {
  const char *name;  // "--format"
  const char *value;
  const char *help;  // one line
};

struct Command {
  const char *name;
  const char *args;     // after the name, in the usage line and the SYNOPSIS
  const char *summary;  // ucxtls --help's lines, '\n' between them
  const char *details;  // the command's --help and its man page paragraph (the summary when NULL)
  const Flag *flags;    // ended by {nullptr}
  bool takes_command;   // run: flags end at `--` or the first other argument (COMMAND's own)
  int (*run)(int argc, char **argv);
};

// Prepares argv for c.run: `--flag V` of a flag with a value becomes `--flag=V` (in *store), so a
// command parses one form. Returns -1 to go on with *out (NULL-terminated), 0 after printing the
// command's help (-h or --help among its flags), or kUsage after one stderr line (a flag without
// its value). Anything else is passed through unchanged for the command to accept or refuse.
int prepare_args(const Command &c, int argc, char **argv, std::vector<std::string> *store,
                 std::vector<char *> *out);

// `ucxtls NAME --help`: the usage line, the paragraph and the flags, on stdout.
void command_help(const Command &c);

// The flag as usage shows it: "--format=sh|slurm", "--json".
std::string flag_usage(const Flag &f);

// For a command whose one option is a switch (explain --json, probe --save): the first argument
// that is not `flag` (nullptr: none), and in *given whether flag was among them.
const char *first_unknown(int argc, char **argv, const char *flag, bool *given);

}  // namespace cli
}  // namespace ucxtls
