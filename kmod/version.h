/* SPDX-License-Identifier: GPL-2.0 */
/* The one place the version of mrpin (module and tools) is set. */
#ifndef _MRPIN_VERSION_H
#define _MRPIN_VERSION_H
#define MRPIN_VERSION "0.1.0"
#endif
