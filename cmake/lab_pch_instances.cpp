// The one place where the classes listed in lab_pch.h are compiled (their explicit
// instantiations: a definition may follow the header's declaration); every program built
// from the lab links this object.
#include "lab_pch.h"

#ifndef LAB_PCH_CODEGEN  // there, the header itself holds them
#define LAB_PCH_DEFINE(...) template class __VA_ARGS__;
LAB_PCH_INSTANCES(LAB_PCH_DEFINE)
#endif
