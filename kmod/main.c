// SPDX-License-Identifier: GPL-2.0
/*
 * mrpin: track and limit the memory RDMA pins.
 *
 * Module init and exit.  Init sets up the pieces bottom-up and starts
 * intercepting last, when everything the pin path uses is ready; exit
 * stops intercepting first and waits until no task runs mrpin's code on the
 * pin path, then tears the rest down in reverse order.
 */
#include <linux/module.h>

#include "mrpin.h"

static int __init mrpin_init(void)
{
	int ret;

	ret = mrpin_policy_init();
	if (ret)
		return ret;
	ret = mrpin_events_init();
	if (ret)
		goto err_policy;
	ret = mrpin_account_init();
	if (ret)
		goto err_events;
	ret = mrpin_distinct_init();
	if (ret)
		goto err_account;
	ret = mrpin_pin_init();
	if (ret)
		goto err_distinct;
	ret = mrpin_device_init();
	if (ret)
		goto err_pin;
	ret = mrpin_client_init();
	if (ret)
		goto err_device;
	mrpin_debugfs_init();
	ret = mrpin_securityfs_init();
	if (ret)
		goto err_debugfs;
	ret = mrpin_hook_init();
	if (ret)
		goto err_securityfs;
	pr_info("mrpin %s: tracking RDMA memory pins\n", MRPIN_VERSION);
	return 0;

err_securityfs:
	mrpin_securityfs_exit();
err_debugfs:
	mrpin_debugfs_exit();
	mrpin_client_exit();
err_device:
	mrpin_device_exit();
err_pin:
	mrpin_pin_exit();
	mrpin_peer_exit();
err_distinct:
	mrpin_distinct_exit();
err_account:
	mrpin_account_exit();
err_events:
	mrpin_events_exit();
err_policy:
	mrpin_policy_exit();
	return ret;
}

static void __exit mrpin_exit(void)
{
	mrpin_hook_exit();
	mrpin_securityfs_exit();
	mrpin_debugfs_exit();
	mrpin_pin_exit();
	mrpin_peer_exit();
	mrpin_client_exit();
	mrpin_device_exit();
	mrpin_distinct_exit();
	mrpin_account_exit();
	mrpin_events_exit();
	mrpin_policy_exit();
	pr_info("mrpin %s: unloaded\n", MRPIN_VERSION);
}

module_init(mrpin_init);
module_exit(mrpin_exit);

MODULE_DESCRIPTION("Track and limit the memory RDMA pins (ib_umem)");
MODULE_LICENSE("GPL");
MODULE_VERSION(MRPIN_VERSION);
MODULE_SOFTDEP("pre: ib_core");
