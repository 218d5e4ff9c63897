// PLACEHOLDER: refuses until implemented.
#include "apps/strix/commands.h"
#include "core/error.h"

namespace strix::app {

int cmd_inspect(int, char**) { throw Refusal("strix inspect is not implemented yet"); }

}  // namespace strix::app
