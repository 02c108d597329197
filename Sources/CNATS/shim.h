#ifndef TETHER_CNATS_SHIM_H
#define TETHER_CNATS_SHIM_H

// Swift-facing view of the NATS C client (libnats 3.4.x, Debian libnats-dev).
// Everything is used straight from <nats/nats.h>; `TetherNATS` wraps it.

#include <nats/nats.h>
#include <stdlib.h>
#include <string.h>

#endif
