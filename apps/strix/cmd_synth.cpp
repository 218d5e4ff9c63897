// PLACEHOLDER: refuses until implemented.
#include "apps/strix/commands.h"
#include "core/error.h"

namespace strix::app {

int cmd_synth(int, char**) { throw Refusal("strix synth is not implemented yet"); }

}  // namespace strix::app
