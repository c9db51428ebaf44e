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

// Where a file installed with the command may be: beside it in dir (a build tree, the wheel's _bin),
// then relative to its bindir as configured: the library in libdir (UCXTLS_BIN_TO_LIB), a helper in
// <libexecdir>/ucxtls (UCXTLS_BIN_TO_HELPERS).
void install_candidates(const std::string &dir, const char *name, std::string out[2]);
void helper_candidates(const std::string &dir, const char *name, std::string out[2]);

// A line's control characters become '?' (a final newline stays): C0 and DEL, as the library's line
// (text.h scrub_controls), C1 (U+0080..U+009F, which terminals take as ESC sequences), and each byte
// that is not UTF-8. print_line and fail (exit.h) use it.
void scrub_line(std::string *s);

// One line of a command's text on stdout (printf's format), scrubbed (scrub_line), so that no value
// can fake a line or drive the terminal.
__attribute__((format(printf, 1, 2))) void print_line(const char *fmt, ...);

// While lines is set, print_line appends there instead (doctor --json prints one JSON object in
// place of its text); nullptr: stdout again. lines_printed: how many so far, written or captured.
void capture_lines(std::vector<std::string> *lines);
size_t lines_printed();

// A JSON string (nullptr: null): quotes, backslashes and controls (C0, DEL, C1) escaped, bytes that
// are not UTF-8 (an environment value can hold anything) U+FFFD, so that the document parses.
std::string json_str(const char *s);

}  // namespace cli
}  // namespace ucxtls
