// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_dmabuf_test: dma-buf registrations for mrpin's tests, made as a
 * driver's reg_user_mr_dmabuf() makes them, through ib_core's import.
 *
 * rxe has no dma-buf registration of its own (it has no DMA device to
 * attach with), so this module stands in for a driver that has one, on
 * the test's rxe device:
 *   - MRPIN_DMABUF_EXPORT makes a dma-buf of pages of this module's and
 *     returns its descriptor, as a GPU driver exports its memory;
 *   - MRPIN_DMABUF_REG imports a range of a dma-buf with
 *     ib_umem_dmabuf_get_pinned_with_dma_device() for the named IB device,
 *     with this module's device as the DMA device (mlx5's data-direct
 *     registrations do the same), in the calling process, and keeps the
 *     umem until MRPIN_DMABUF_DEREG or the file's release, which release
 *     it with ib_umem_release().
 * Kernels whose ib_core has no such import (probes.h) fail MRPIN_DMABUF_REG
 * with EOPNOTSUPP.
 *
 * The IB devices are found as an ib_client sees them come and go.
 *
 * Locking: mrpin_dmabuf_lock (mutex) guards mrpin_dmabuf_ibdevs, and is
 * held across an import, so that the device stays; each open file's umems
 * are a list under its own mutex; an exported buffer's pages are fixed
 * once made and freed with the buffer.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "compat.h"
#include "mrpin_dmabuf_test.h"

#define MRPIN_DMABUF_MAX_PAGES 256

/* The pages behind one exported dma-buf. */
struct mrpin_dmabuf_buf {
	unsigned long npages;
	struct page *pages[];
};

/* One import of the calling file. */
struct mrpin_dmabuf_import {
	struct list_head node;
	struct ib_umem *umem;
};

struct mrpin_dmabuf_file {
	struct mutex lock;	/* @imports */
	struct list_head imports;
};

static struct miscdevice mrpin_dmabuf_dev;

#define MRPIN_DMABUF_IBDEVS 8

static DEFINE_MUTEX(mrpin_dmabuf_lock);
static struct ib_device *mrpin_dmabuf_ibdevs[MRPIN_DMABUF_IBDEVS];

static int mrpin_dmabuf_ibdev_add(struct ib_device *ibdev)
{
	unsigned int i;

	mutex_lock(&mrpin_dmabuf_lock);
	for (i = 0; i < MRPIN_DMABUF_IBDEVS; i++) {
		if (!mrpin_dmabuf_ibdevs[i]) {
			mrpin_dmabuf_ibdevs[i] = ibdev;
			break;
		}
	}
	mutex_unlock(&mrpin_dmabuf_lock);
	return 0;
}

static void mrpin_dmabuf_ibdev_remove(struct ib_device *ibdev, void *data)
{
	unsigned int i;

	mutex_lock(&mrpin_dmabuf_lock);
	for (i = 0; i < MRPIN_DMABUF_IBDEVS; i++)
		if (mrpin_dmabuf_ibdevs[i] == ibdev)
			mrpin_dmabuf_ibdevs[i] = NULL;
	mutex_unlock(&mrpin_dmabuf_lock);
}

static struct ib_client mrpin_dmabuf_client = {
	.name = "mrpin_dmabuf_test",
	.add = mrpin_dmabuf_ibdev_add,
	.remove = mrpin_dmabuf_ibdev_remove,
};

/* The device named @name; under mrpin_dmabuf_lock. */
static struct ib_device *mrpin_dmabuf_ibdev(const char *name)
{
	unsigned int i;

	for (i = 0; i < MRPIN_DMABUF_IBDEVS; i++)
		if (mrpin_dmabuf_ibdevs[i] &&
		    !strcmp(dev_name(&mrpin_dmabuf_ibdevs[i]->dev), name))
			return mrpin_dmabuf_ibdevs[i];
	return NULL;
}

