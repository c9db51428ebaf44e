/* A fake libucs for the differential test (test_differential.py). At start it does what UCX's
 * libucs does when a program's UCX loads its transports: reads its configuration (environment
 * first, then the ucx.conf files) and loads the uct modules with real dlopen, by the rules of one
 * UCX version style, chosen at build time by STYLE:
 *   13: UCX 1.13-1.16, 17: 1.17-1.21, 22: 1.22.
 * Written after UCX's own source (github.com/openucx/ucx, tags v1.13.0 to v1.22.0):
 *   src/ucs/sys/module.c: ucs_module_loader_add_dl_dir (libucs's dladdr name: its directory's
 *     "ucx" and the module extension from its basename's first '.'), ucs_module_loader_add_install_dir
 *     (UCX_MODULE_DIR), ucs_load_modules (<= 1.21: the compiled list, each name tried in each
 *     directory until one dlopen succeeds; 1.22: UCX_PLUGIN_PATH's directories, then those two,
 *     each scanned by ucs_module_load_from_dir, a base name loaded once).
 *   src/ucs/config/parser.c: ucs_config_parse_config_files (the files and their order; <= 1.16
 *     reads <libdir>/../etc/ucx.conf, 1.17 <libdir>/../etc/ucx/ucx.conf), the section filters
 *     of 1.17 (ucs_config_parse_check_filter), ucs_config_apply_config_vars (getenv first; a
 *     value that does not parse leaves the default), ucs_config_sscanf_allow_list.
 *   src/ucs/config/ini.c (inih): comments, sections, continuation lines, inline ';' comments.
 * As in UCX, each framework's list is in the object that loads it (UCS_MODULE_FRAMEWORK_LOAD passes
 * <framework>_MODULES, configure's ":name:name" string): libuct for uct, which calls
 * ucs_load_modules, and the ib module for uct_ib (src/uct/ib/base/ib_md.c), loaded here.
 * Reports (stdout): "libucs\t<dli_fname>", "load\t<path>", "fail\t<path>\t<dlerror>" for a module
 * file that exists and does not load. Placeholders (@@...@@) are overwritten per layout. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
EXPORT const char *ucs_status_string(int status) { return status ? "error" : "Success"; }

/* The compiled default (UCX_MODULE_DIR from Makefile.am), a placeholder overwritten per layout:
 * not const, so that the compiler cannot fold the placeholder's text into the code that reads it. */
static char module_dir_default[256] = "@@FAKEUCX_MODULE_DIR@@";

/* UCX's global options table (src/ucs/config/global_opts.c): {name, default, doc, offset, parser};
 * doctor finds the compiled module directory as the default after the name "MODULE_DIR". */
typedef struct {
  const char *name, *dfl, *doc;
  size_t offset;
  const void *parser;
} field_t;
EXPORT const field_t ucs_global_opts_table[] = {
    {"MODULE_DIR", module_dir_default, "Directory to search for loadable modules", 0, NULL},
    {"MODULES", "all", "Comma-separated list of glob patterns specifying which module to load", 0, NULL},
    {"PLUGIN_PATH", "", "Colon-separated list of additional directories", 0, NULL},
    {NULL, NULL, NULL, 0, NULL}};

static void report(const char *what, const char *value, const char *more) {
  char line[8400];
  int n = snprintf(line, sizeof line, more ? "%s\t%s\t%s\n" : "%s\t%s\n", what, value, more);
  if (n > 0 && write(1, line, (size_t)n) < 0) {}
}

/* The files' variables (ucs_config_file_vars): a later assignment replaces an earlier one. */
static struct { char name[128], value[256]; } vars[64];
static int nvars;

static void file_var(const char *name, const char *value) {
  int i = 0;
  while (i < nvars && strcmp(vars[i].name, name)) i++;
  if (i == nvars && nvars == 64) return;
  if (i == nvars) nvars++;
  snprintf(vars[i].name, sizeof vars[i].name, "%s", name);
  snprintf(vars[i].value, sizeof vars[i].value, "%s", value);
}

#if STYLE >= 17
static const char *cpu_vendor(void) {  /* ucs_cpu_vendor_name, from what cpuid's vendor says */
  char line[256];
  const char *v = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "vendor_id", 9)) {
      v = strstr(line, "GenuineIntel") ? "Intel" : strstr(line, "AuthenticAMD") ? "AMD" : "unknown";
      break;
    }
  if (f) fclose(f);
  return v;
}
#endif

