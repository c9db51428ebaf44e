// One way in (see load.h).
#include "load.h"

#include <sys/auxv.h>

namespace ucxtls {

void load(char *const *envp, Inputs *in, Settings *s, const char *tmpl) {
  in->secure = getauxval(AT_SECURE) != 0;
  if (!in->secure) read_inputs(envp, in);
  if (tmpl) {
    in->var[kTemplate] = tmpl;
    in->var[kUcxTls] = in->var[kDerived] = nullptr;
  }
  parse_settings(*in, s);
}

}  // namespace ucxtls
