// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin_peer_test: a peer memory client for the OFED lane, as nvidia-peermem
 * is one for GPU memory, over memory of its own.
 *
 * /dev/mrpin_peer_test maps kernel pages into the caller with
 * remap_pfn_range(): a VM_IO | VM_PFNMAP mapping, which ib_core's host pin
 * refuses (-EFAULT), as it refuses a GPU's.  Registered with OFED's
 * ib_register_peer_memory_client(), this client then claims such a range
 * for ib_umem_get_peer(), which makes an is_peer umem of its pages: a
 * registration that holds no host page of the user's, that RDMA reads and
 * writes (rxe copies through the pages of the umem's scatterlist).
 *
 * No invalidation callback: the mapping's pages stay allocated until the
 * last registration and the mapping are gone (a reference each).
 *
 * While the parameter hold is 1 (/sys/module/mrpin_peer_test/parameters/
 * hold), acquire() waits, as a slow GPU pin would, before it looks at the
 * range: a test makes a registration last as long as it needs, outside
 * any lock of the address space.  It waits at most a minute, and a fatal
 * signal ends the wait.
 *
 * Locking: mrpin_peer_lock (mutex) protects nothing but the lookup of a
 * mapping by address, under the caller's mmap lock; a mapping's pages are
 * fixed once made and freed with its last reference.
 */
#include <linux/delay.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <rdma/peer_mem.h>

#include "compat.h"

/* Mappings are at most this big: the test registers a few pages. */
#define MRPIN_PEER_MAX_PAGES 1024

/**
 * struct mrpin_peer_map - the pages behind one mapping of the device
 * @ref:	the mapping's, one per range claimed in it
 * @start:	where the mapping starts in the user's address space
 * @npages:	its pages
 * @pages:	the pages, in order
 */
struct mrpin_peer_map {
	struct kref ref;
	unsigned long start;
	unsigned long npages;
	struct page *pages[];
};

/* What acquire() claimed: a range of one mapping. */
struct mrpin_peer_ctx {
	struct mrpin_peer_map *map;
	unsigned long addr;
	size_t size;
};

static void *mrpin_peer_handle;
static const struct vm_operations_struct mrpin_peer_vm_ops;

static void mrpin_peer_map_free(struct kref *ref)
{
	struct mrpin_peer_map *map = container_of(ref, struct mrpin_peer_map,
						  ref);
	unsigned long i;

	for (i = 0; i < map->npages; i++)
		__free_page(map->pages[i]);
	kfree(map);
}

/* A copy of the mapping (fork, a split) holds the pages too. */
static void mrpin_peer_vm_open(struct vm_area_struct *vma)
{
	struct mrpin_peer_map *map = vma->vm_private_data;

	kref_get(&map->ref);
}

static void mrpin_peer_vm_close(struct vm_area_struct *vma)
{
	kref_put(vma->vm_private_data, mrpin_peer_map_free);
}

static const struct vm_operations_struct mrpin_peer_vm_ops = {
	.open = mrpin_peer_vm_open,
	.close = mrpin_peer_vm_close,
};

static int mrpin_peer_mmap(struct file *file, struct vm_area_struct *vma)
{
	unsigned long npages = vma_pages(vma), i;
	struct mrpin_peer_map *map;
	int ret;

	/* remap_pfn_range() marks it VM_IO | VM_PFNMAP | VM_DONTEXPAND. */
	if (!npages || npages > MRPIN_PEER_MAX_PAGES || vma->vm_pgoff)
		return -EINVAL;
	map = kzalloc(struct_size(map, pages, npages), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	kref_init(&map->ref);
	map->start = vma->vm_start;
	for (i = 0; i < npages; i++) {
		map->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!map->pages[i]) {
			map->npages = i;
			ret = -ENOMEM;
			goto err;
		}
	}
	map->npages = npages;
	for (i = 0; i < npages; i++) {
		ret = remap_pfn_range(vma, vma->vm_start + i * PAGE_SIZE,
				      page_to_pfn(map->pages[i]), PAGE_SIZE,
				      vma->vm_page_prot);
		if (ret)
			goto err;
	}
	vma->vm_private_data = map;
	vma->vm_ops = &mrpin_peer_vm_ops;
	return 0;
err:
	kref_put(&map->ref, mrpin_peer_map_free);
	return ret;
}

static const struct file_operations mrpin_peer_fops = {
	.owner = THIS_MODULE,
	.mmap = mrpin_peer_mmap,
};

static struct miscdevice mrpin_peer_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "mrpin_peer_test",
	.fops = &mrpin_peer_fops,
	.mode = 0666,
};

