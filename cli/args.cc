// The argument mechanism of every subcommand (args.h): `--help`, and `--flag V` as `--flag=V`.
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "exit.h"

namespace ucxtls {
namespace cli {
namespace {

const Flag kHelpFlag = {"-h, --help", nullptr, "print this help and exit"};

const Flag *find_flag(const Command &c, const char *a) {
  for (const Flag *f = c.flags; f && f->name; f++)
    if (!strcmp(f->name, a)) return f;
  return nullptr;
}

// Words of text printed from column `indent`, lines no longer than `width`.
void print_wrapped(const char *text, size_t indent, size_t width) {
  size_t col = indent;
  printf("%*s", int(indent), "");
  while (*text) {
    while (*text == ' ' || *text == '\n') text++;
    size_t n = strcspn(text, " \n");
    if (!n) break;
    if (col > indent && col + 1 + n > width) printf("\n%*s", int(indent), ""), col = indent;
    else if (col > indent) putchar(' '), col++;
    printf("%.*s", int(n), text);
    col += n;
    text += n;
  }
  putchar('\n');
}

void print_flag(const std::string &usage, const char *help) {
  if (usage.size() > 22) printf("  %s\n  %-22s %s\n", usage.c_str(), "", help);
  else printf("  %-22s %s\n", usage.c_str(), help);
}

}  // namespace

std::string flag_usage(const Flag &f) {
  return f.value ? std::string(f.name) + "=" + f.value : std::string(f.name);
}

void command_help(const Command &c) {
  printf("usage: ucxtls %s%s%s\n\n", c.name, *c.args ? " " : "", c.args);
  print_wrapped(c.details ? c.details : c.summary, 0, 78);
  printf("\noptions:\n");
  for (const Flag *f = c.flags; f && f->name; f++) print_flag(flag_usage(*f), f->help);
  print_flag(kHelpFlag.name, c.takes_command ? "print this help and exit (after `--` it is COMMAND's)"
                                             : kHelpFlag.help);
}

const char *first_unknown(int argc, char **argv, const char *flag, bool *given) {
  *given = false;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], flag)) return argv[i];
    *given = true;
  }
  return nullptr;
}

int prepare_args(const Command &c, int argc, char **argv, std::vector<std::string> *store,
                 std::vector<char *> *out) {
  store->reserve(argc);  // the joined flags: pointers into them stay valid
  out->clear();
  bool flags_over = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    flags_over = flags_over || (c.takes_command && (a[0] != '-' || !strcmp(a, "--")));
    if (!flags_over && (!strcmp(a, "--help") || !strcmp(a, "-h"))) return command_help(c), 0;
    const Flag *f = flags_over ? nullptr : find_flag(c, a);
    if (!f || !f->value) {
      out->push_back(argv[i]);
      continue;
    }
    if (i + 1 >= argc)
      return fail(kUsage, std::string(c.name) + ": " + a + " needs a value (" + flag_usage(*f) + "; ucxtls " + c.name +
                              " --help)");
    store->push_back(std::string(a) + "=" + argv[++i]);
    out->push_back(&store->back()[0]);
  }
  out->push_back(nullptr);
  return -1;
}

}  // namespace cli
}  // namespace ucxtls
