// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's ib_client: what happens when an RDMA device comes and goes.
 *
 * ib_core calls add() for every device registered before or after mrpin,
 * remove() when a device goes away or mrpin unregisters, and rename().  A
 * new device gets its record (device.c), then its driver's registration
 * function is watched for the registrations it refuses (hook.c); a device
 * that goes is unwatched first, then forgotten.
 *
 * mrpin keeps no client data: device.c finds its records by the device's
 * index.  It never calls kernel verbs.
 *
 * Locking: none of its own; ib_core serialises a client's calls for one
 * device.
 */
#include <rdma/ib_verbs.h>

#include "mrpin.h"

static int mrpin_client_add(struct ib_device *ibdev)
{
	int ret;

	ret = mrpin_dev_add(ibdev);
	if (!ret)
		mrpin_hook_driver_add(ibdev);
	return ret;
}

static void mrpin_client_remove(struct ib_device *ibdev, void *client_data)
{
	mrpin_hook_driver_remove(ibdev);
	mrpin_dev_remove(ibdev);
}

static void mrpin_client_rename(struct ib_device *ibdev, void *client_data)
{
	mrpin_dev_rename(ibdev);
}

static struct ib_client mrpin_client = {
	.name = "mrpin",
	.add = mrpin_client_add,
	.remove = mrpin_client_remove,
	.rename = mrpin_client_rename,
	.no_kverbs_req = 1,
};

/**
 * mrpin_client_init() - start following RDMA devices
 *
 * Context: process context; add() runs for every existing device.
 * Return: 0 or a negative errno.
 */
int mrpin_client_init(void)
{
	return ib_register_client(&mrpin_client);
}

/**
 * mrpin_client_exit() - stop following RDMA devices
 *
 * Context: process context; remove() runs for every device.
 */
void mrpin_client_exit(void)
{
	ib_unregister_client(&mrpin_client);
}
