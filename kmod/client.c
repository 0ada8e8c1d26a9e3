// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's ib_client: what happens when an RDMA device comes and goes.
 *
 * ib_core calls add() for every device registered before or after mrpin,
 * remove() when a device goes away or mrpin unregisters, and rename().  A
 * new device gets its record (device.c), then its driver's registration
 * function is watched for the registrations it refuses (hook.c); a device
 * that goes is unwatched first, then forgotten.  A device whose record
 * cannot be made is logged, and ib_core calls nothing more of mrpin's for
 * it: its pins go untracked.
 *
 * The client data of a device says whether hook.c counted it among its
 * driver's watched devices: only then is it unwatched when it goes (a
 * driver's count must not drop for a device that never added to it).
 * device.c finds its records by the device's index.  mrpin never calls
 * kernel verbs.
 *
 * Locking: none of its own; ib_core serialises a client's calls for one
 * device.
 */
#include <rdma/ib_verbs.h>

#include "mrpin.h"

static struct ib_client mrpin_client;

/* The client data of a device its driver's watch counts. */
static const int mrpin_client_watched;
#define MRPIN_CLIENT_WATCHED ((void *)&mrpin_client_watched)

static int mrpin_client_add(struct ib_device *ibdev)
{
	int ret;

	ret = mrpin_dev_add(ibdev);
	if (ret) {
		pr_warn("mrpin: %s: cannot track this device (%d): its pins go untracked\n",
			dev_name(&ibdev->dev), ret);
		return ret;
	}
	if (mrpin_hook_driver_add(ibdev))
		ib_set_client_data(ibdev, &mrpin_client, MRPIN_CLIENT_WATCHED);
	return 0;
}

static void mrpin_client_remove(struct ib_device *ibdev, void *client_data)
{
	if (client_data == MRPIN_CLIENT_WATCHED)
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
