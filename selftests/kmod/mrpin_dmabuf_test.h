/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mrpin_dmabuf_test's ioctls on /dev/mrpin_dmabuf_test, for the module and
 * the test program (selftests/mrpin_dmabuf.c).
 */
#ifndef _MRPIN_DMABUF_TEST_H
#define _MRPIN_DMABUF_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define MRPIN_DMABUF_DEVICE_MAX 64

/* Import [offset, offset + size) of dma-buf fd on IB device @device. */
struct mrpin_dmabuf_reg_arg {
	__s32 fd;
	__u32 pad;
	__u64 offset;
	__u64 size;
	char device[MRPIN_DMABUF_DEVICE_MAX];
};

/* Export a dma-buf of that many bytes (a __u64): returns its fd. */
#define MRPIN_DMABUF_EXPORT	_IOW('M', 1, __u64)
#define MRPIN_DMABUF_REG	_IOW('M', 2, struct mrpin_dmabuf_reg_arg)
/* Release the latest import. */
#define MRPIN_DMABUF_DEREG	_IO('M', 3)

#endif
