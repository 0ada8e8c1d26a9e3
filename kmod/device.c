// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's view of RDMA devices, as an ib_client.
 *
 * ib_core calls mrpin_ib_add() for every device registered before or after
 * mrpin, and mrpin_ib_remove() when a device goes away (or when mrpin
 * unregisters).  Each device gets a struct mrpin_dev, stored as the client
 * data, on the mrpin_devs list while the device exists.
 *
 * A pin takes a reference on the record, so the record outlives the device
 * when memory stays pinned after removal: the umem's release runs after
 * every client's remove() (ib_uverbs cleans up its objects last) and must
 * still find something to uncharge.  Records are freed through RCU because
 * the pin path finds them with ib_get_client_data() under rcu_read_lock(),
 * racing with removal.
 *
 * Locking: mrpin_devs_lock (mutex) protects the list; dev->name_lock
 * protects the name, which rename() changes; the counters are atomics.
 */
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "compat.h"
#include "mrpin.h"

LIST_HEAD(mrpin_devs);
/* Protects mrpin_devs. */
DEFINE_MUTEX(mrpin_devs_lock);

static struct ib_client mrpin_client;

static void mrpin_dev_free(struct kref *ref)
{
	struct mrpin_dev *dev = container_of(ref, struct mrpin_dev, ref);

	WARN_ONCE(atomic64_read(&dev->usage.pins) ||
		  atomic64_read(&dev->usage.pinned_bytes),
		  "mrpin: device %s freed with %lld pins, %lld bytes\n",
		  dev->name, atomic64_read(&dev->usage.pins),
		  atomic64_read(&dev->usage.pinned_bytes));
	kfree_rcu(dev, rcu);
}

/**
 * mrpin_dev_get() - find the record of a device and take a reference
 * @ibdev: the device
 *
 * Context: any context that may take rcu_read_lock().
 * Return: the record, or NULL if mrpin does not (or no longer) know @ibdev.
 */
struct mrpin_dev *mrpin_dev_get(struct ib_device *ibdev)
{
	struct mrpin_dev *dev;

	rcu_read_lock();
	dev = ib_get_client_data(ibdev, &mrpin_client);
	if (dev && !kref_get_unless_zero(&dev->ref))
		dev = NULL;
	rcu_read_unlock();
	return dev;
}

/**
 * mrpin_dev_put() - drop a reference taken by mrpin_dev_get()
 * @dev: the record
 *
 * Context: any context.
 */
void mrpin_dev_put(struct mrpin_dev *dev)
{
	kref_put(&dev->ref, mrpin_dev_free);
}

/**
 * mrpin_dev_name() - copy the current name of a device
 * @dev: the record
 * @buf: where to copy it
 * @len: size of @buf
 *
 * Context: any context; takes dev->name_lock.
 */
void mrpin_dev_name(struct mrpin_dev *dev, char *buf, size_t len)
{
	spin_lock(&dev->name_lock);
	strscpy(buf, dev->name, len);
	spin_unlock(&dev->name_lock);
}

static int mrpin_ib_add(struct ib_device *ibdev)
{
	struct mrpin_dev *dev;

	dev = kzalloc_obj(*dev);
	if (!dev)
		return -ENOMEM;
	kref_init(&dev->ref);
	spin_lock_init(&dev->name_lock);
	strscpy(dev->name, dev_name(&ibdev->dev), sizeof(dev->name));
	dev->node_guid = be64_to_cpu(ibdev->node_guid);
	dev->max_mr = ibdev->attrs.max_mr;

	mutex_lock(&mrpin_devs_lock);
	list_add_tail(&dev->node, &mrpin_devs);
	mutex_unlock(&mrpin_devs_lock);
	ib_set_client_data(ibdev, &mrpin_client, dev);
	return 0;
}

static void mrpin_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct mrpin_dev *dev = client_data;

	mutex_lock(&mrpin_devs_lock);
	list_del(&dev->node);
	mutex_unlock(&mrpin_devs_lock);
	mrpin_dev_put(dev);
}

static void mrpin_ib_rename(struct ib_device *ibdev, void *client_data)
{
	struct mrpin_dev *dev = client_data;

	spin_lock(&dev->name_lock);
	strscpy(dev->name, dev_name(&ibdev->dev), sizeof(dev->name));
	spin_unlock(&dev->name_lock);
}

static struct ib_client mrpin_client = {
	.name = "mrpin",
	.add = mrpin_ib_add,
	.remove = mrpin_ib_remove,
	.rename = mrpin_ib_rename,
	/* mrpin only watches devices; it never calls kernel verbs. */
	.no_kverbs_req = 1,
};

/**
 * mrpin_device_init() - start following RDMA devices
 *
 * Context: process context; calls mrpin_ib_add() for every existing device.
 * Return: 0 or a negative errno.
 */
int mrpin_device_init(void)
{
	return ib_register_client(&mrpin_client);
}

/**
 * mrpin_device_exit() - stop following RDMA devices
 *
 * Context: process context, after the hooks are gone and every pin
 * record has been dropped.
 */
void mrpin_device_exit(void)
{
	ib_unregister_client(&mrpin_client);
	WARN_ONCE(!list_empty(&mrpin_devs), "mrpin: device records left\n");
}
