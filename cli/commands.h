// The commands main.cc dispatches to; each lives in its own file.
#pragma once

namespace ucxtls {
namespace cli {

int cmd_explain(int argc, char **argv);  // explain.cc
int cmd_env(int argc, char **argv);      // env.cc
int cmd_run(int argc, char **argv);      // run.cc
int cmd_doctor(int argc, char **argv);   // doctor.cc
int cmd_probe(int argc, char **argv);    // probe.cc
int cmd_lib(int argc, char **argv);      // run.cc

}  // namespace cli
}  // namespace ucxtls