/* ucs_config_parse_config_file_line with its section filter (1.17 on). */
static char section_name[64];
static int section_skip;
static void file_line(const char *section, const char *name, const char *value) {
#if STYLE >= 17
  if (strcmp(section, section_name)) snprintf(section_name, sizeof section_name, "%s", section), section_skip = 0;
  else if (section_skip) return;
  section_skip = !strcmp(name, "CPU vendor") && fnmatch(value, cpu_vendor(), FNM_CASEFOLD) != 0;
  if (section_skip) return;
#else
  (void)section;
#endif
  file_var(name, value);
}

static char *rstrip(char *s) {
  char *p = s + strlen(s);
  while (p > s && isspace((unsigned char)p[-1])) *--p = '\0';
  return s;
}
static char *lskip(char *s) {
  while (*s && isspace((unsigned char)*s)) s++;
  return s;
}
/* inih's find_chars_or_comment: the first of chars, or a ';' after whitespace. */
static char *find_chars_or_comment(char *s, const char *chars) {
  int was_space = 0;
  while (*s && (!chars || !strchr(chars, *s)) && !(was_space && *s == ';')) was_space = isspace((unsigned char)*s), s++;
  return s;
}

/* inih's ini_parse_stream (INI_MAX_LINE 200, INI_ALLOW_MULTILINE, INI_ALLOW_INLINE_COMMENTS). */
static void parse_file(const char *dir, const char *file) {
  char path[4096], line[200], section[50] = "", prev_name[50] = "";
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "r");
  if (!f) return;
  section_name[0] = '\0', section_skip = 0;
  while (fgets(line, sizeof line, f)) {
    char *start = lskip(rstrip(line)), *end;
    if (strchr(";#", *start)) continue;
    if (*prev_name && *start && start > line) {
      file_line(section, prev_name, start);
    } else if (*start == '[') {
      end = find_chars_or_comment(start + 1, "]");
      if (*end == ']') *end = '\0', snprintf(section, sizeof section, "%s", start + 1), prev_name[0] = '\0';
    } else if (*start) {
      end = find_chars_or_comment(start, "=:");
      if (*end != '=' && *end != ':') continue;
      *end = '\0';
      char *name = rstrip(start), *value = end + 1;
      end = find_chars_or_comment(value, NULL);
      *end = '\0';
      value = rstrip(lskip(value));
      snprintf(prev_name, sizeof prev_name, "%s", name);
      file_line(section, name, value);
    }
  }
  fclose(f);
}

static const char *setting(const char *field) {  /* the environment first, then the files */
  char name[128];
  snprintf(name, sizeof name, "UCX_%s", field);
  const char *v = getenv(name);
  for (int i = 0; !v && i < nvars; i++)
    if (!strcmp(vars[i].name, name)) v = vars[i].value;
  return v;
}

/* UCX_MODULES: ucs_config_sscanf_allow_list; a value that does not parse keeps the default "all". */
enum { ALLOW_ALL, ALLOW, NEGATE };
static int modules_mode = ALLOW_ALL, nmodules;
static char modules_names[32][64];
static void parse_modules(const char *v) {
  char buf[256], *save = NULL;
  int mode = v[0] == '^' ? NEGATE : ALLOW, n = 0;
  snprintf(buf, sizeof buf, "%s", v + (mode == NEGATE));
  for (char *t = strtok_r(buf, ",", &save); t && n < 32; t = strtok_r(NULL, ",", &save))
    snprintf(modules_names[n++], sizeof modules_names[0], "%s", t);
  if (n >= 1 && !strcmp(modules_names[0], "all")) mode = ALLOW_ALL;  /* "all,x" fails: the default, all */
  modules_mode = mode, nmodules = mode == ALLOW_ALL ? 0 : n;
}
static int module_enabled(const char *name) {
  int found = 0;
  if (modules_mode == ALLOW_ALL) return 1;
  for (int i = 0; i < nmodules && !found; i++) found = !fnmatch(modules_names[i], name, 0);
  return modules_mode == ALLOW ? found : !found;
}

static char module_ext[256] = ".so";
static const char *dirs[40];
static int ndirs;
static char loaded[64][256];
static int nloaded;

EXPORT void ucs_load_modules(const char *framework, const char *list);

static int try_load(const char *path) {  /* dlopen as UCS_MODULE_FRAMEWORK_LOAD(uct, 0) does */
  (void)dlerror();
  void *dl = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  if (dl) {
    report("load", path, NULL);
    /* A module with a framework of its own (uct_ib in the ib module) loads it: fake_parts.c. */
    const char **fw = (const char **)dlsym(dl, "fake_module_framework");
    if (fw) ucs_load_modules(fw[0], fw[1]);
    return 1;
  }
  const char *err = dlerror();
  if (access(path, F_OK) == 0) report("fail", path, err ? err : "Unknown error");
  return 0;
}

