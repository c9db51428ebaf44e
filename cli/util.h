// Small helpers the commands share: shell quoting, list items, and where the files installed with
// the command are (reading files: root_fs.h).
#pragma once

#include <string>
#include <vector>

#include "root_fs.h"

namespace ucxtls {
namespace cli {

// POSIX shell single quotes: only ' itself needs care ('\'').
std::string shell_quote(const char *s);

// The items of a separated list (text.h Items), as strings.
std::vector<std::string> split(const char *list, const char *seps);

// The words of text, blanks of any length between them; and those of /proc/PID/status's line
// "Name:\t..." (proc(5)).
std::vector<std::string> words(const std::string &text, const char *blanks);
std::vector<std::string> status_words(const std::string &status, const char *name);

// Where a file installed with the command may be, in order: beside it in dir (a build tree, the
// wheel's _bin), then where an installed tree puts it, relative to the command's bindir (fixed at
// configure time): the library in libdir (UCXTLS_BIN_TO_LIB), a helper the command runs in
// <libexecdir>/ucxtls (UCXTLS_BIN_TO_HELPERS).
void install_candidates(const std::string &dir, const char *name, std::string out[2]);
void helper_candidates(const std::string &dir, const char *name, std::string out[2]);

// A line's control characters (a variable's ESC, CR or newline, a name read from the file system or
// from another process) become '?': C0 and DEL, as the library's own rule for its line (text.h
// scrub_controls), and C1 (U+0080..U+009F, which terminals take as ESC sequences), and each byte
// that is not UTF-8 (raw 0x80..0xff); a final newline stays. print_line and fail (exit.h) use it.
void scrub_line(std::string *s);

// One line of a command's text on stdout (printf's format), scrubbed (scrub_line), so that no value
// can fake a line or drive the terminal.
__attribute__((format(printf, 1, 2))) void print_line(const char *fmt, ...);

// While lines is set, print_line appends its line there instead of writing it (a command that
// prints one JSON object in place of its text: doctor --json); nullptr: stdout again.
void capture_lines(std::vector<std::string> *lines);

// How many lines print_line has given so far, written or captured (doctor ends its rows with a
// verdict line, and prints none where an error came before any row).
size_t lines_printed();

// A JSON string: quotes, backslashes and control characters (C0, DEL, C1) escaped; bytes that are
// not valid UTF-8 (environment values can hold anything) become U+FFFD so the document always
// parses. nullptr: null.
std::string json_str(const char *s);

}  // namespace cli
}  // namespace ucxtls
