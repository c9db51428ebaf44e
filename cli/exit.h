// How a `ucxtls` command ends: its exit statuses, its one error line, and the guards main installs
// first. stdout carries only what was asked for; every error is one line on stderr and a non-zero
// exit.
#pragma once

#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

// Exit statuses: 0 fine, 1 a check failed (doctor, probe) or a setting is invalid, 2 usage or
// environment error (unknown command, no ucx_info, no library). run passes its child's through.
constexpr int kFailed = 1, kUsage = 2;

// "ucxtls: <msg>" on stderr, its control bytes shown as '?' as on stdout (util.h scrub_line);
// returns status. Every `ucxtls:` line of the commands goes through it, or through note.
int fail(int status, const std::string &msg);
// The same line for a fact that fails nothing (doctor --json records it with status 0).
void note(const std::string &msg);

// While lines is set, each message fail or note prints (without "ucxtls: ") is also appended there, in
// order (doctor --json carries them in its object), and its status to statuses when given (doctor's
// verdict line names the first message that failed); nullptr: no longer. quiet_after: once more
// than that many lines are on stdout (util.h lines_printed), a message is only recorded, not
// printed: doctor shows it on stdout, among its rows, and stderr keeps what came before any row.
void record_messages(std::vector<std::string> *lines, std::vector<int> *statuses = nullptr, size_t quiet_after = size_t(-1));

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

}  // namespace cli
}  // namespace ucxtls