#if STYLE >= 22
static void load_from_dir(const char *dir, const char *framework) {  /* ucs_module_load_from_dir */
  char prefix[256], base[256], path[4096];
  size_t plen, elen = strlen(module_ext);
  DIR *dp = opendir(dir);
  struct dirent *e;
  if (!dp) return;
  plen = (size_t)snprintf(prefix, sizeof prefix, "lib%s_", framework);
  while ((e = readdir(dp))) {
    size_t len = strlen(e->d_name);
    if (len <= plen + elen || strncmp(e->d_name, prefix, plen) || strcmp(e->d_name + len - elen, module_ext)) continue;
    snprintf(base, sizeof base, "%.*s", (int)(len - elen), e->d_name);
    if (strchr(base + plen, '_') || !module_enabled(base + plen)) continue;
    int seen = 0;
    for (int i = 0; i < nloaded && !seen; i++) seen = !strcmp(loaded[i], base);
    if (seen) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (try_load(path) && nloaded < 64) snprintf(loaded[nloaded++], sizeof loaded[0], "%s", base);
  }
  closedir(dp);
}
#endif

EXPORT void ucs_load_modules(const char *framework, const char *list) {
  char path[4096], buf[256], *save = NULL;
#if STYLE >= 22
  (void)list, (void)path, (void)buf, (void)save;
  for (int i = 0; i < ndirs; i++) load_from_dir(dirs[i], framework);
#else
  snprintf(buf, sizeof buf, "%s", list);
  for (char *name = strtok_r(buf, ":", &save); name; name = strtok_r(NULL, ":", &save)) {
    if (!module_enabled(name)) continue;
    for (int i = 0; i < ndirs; i++) {
      snprintf(path, sizeof path, "%s/lib%s_%s%s", dirs[i], framework, name, module_ext);
      if (try_load(path)) {
        if (nloaded < 64) snprintf(loaded[nloaded++], sizeof loaded[0], "lib%s_%s", framework, name);
        break;
      }
    }
  }
#endif
}

/* ucs_module_loader_init_paths and the configuration, before libuct's constructor loads its modules. */
__attribute__((constructor)) static void init_at_start(void) {
  Dl_info info;
  static char libdir[4096], dl_dir[4096], module_dir[4096], plugin[4096];
  if (!dladdr((void *)ucs_status_string, &info) || !info.dli_fname) return;
  report("libucs", info.dli_fname, NULL);
  /* ucs_config_parse_config_files */
  snprintf(libdir, sizeof libdir, "%s", info.dli_fname);
  parse_file("/etc/ucx", "ucx.conf");  /* UCX_CONFIG_DIR: sysconfdir/ucx */
  parse_file(dirname(libdir), STYLE >= 17 ? "../etc/ucx/ucx.conf" : "../etc/ucx.conf");
  if (getenv("HOME")) parse_file(getenv("HOME"), "ucx.conf");
  if (getenv("UCX_CONFIG_DIR")) parse_file(getenv("UCX_CONFIG_DIR"), "ucx.conf");
  parse_file(".", "ucx.conf");
  const char *v = setting("MODULES");
  if (v) parse_modules(v);
  v = setting("MODULE_DIR");
  snprintf(module_dir, sizeof module_dir, "%s", v ? v : module_dir_default);
  /* ucs_module_loader_add_dl_dir: the extension, then <dir of libucs>/ucx */
  const char *base = strrchr(info.dli_fname, '/'), *dot;
  dot = strchr(base ? base + 1 : info.dli_fname, '.');
  if (dot) snprintf(module_ext, sizeof module_ext, "%s", dot);
  snprintf(libdir, sizeof libdir, "%s", info.dli_fname);
  snprintf(dl_dir, sizeof dl_dir, "%s/ucx", dirname(libdir));
#if STYLE >= 22
  v = setting("PLUGIN_PATH");  /* ucs_config_sscanf_path_array: ':'-separated, empty entries dropped */
  snprintf(plugin, sizeof plugin, "%s", v ? v : "");
  char *save = NULL;
  for (char *d = strtok_r(plugin, ":", &save); d && ndirs < 38; d = strtok_r(NULL, ":", &save)) dirs[ndirs++] = d;
#else
  (void)plugin;
#endif
  dirs[ndirs++] = dl_dir;
  dirs[ndirs++] = module_dir;
}
