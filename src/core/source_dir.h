// Where the source tree and the built `strix` binary are, for the tools that
// look up npm packages (the reference libllama, real vocabularies) next to the
// sources, and for tests. The paths live in one generated file
// (cmake/paths.cpp.in) instead of a -D on every compile, so that the compile
// commands do not depend on where the tree is checked out and ccache serves a
// fresh clone from the same cache.
#pragma once

namespace strix {

const char* source_dir();  // the source tree's root, absolute
const char* strix_binary_path();  // the built `strix` executable, absolute

}  // namespace strix
