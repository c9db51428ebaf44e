// How a command ends (see exit.h).
#include "exit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <new>

#include "util.h"

namespace ucxtls {
namespace cli {

namespace {
std::vector<std::string> *recorded = nullptr;
std::vector<int> *recorded_status = nullptr;
size_t quiet_after = size_t(-1);

// The one `ucxtls:` line, recorded with its status where doctor asked (record_messages).
void say(int status, const std::string &msg) {
  std::string line = "ucxtls: " + msg + "\n";
  scrub_line(&line);  // a value, a path, a process's name: no control byte reaches the terminal
  if (!recorded || quiet_after == size_t(-1) || lines_printed() <= quiet_after) fputs(line.c_str(), stderr);
  if (recorded) recorded->push_back(line.substr(8, line.size() - 9));
  if (recorded_status) recorded_status->push_back(status);
}
}  // namespace

void record_messages(std::vector<std::string> *lines, std::vector<int> *statuses, size_t quiet) {
  recorded = lines;
  recorded_status = lines ? statuses : nullptr;
  quiet_after = lines ? quiet : size_t(-1);
}

int fail(int status, const std::string &msg) { return say(status, msg), status; }

void note(const std::string &msg) { say(0, msg); }

namespace {

constexpr size_t kStdoutBuffer = 1 << 16;  // the longest output, --man, is about 8 KiB

void close_stdout() {
  const bool failed_before = ferror(stdout);
  int err = fflush(stdout) != 0 ? errno : 0;
  if (fclose(stdout) != 0 && !err) err = errno;
  if (!failed_before && !err) return;
  fail(kUsage, std::string("write error on stdout") + (err ? ": " : "") + (err ? strerror(err) : ""));
  _exit(kUsage);  // as coreutils: the output was lost, whatever the command's own answer was
}

// operator new's handler: called before it would throw, so it needs no memory of its own.
void out_of_memory() {
  static const char kLine[] = "ucxtls: out of memory\n";
  (void)!write(2, kLine, sizeof kLine - 1);
  _exit(kUsage);
}

}  // namespace

void install_guards() {
  std::set_new_handler(out_of_memory);
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    const int n = open("/dev/null", (fd == 2 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);  // the lowest free: fd
    if (n >= 0 && n != fd) close(n);
  }
  // One buffer for all the output (ours is at most a few KiB): a write error then shows at the
  // final flush with its errno, where a flush in the middle of the output would have set the
  // stream's error and left errno to whatever ran after it. A terminal stays line-buffered.
  // (glibc ignores the size of a buffer it allocates itself: give it one. From the heap, not .bss:
  // under a tight ulimit -d the command must still start, and then keeps stdio's own buffer.)
  if (!isatty(STDOUT_FILENO))
    if (char *buffer = static_cast<char *>(malloc(kStdoutBuffer))) setvbuf(stdout, buffer, _IOFBF, kStdoutBuffer);
  atexit(close_stdout);
}

}  // namespace cli
}  // namespace ucxtls
