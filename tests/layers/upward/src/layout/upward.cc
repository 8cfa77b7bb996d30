// A layout file that includes the refit layer above it: CheckLayers.cmake must refuse it.
#include "dcr/refit/plan.h"
