// The target's functions are inline, in its header; SwiftPM builds a C target from at least
// one source file.
#include "CObjectLogStoreSupport.h"