static struct sg_table *mrpin_dmabuf_map(struct dma_buf_attachment *at,
					 enum dma_data_direction dir)
{
	struct mrpin_dmabuf_buf *buf = at->dmabuf->priv;
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc_obj(*sgt, GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages(sgt, buf->pages, buf->npages, 0,
					buf->npages << PAGE_SHIFT, GFP_KERNEL);
	if (!ret) {
		ret = dma_map_sgtable(at->dev, sgt, dir, 0);
		if (ret)
			sg_free_table(sgt);
	}
	if (ret) {
		kfree(sgt);
		return ERR_PTR(ret);
	}
	return sgt;
}

static void mrpin_dmabuf_unmap(struct dma_buf_attachment *at,
			       struct sg_table *sgt,
			       enum dma_data_direction dir)
{
	dma_unmap_sgtable(at->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static void mrpin_dmabuf_buf_release(struct dma_buf *dmabuf)
{
	struct mrpin_dmabuf_buf *buf = dmabuf->priv;
	unsigned long i;

	for (i = 0; i < buf->npages; i++)
		__free_page(buf->pages[i]);
	kfree(buf);
}

static const struct dma_buf_ops mrpin_dmabuf_ops = {
	.map_dma_buf = mrpin_dmabuf_map,
	.unmap_dma_buf = mrpin_dmabuf_unmap,
	.release = mrpin_dmabuf_buf_release,
};

static long mrpin_dmabuf_export(u64 bytes)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	unsigned long npages = bytes >> PAGE_SHIFT, i;
	struct mrpin_dmabuf_buf *buf;
	struct dma_buf *dmabuf;
	int fd;

	if (!npages || npages > MRPIN_DMABUF_MAX_PAGES || bytes & ~PAGE_MASK)
		return -EINVAL;
	buf = kzalloc(struct_size(buf, pages, npages), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < npages; i++) {
		buf->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!buf->pages[i])
			break;
		buf->npages++;
	}
	if (buf->npages < npages) {
		fd = -ENOMEM;
		goto err;
	}
	info.ops = &mrpin_dmabuf_ops;
	info.size = bytes;
	info.flags = O_RDWR | O_CLOEXEC;
	info.priv = buf;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		fd = PTR_ERR(dmabuf);
		goto err;
	}
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0)
		dma_buf_put(dmabuf);	/* frees buf */
	return fd;
err:
	for (i = 0; i < buf->npages; i++)
		__free_page(buf->pages[i]);
	kfree(buf);
	return fd;
}

/* The import, with this module's device as the DMA device. */
static struct ib_umem_dmabuf *
mrpin_dmabuf_import_range(struct ib_device *ibdev,
			  const struct mrpin_dmabuf_reg_arg *arg)
{
#ifdef MRPIN_HAVE_UMEM_DMABUF_WITH_DMA_DEVICE
	return ib_umem_dmabuf_get_pinned_with_dma_device(ibdev,
							 mrpin_dmabuf_dev.this_device,
							 arg->offset, arg->size,
							 arg->fd,
							 IB_ACCESS_LOCAL_WRITE);
#else
	return ERR_PTR(-EOPNOTSUPP);
#endif
}

/* Not inlined: the caller mrpin shows in `pins`. */
static noinline long mrpin_dmabuf_reg(struct mrpin_dmabuf_file *f,
				      const struct mrpin_dmabuf_reg_arg *arg)
{
	struct mrpin_dmabuf_import *imp;
	struct ib_umem_dmabuf *umem;
	struct ib_device *ibdev;

	imp = kzalloc_obj(*imp, GFP_KERNEL);
	if (!imp)
		return -ENOMEM;
	mutex_lock(&mrpin_dmabuf_lock);
	ibdev = mrpin_dmabuf_ibdev(arg->device);
	umem = ibdev ? mrpin_dmabuf_import_range(ibdev, arg) : ERR_PTR(-ENODEV);
	mutex_unlock(&mrpin_dmabuf_lock);
	if (IS_ERR(umem)) {
		kfree(imp);
		return PTR_ERR(umem);
	}
	imp->umem = &umem->umem;
	mutex_lock(&f->lock);
	list_add(&imp->node, &f->imports);
	mutex_unlock(&f->lock);
	return 0;
}

