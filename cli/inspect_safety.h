// What a helper that loads a UCX as root may load: only code that root alone can change. Loading a
// libucp maps it, the libraries it needs (found through its RPATH/RUNPATH and LD_LIBRARY_PATH) and,
// once asked, UCX's modules (<dir of libucs>/ucx: libuct_*, libucm_*) with theirs. A file that a
// user can write, or that sits in a directory a user can write (its own or any above it, up to /),
// is a user's code: run as root it gives that user root. Nothing here executes what it reads: files
// are opened without blocking (a FIFO) and must be regular.
#pragma once

#include <string>
#include <vector>

namespace ucxtls {
namespace cli {

// Only root can change path: every directory from / down to it and the file itself, symbolic
// links followed (the directory of each link included). A part that does not exist, below
// directories only root can change, is fine (nothing there to load). False: *culprit says which
// part, its owner and mode, in words.
bool root_only_path(const std::string &path, std::string *culprit);

// Every file that loading libucp and its modules would map, and every directory searched for one,
// with this environment (its LD_LIBRARY_PATH, UCX_MODULE_DIR), from the current root and working
// directory: root_only_path for each. False: why (one line, naming the path).
bool root_may_load(const std::string &libucp, char *const envp[], std::string *why);

// Reading another process's places (the ucx.conf under its UCX_CONFIG_DIR, home and working
// directory: a network or FUSE mount may never answer) happens in a child of the command: this
// returns true in that child, which goes on as the command and calls reads_done() once they are
// read. The command itself waits timeout_ms for that, then for the child's end, and ends as it
// ends; past the deadline it kills the child and returns false with *err saying so.
bool reads_in_child(int timeout_ms, const std::string &what, std::string *err);
void reads_done();

}  // namespace cli
}  // namespace ucxtls
