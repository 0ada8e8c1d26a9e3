// SPDX-License-Identifier: GPL-2.0
/*
 * The one place the mrpin:* tracepoints (trace.h) are created.
 *
 * pin.c fires mrpin_pin and mrpin_unpin, events.c mrpin_deny; both include
 * trace.h for the declarations only.  Kept apart so that creating them
 * ties no file of the pin path to another: this file uses nothing of the
 * module's and sits at the bottom of its layers.
 */
#define CREATE_TRACE_POINTS
#include "trace.h"