static long mrpin_dmabuf_dereg(struct mrpin_dmabuf_file *f)
{
	struct mrpin_dmabuf_import *imp;

	mutex_lock(&f->lock);
	imp = list_first_entry_or_null(&f->imports, struct mrpin_dmabuf_import,
				       node);
	if (imp)
		list_del(&imp->node);
	mutex_unlock(&f->lock);
	if (!imp)
		return -ENOENT;
	ib_umem_release(imp->umem);
	kfree(imp);
	return 0;
}

static long mrpin_dmabuf_ioctl(struct file *file, unsigned int cmd,
			       unsigned long uarg)
{
	struct mrpin_dmabuf_file *f = file->private_data;
	struct mrpin_dmabuf_reg_arg arg;
	u64 bytes;

	switch (cmd) {
	case MRPIN_DMABUF_EXPORT:
		if (copy_from_user(&bytes, (void __user *)uarg, sizeof(bytes)))
			return -EFAULT;
		return mrpin_dmabuf_export(bytes);
	case MRPIN_DMABUF_REG:
		if (copy_from_user(&arg, (void __user *)uarg, sizeof(arg)))
			return -EFAULT;
		arg.device[sizeof(arg.device) - 1] = '\0';
		return mrpin_dmabuf_reg(f, &arg);
	case MRPIN_DMABUF_DEREG:
		return mrpin_dmabuf_dereg(f);
	}
	return -ENOTTY;
}

static int mrpin_dmabuf_open(struct inode *inode, struct file *file)
{
	struct mrpin_dmabuf_file *f = kzalloc_obj(*f, GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	INIT_LIST_HEAD(&f->imports);
	file->private_data = f;
	return 0;
}

static int mrpin_dmabuf_release(struct inode *inode, struct file *file)
{
	struct mrpin_dmabuf_file *f = file->private_data;

	while (!mrpin_dmabuf_dereg(f))
		;
	kfree(f);
	return 0;
}

static const struct file_operations mrpin_dmabuf_fops = {
	.owner = THIS_MODULE,
	.open = mrpin_dmabuf_open,
	.release = mrpin_dmabuf_release,
	.unlocked_ioctl = mrpin_dmabuf_ioctl,
};

static struct miscdevice mrpin_dmabuf_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "mrpin_dmabuf_test",
	.fops = &mrpin_dmabuf_fops,
	.mode = 0666,
};

static int __init mrpin_dmabuf_init(void)
{
	int ret;

	ret = misc_register(&mrpin_dmabuf_dev);
	if (ret)
		return ret;
	/* The DMA device of the imports: direct mapping, 64 bits. */
	ret = dma_coerce_mask_and_coherent(mrpin_dmabuf_dev.this_device,
					   DMA_BIT_MASK(64));
	if (!ret)
		ret = ib_register_client(&mrpin_dmabuf_client);
	if (ret)
		misc_deregister(&mrpin_dmabuf_dev);
	return ret;
}

static void __exit mrpin_dmabuf_exit(void)
{
	misc_deregister(&mrpin_dmabuf_dev);
	ib_unregister_client(&mrpin_dmabuf_client);
}

module_init(mrpin_dmabuf_init);
module_exit(mrpin_dmabuf_exit);
MODULE_DESCRIPTION("mrpin selftests: dma-buf registrations on the test's IB device");
MODULE_LICENSE("GPL");
/* dma_buf_export() and the rest are in the DMA_BUF namespace. */
MODULE_INFO(import_ns, "DMA_BUF");
