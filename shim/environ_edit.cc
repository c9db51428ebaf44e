// Editing the process environment: see environ_edit.h.
#include "environ_edit.h"

#include "sys.h"

#include <stdlib.h>
#include <unistd.h>

namespace ucxtls {

namespace {

// A pointer store that a concurrent reader sees whole, after the string it points to.
inline void publish(char **slot, char *value) { __atomic_store_n(slot, value, __ATOMIC_RELEASE); }

bool named(const char *entry, const char *name, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (entry[i] != name[i]) return false;  // also stops at entry's NUL (name has none in [0, n))
  return entry[n] == '=';
}

}  // namespace

int env_remove(char **arr, const char *name, size_t n) {
  int removed = 0;
  for (char **e = arr; e && *e;) {
    if (!named(*e, name, n)) {
      e++;
      continue;
    }
    // Whole-pointer stores in the same array: a concurrent reader never reads freed memory.
    for (char **d = e;; d++) {
      char *next = d[1];
      publish(d, next);
      if (!next) break;
    }
    removed++;
  }
  return removed;
}

const char *env_value(char *const *arr, const char *name) {
  const size_t n = env_name_len(name);
  for (char *const *e = arr; e; e++) {
    const char *entry = __atomic_load_n(e, __ATOMIC_RELAXED);  // once: see options.cc read_inputs
    if (!entry) break;
    if (named(entry, name, n)) return entry + n + 1;
  }
  return nullptr;
}

size_t env_scan(char *const *arr, const char *const *names, int n, int *missing) {
  size_t len[kEnvEditMax];
  bool have[kEnvEditMax] = {};
  for (int i = 0; i < n; i++) len[i] = env_name_len(names[i]);
  size_t count = 0;
  for (char *const *e = arr; e && *e; e++, count++)
    for (int i = 0; i < n; i++) have[i] = have[i] || named(*e, names[i], len[i]);
  *missing = 0;
  for (int i = 0; i < n; i++) *missing += !have[i];
  return count;
}

int env_write(char ***env, char *const *entries, int n, char **room, size_t room_cap, char **added) {
  char **cur = *env;
  size_t len[kEnvEditMax];
  bool have[kEnvEditMax] = {};
  for (int i = 0; i < n; i++) len[i] = env_name_len(entries[i]);
  size_t size = 0;
  for (char **e = cur; e && *e; e++, size++) {
    for (int i = 0; i < n; i++) {
      if (!named(*e, entries[i], len[i])) continue;
      publish(e, entries[i]);
      have[i] = true;
    }
  }
  int missing = 0;
  for (int i = 0; i < n; i++)
    if (!have[i]) added[missing++] = entries[i];
  if (!missing) return 0;
  if (!room || size + size_t(missing) + 1 > room_cap) return -1;  // the environment grew meanwhile
  for (size_t i = 0; i < size; i++) room[i] = cur[i];
  for (int i = 0; i < missing; i++) room[size + size_t(i)] = added[i];
  room[size + size_t(missing)] = nullptr;
  __atomic_store_n(env, room, __ATOMIC_RELEASE);  // the one store that adds them all
  return missing;
}

namespace {

constexpr char kChanged[] = "another thread changed the environment meanwhile";

// The edit of *target is done: a copy (arr) is published over it, never over an array another
// thread published meanwhile; an edit in place is seen while *target is still the environment.
const char *publish_over(char ***target, char **arr) {
  char **expected = *target;
  if (arr == expected) return __atomic_load_n(&__environ, __ATOMIC_ACQUIRE) == expected ? nullptr : kChanged;
  if (!__atomic_compare_exchange_n(&__environ, &expected, arr, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    return kChanged;
  *target = arr;
  return nullptr;
}

char **copy_into(char *block, char *const *arr, size_t count) {
  char **room = reinterpret_cast<char **>(block);
  for (size_t i = 0; i < count; i++) room[i] = arr[i];
  room[count] = nullptr;
  return room;
}

}  // namespace

const char *process_env_write(char ***target, bool copy, const char *const *names, const char *const *values, int n) {
  if (n > kEnvEditMax) return "too many variables";
  size_t len[kEnvEditMax][2], strings = 0;
  for (int i = 0; i < n; i++) {
    len[i][0] = __builtin_strlen(names[i]);
    len[i][1] = __builtin_strlen(values[i]);
    strings += len[i][0] + 1 + len[i][1] + 1;
  }
  // One block: the new array (a name missing, or a copy), then the strings. glibc frees only
  // arrays it allocated itself.
  int missing = 0;
  const size_t count = env_scan(*target, names, n, &missing);
  const bool room_needed = missing || copy;
  const size_t cap = room_needed ? count + size_t(missing) + 1 : 0;
  char *block = static_cast<char *>(allocate_block(cap * sizeof(char *) + strings));
  if (!block) return "no memory";  // nothing has changed
  char *entries[kEnvEditMax], *added[kEnvEditMax];
  char *p = block + cap * sizeof(char *);
  for (int i = 0; i < n; i++) {
    entries[i] = p;
    __builtin_memcpy(p, names[i], len[i][0]);
    p += len[i][0];
    *p++ = '=';
    __builtin_memcpy(p, values[i], len[i][1] + 1);
    p += len[i][1] + 1;
  }
  // A copy is both the array edited in place and the room for the additions.
  char **arr = copy ? copy_into(block, *target, count) : *target;
  char **room = room_needed ? reinterpret_cast<char **>(block) : nullptr;
  const int k = env_write(&arr, entries, n, room, cap, added);
  if (k < 0) return "another thread grew the environment meanwhile";  // the additions are lost, not written past
  return publish_over(target, arr);
}

const char *process_env_remove(char ***target, bool copy, const char *const *names, int n) {
  char **arr = *target;
  if (copy) {
    int missing = 0;
    const size_t count = env_scan(arr, names, n, &missing);
    if (missing == n) return nullptr;  // nothing to remove: nothing to copy
    char *block = static_cast<char *>(allocate_block((count + 1) * sizeof(char *)));
    if (!block) return "no memory";
    arr = copy_into(block, *target, count);
  }
  for (int i = 0; i < n; i++) env_remove(arr, names[i], env_name_len(names[i]));
  return publish_over(target, arr);
}

}  // namespace ucxtls