static bool hold;
module_param(hold, bool, 0644);
MODULE_PARM_DESC(hold, "1: acquire() waits until it is 0 again (at most a minute)");

/* Claim [addr, addr + size) when one mapping of the device holds it all. */
static int mrpin_peer_acquire(unsigned long addr, size_t size, void *priv,
			      char *name, void **client_context)
{
	unsigned long until = jiffies + 60 * HZ;
	struct vm_area_struct *vma;
	struct mrpin_peer_ctx *ctx;
	int ret = 0;

	if (!current->mm || !size || addr + size < addr)
		return 0;
	while (READ_ONCE(hold) && time_before(jiffies, until) &&
	       !fatal_signal_pending(current))
		msleep(20);
	ctx = kzalloc_obj(*ctx, GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	mmap_read_lock(current->mm);
	vma = vma_lookup(current->mm, addr);
	if (vma && vma->vm_ops == &mrpin_peer_vm_ops &&
	    addr + size <= vma->vm_end) {
		ctx->map = vma->vm_private_data;
		kref_get(&ctx->map->ref);
		ctx->addr = addr;
		ctx->size = size;
		*client_context = ctx;
		ret = 1;
	}
	mmap_read_unlock(current->mm);
	if (ret != 1)
		kfree(ctx);
	return ret;
}

static int mrpin_peer_get_pages(unsigned long addr, size_t size, int write,
				int force, struct sg_table *sg_head,
				void *client_context, u64 core_context)
{
	return 0;
}

/*
 * The range's pages, a page an entry; their DMA addresses are their
 * kernel addresses, as for a device with virtual DMA (rxe, which has no
 * DMA device and reads the pages).
 */
static int mrpin_peer_dma_map(struct sg_table *sgt, void *client_context,
			      struct device *dma_device, int dmasync,
			      int *nmap)
{
	struct mrpin_peer_ctx *ctx = client_context;
	unsigned long first, n, i;
	struct scatterlist *sg;
	int ret;

	if (dma_device)
		return -EOPNOTSUPP;
	first = ((ctx->addr & PAGE_MASK) - ctx->map->start) >> PAGE_SHIFT;
	n = (PAGE_ALIGN(ctx->addr + ctx->size) - (ctx->addr & PAGE_MASK)) >>
	    PAGE_SHIFT;
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sgtable_sg(sgt, sg, i) {
		sg_set_page(sg, ctx->map->pages[first + i], PAGE_SIZE, 0);
		sg_dma_address(sg) =
			(uintptr_t)page_address(ctx->map->pages[first + i]);
		sg_dma_len(sg) = PAGE_SIZE;
	}
	*nmap = n;
	return 0;
}

static int mrpin_peer_dma_unmap(struct sg_table *sgt, void *client_context,
				struct device *dma_device)
{
	return 0;
}

static void mrpin_peer_put_pages(struct sg_table *sgt, void *client_context)
{
	sg_free_table(sgt);
}

static unsigned long mrpin_peer_page_size(void *client_context)
{
	return PAGE_SIZE;
}

static void mrpin_peer_release(void *client_context)
{
	struct mrpin_peer_ctx *ctx = client_context;

	kref_put(&ctx->map->ref, mrpin_peer_map_free);
	kfree(ctx);
}

static const struct peer_memory_client mrpin_peer_client = {
	.name = "mrpin_peer_test",
	.version = "1",
	.acquire = mrpin_peer_acquire,
	.get_pages = mrpin_peer_get_pages,
	.dma_map = mrpin_peer_dma_map,
	.dma_unmap = mrpin_peer_dma_unmap,
	.put_pages = mrpin_peer_put_pages,
	.get_page_size = mrpin_peer_page_size,
	.release = mrpin_peer_release,
};

static int __init mrpin_peer_init(void)
{
	int ret;

	ret = misc_register(&mrpin_peer_dev);
	if (ret)
		return ret;
	mrpin_peer_handle = ib_register_peer_memory_client(&mrpin_peer_client,
							   NULL);
	if (!mrpin_peer_handle) {
		misc_deregister(&mrpin_peer_dev);
		return -EINVAL;
	}
	return 0;
}

static void __exit mrpin_peer_exit(void)
{
	ib_unregister_peer_memory_client(mrpin_peer_handle);
	misc_deregister(&mrpin_peer_dev);
}

module_init(mrpin_peer_init);
module_exit(mrpin_peer_exit);
MODULE_DESCRIPTION("mrpin selftests: a peer memory client over pages of its own");
MODULE_LICENSE("GPL");
