// What the `ucxtls` commands share: the exit statuses and the error line, the caller's
// environment as it was at exec, the decision exactly as the library's constructor makes it
// (Report, evaluate), and the files found beside the command. Every rule comes from the core
// (shim/core.h); nothing here restates one. stdout carries only what was asked for; every error is
// one line on stderr and a non-zero exit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core.h"

namespace ucxtls {
namespace cli {

// Exit statuses: 0 fine, 1 a check failed (doctor, probe) or a setting is invalid, 2 usage or
// environment error (unknown command, no ucx_info, no library). run passes its child's through.
constexpr int kFailed = 1, kUsage = 2;

// "ucxtls: <msg>" on stderr; returns status.
int fail(int status, const std::string &msg);

// The commands (main.cc dispatches; each lives in its own file).
int cmd_explain(int argc, char **argv);  // explain.cc
int cmd_env(int argc, char **argv);      // env.cc
int cmd_run(int argc, char **argv);      // run.cc
int cmd_doctor(int argc, char **argv);   // doctor.cc
int cmd_probe(int argc, char **argv);    // probe.cc
int cmd_lib(int argc, char **argv);      // run.cc

// ---------------------------------------------------------------------------------------------
// The environment as it was when this process started. If libucxtls.so is preloaded into the
// command itself, its constructor has already changed `environ` (set or cleared UCX_TLS), and
// explaining that would describe the wrong process: a new process started from the caller's
// shell sees the exec-time block, which /proc/self/environ still holds (setenv/unsetenv never
// touch it). Without /proc, `environ` is the best there is.
struct Environment {
  std::string raw;
  std::vector<char *> vars;  // NULL-terminated, pointing into raw (or into environ)
  void load();
  char *const *envp() const { return vars.data(); }
};

// The decision, exactly as the constructor makes it, plus display-only evidence.
struct Report {
  Environment env;
  Inputs in;
  Settings s;
  Facts f;
  Decision d;
  Family family = Family::none;  // see family_decided
  bool family_decided = false;   // true: the decision chose it; false: shown for information
};

// Reads the environment, decides as the library would (every device listed, for the evidence),
// then probes the facts the decision did not need. tmpl: a template to decide with instead of the
// environment's UCX_TLS and UCXTLS_TEMPLATE (`doctor --template`).
void evaluate(Report *r, const char *tmpl = nullptr);

// The library's own stderr line for this decision (lines.h format_line), with its newline.
std::string library_line(const Report &r);

// ---------------------------------------------------------------------------------------------
// Small shared helpers.

// Appends what fd gives until its end (reads interrupted by a signal are retried): true at the
// end, false on an error.
bool read_all(int fd, std::string *out);

// POSIX shell single quotes: only ' itself needs care ('\'').
std::string shell_quote(const char *s);

// The items of a separated list (text.h Items), as strings.
std::vector<std::string> split(const char *list, const char *seps);

// The directory this command's executable is in (/proc/self/exe); false when it cannot be read.
bool own_directory(std::string *dir);
// The command's guards, installed first thing in main (install_guards):
// - stdout as coreutils treat it (their close_stdout): output that cannot be written (a full
//   disk, /dev/full, a closed stdout) is an error, seen when a write fails or when stdout is
//   closed at exit (atexit): one line, exit kUsage;
// - a descriptor 0, 1 or 2 that the caller closed is given /dev/null, so that no file or pipe
//   this command opens takes its number (stdout's read-only: a write to it fails, as to a closed
//   one); close-on-exec, so `run`'s COMMAND gets the descriptors as the caller gave them;
// - no memory (ulimit -d): one line and exit kUsage, never an abort or half an answer printed as
//   whole (what was buffered is not written).
void install_guards();

// Where a file installed with the command may be, in order: beside it in dir (a build tree, the
// wheel's _bin), then where an installed tree puts it, relative to the command's bindir (fixed at
// configure time): the library in libdir (UCXTLS_BIN_TO_LIB), a helper the command runs in
// <libexecdir>/ucxtls (UCXTLS_BIN_TO_HELPERS).
void install_candidates(const std::string &dir, const char *name, std::string out[2]);
void helper_candidates(const std::string &dir, const char *name, std::string out[2]);

}  // namespace cli
}  // namespace ucxtls
