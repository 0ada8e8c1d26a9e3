// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin's records of RDMA devices.
 *
 * client.c, mrpin's ib_client, calls mrpin_dev_add() for every device
 * registered before or after mrpin, and mrpin_dev_remove() when a device
 * goes away (or when mrpin unregisters).  Each device gets a struct
 * mrpin_dev, found by the device's index (ib_device.index, unique while
 * the device is registered) and on the mrpin_devs list while the device
 * exists.
 *
 * A pin takes a reference on the record, so the record outlives the device
 * when memory stays pinned after removal: the umem's release runs after
 * every client's remove() (ib_uverbs cleans up its objects last) and must
 * still find something to uncharge.  Records are freed through RCU because
 * the pin path finds them under rcu_read_lock(), racing with removal.  They
 * live in a slab cache of their own (mrpin_dev), so fault injection can
 * fail a device's add alone.
 *
 * Locking: mrpin_devs_lock (mutex) protects the list and the stores to
 * mrpin_devs_by_index (which has its own lock for readers under RCU);
 * dev->name_lock protects the name, which a rename changes; the counters
 * are atomics.
 */
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "mrpin.h"

LIST_HEAD(mrpin_devs);
/* Protects mrpin_devs and the stores to mrpin_devs_by_index. */
DEFINE_MUTEX(mrpin_devs_lock);
static DEFINE_XARRAY(mrpin_devs_by_index);
static struct kmem_cache *mrpin_dev_cache;

static void mrpin_dev_free_rcu(struct rcu_head *rcu)
{
	kmem_cache_free(mrpin_dev_cache, container_of(rcu, struct mrpin_dev, rcu));
}

static void mrpin_dev_free(struct kref *ref)
{
	struct mrpin_dev *dev = container_of(ref, struct mrpin_dev, ref);

	WARN_ONCE(atomic64_read(&dev->usage.pins) ||
		  atomic64_read(&dev->usage.pinned_bytes),
		  "mrpin: device %s freed with %lld pins, %lld bytes\n",
		  dev->name, atomic64_read(&dev->usage.pins),
		  atomic64_read(&dev->usage.pinned_bytes));
	call_rcu(&dev->rcu, mrpin_dev_free_rcu);
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
	dev = xa_load(&mrpin_devs_by_index, ibdev->index);
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

/**
 * mrpin_dev_add() - make the record of a new device
 * @ibdev: the device, registered with ib_core
 *
 * Context: process context (ib_client add()).
 * Return: 0 or a negative errno.
 */
int mrpin_dev_add(struct ib_device *ibdev)
{
	struct mrpin_dev *dev;
	int ret;

	dev = kmem_cache_zalloc(mrpin_dev_cache, GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	kref_init(&dev->ref);
	spin_lock_init(&dev->name_lock);
	strscpy(dev->name, dev_name(&ibdev->dev), sizeof(dev->name));
	dev->node_guid = be64_to_cpu(ibdev->node_guid);
	dev->max_mr = ibdev->attrs.max_mr;

	mutex_lock(&mrpin_devs_lock);
	ret = xa_insert(&mrpin_devs_by_index, ibdev->index, dev, GFP_KERNEL);
	if (!ret)
		list_add_tail(&dev->node, &mrpin_devs);
	mutex_unlock(&mrpin_devs_lock);
	if (ret)
		kmem_cache_free(mrpin_dev_cache, dev);
	return ret;
}

/**
 * mrpin_dev_remove() - forget a device that goes away
 * @ibdev: the device mrpin_dev_add() made a record of
 *
 * Its pins keep the record until they are released.
 *
 * Context: process context (ib_client remove()).
 */
void mrpin_dev_remove(struct ib_device *ibdev)
{
	struct mrpin_dev *dev;

	mutex_lock(&mrpin_devs_lock);
	dev = xa_erase(&mrpin_devs_by_index, ibdev->index);
	if (dev)
		list_del(&dev->node);
	mutex_unlock(&mrpin_devs_lock);
	if (dev)
		mrpin_dev_put(dev);
}

/**
 * mrpin_dev_rename() - take a device's new name
 * @ibdev: the device, renamed
 *
 * Context: process context (ib_client rename()).
 */
void mrpin_dev_rename(struct ib_device *ibdev)
{
	struct mrpin_dev *dev = mrpin_dev_get(ibdev);

	if (!dev)
		return;
	spin_lock(&dev->name_lock);
	strscpy(dev->name, dev_name(&ibdev->dev), sizeof(dev->name));
	spin_unlock(&dev->name_lock);
	mrpin_dev_put(dev);
}

/**
 * mrpin_device_init() - set up the device records' cache
 *
 * Context: process context, before the ib_client is registered.
 * Return: 0 or -ENOMEM.
 */
int mrpin_device_init(void)
{
	mrpin_dev_cache = mrpin_cache_create("mrpin_dev",
					     sizeof(struct mrpin_dev));
	return mrpin_dev_cache ? 0 : -ENOMEM;
}

/**
 * mrpin_device_exit() - check that every device record is gone, and free
 * the cache
 *
 * Context: process context, after the ib_client is unregistered and every
 * pin record has been dropped.
 */
void mrpin_device_exit(void)
{
	WARN_ONCE(!list_empty(&mrpin_devs), "mrpin: device records left\n");
	xa_destroy(&mrpin_devs_by_index);
	rcu_barrier();	/* the records' mrpin_dev_free_rcu() */
	kmem_cache_destroy(mrpin_dev_cache);
}
