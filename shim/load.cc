// One way in (see load.h).
#include "load.h"

namespace ucxtls {

void load(char *const *envp, bool secure, Inputs *in, Settings *s, const char *tmpl) {
  in->secure = secure;
  if (!in->secure) read_inputs(envp, in);
  if (tmpl) {
    in->var[kTemplate] = tmpl;
    in->var[kUcxTls] = in->var[kDerived] = nullptr;
  }
  parse_settings(*in, s);
}

}  // namespace ucxtls
