// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module for the QEMU BTS emulation: drives IA32_DS_AREA and
 * IA32_DEBUGCTL directly, below perf, so that a user-space test can check
 * the emulated hardware contract (wrap, threshold PMI and LVTPC mask, CPL
 * filters, the user-to-kernel record, MSR behaviour). It is built and
 * loaded only by scripts/bts for the QEMU validation; it is not part of
 * the ptrace-BTS series. No perf event may be active while it runs.
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/apic.h>
#include <asm/desc.h>
#include <asm/trapnr.h>
#include <asm/msr.h>
#include <asm/nmi.h>

#include "bts_emu_test.h"

#define BTS_BITS (BTS_EMU_DEBUGCTL_TR | BTS_EMU_DEBUGCTL_BTS | \
		  BTS_EMU_DEBUGCTL_BTINT | BTS_EMU_DEBUGCTL_OFF_OS | \
		  BTS_EMU_DEBUGCTL_OFF_USR)
#define REC_SIZE sizeof(struct bts_emu_record)

/* The 64-bit DS save area (SDM Vol. 3B, "DS save area"). */
struct ds_area {
	u64 bts_base, bts_index, bts_max, bts_threshold;
	u64 pebs[4];
	u64 pebs_reset[4];
};

static DEFINE_MUTEX(bts_emu_lock);
static struct ds_area *run_ds;		/* the DS area of the current run */
static u32 run_pmis;
static u64 run_index_at_pmi;
static u64 user_saved_ds, user_saved_ctl;
static int user_cpu = -1;
static struct dentry *bts_emu_file;

/* A BTS PMI: Linux tells it by the index having reached the threshold. */
static int bts_emu_nmi(unsigned int type, struct pt_regs *regs)
{
	struct ds_area *ds = READ_ONCE(run_ds);

	if (!ds || ds->bts_index < ds->bts_threshold)
		return NMI_DONE;
	if (!run_pmis++)
		run_index_at_pmi = ds->bts_index;
	return NMI_HANDLED;
}

static u32 lvtpc_read(void)
{
	u64 v;

	if (!x2apic_mode)
		return native_apic_mem_read(APIC_LVTPC);
	rdmsrl(APIC_BASE_MSR + (APIC_LVTPC >> 4), v);
	return v;
}

static void lvtpc_write(u32 v)
{
	if (!x2apic_mode)
		native_apic_mem_write(APIC_LVTPC, v);
	else
		wrmsrl(APIC_BASE_MSR + (APIC_LVTPC >> 4), v);
}

/* Where an NMI delivery lands: the offset of IDT gate 2. */
static u64 nmi_entry(void)
{
	struct desc_ptr idt;

	store_idt(&idt);
	return gate_offset((gate_desc *)idt.address + X86_TRAP_NMI);
}

/*
 * Switch DEBUGCTL to @on, take the loop's backward jnz @n - 1 times, and
 * switch DEBUGCTL to @off, with nothing else in between: the only branches
 * BTS can see at CPL 0 are the n - 1 taken jnz.
 */
static noinline void run_branches(u64 n, u64 on, u64 off, u64 *from, u64 *to)
{
	asm volatile("leaq 2f(%%rip), %[from]\n\t"
		     "leaq 1f(%%rip), %[to]\n\t"
		     "movl $0x1d9, %%ecx\n\t"
		     "movl %k[on_lo], %%eax\n\t"
		     "movl %k[on_hi], %%edx\n\t"
		     "wrmsr\n"
		     "1:\tdecq %[n]\n"
		     "2:\tjnz 1b\n\t"
		     "movl %k[off_lo], %%eax\n\t"
		     "movl %k[off_hi], %%edx\n\t"
		     "wrmsr\n\t"
		     : [from] "=&r" (*from), [to] "=&r" (*to), [n] "+r" (n)
		     : [on_lo] "r" ((u32)on), [on_hi] "r" ((u32)(on >> 32)),
		       [off_lo] "r" ((u32)off), [off_hi] "r" ((u32)(off >> 32))
		     : "eax", "ecx", "edx", "memory", "cc");
}

static long bts_emu_run(struct bts_emu_run __user *arg)
{
	struct bts_emu_run *r;
	struct ds_area *ds;
	u64 saved_ds, saved_ctl, base;
	unsigned long flags;
	u32 lvtpc;
	long ret = 0;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	ds = kzalloc(sizeof(*ds), GFP_KERNEL);
	if (!r || !ds) {
		ret = -ENOMEM;
		goto out;
	}
	if (copy_from_user(r, arg, sizeof(*r))) {
		ret = -EFAULT;
		goto out;
	}
	if (!r->nr_records || r->nr_records > BTS_EMU_RECS_MAX ||
	    r->threshold > BTS_EMU_RECS_MAX + BTS_EMU_GUARD ||
	    r->branches > 1000000 || (r->debugctl & ~BTS_BITS)) {
		ret = -EINVAL;
		goto out;
	}
	memset(r->rec, 0xa5, sizeof(r->rec));
	base = (u64)r->rec;
	ds->bts_base = base;
	ds->bts_index = base;
	ds->bts_max = base + r->nr_records * REC_SIZE;
	ds->bts_threshold = base + r->threshold * REC_SIZE;

	local_irq_save(flags);
	rdmsrl(MSR_IA32_DS_AREA, saved_ds);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, saved_ctl);
	lvtpc = lvtpc_read();
	run_pmis = 0;
	run_index_at_pmi = 0;
	WRITE_ONCE(run_ds, ds);
	wrmsrl(MSR_IA32_DS_AREA, (u64)ds);
	run_branches(r->branches + 1ULL, (saved_ctl & ~BTS_BITS) | r->debugctl,
		     saved_ctl & ~BTS_BITS, &r->branch_from, &r->branch_to);
	r->lvtpc_masked = !!(lvtpc_read() & APIC_LVT_MASKED);
	wrmsrl(MSR_IA32_DS_AREA, saved_ds);
	wrmsrl(MSR_IA32_DEBUGCTLMSR, saved_ctl);
	WRITE_ONCE(run_ds, NULL);
	lvtpc_write(lvtpc);
	local_irq_restore(flags);

	r->nmi_entry = nmi_entry();
	r->index = (ds->bts_index - base) / REC_SIZE;
	r->index_at_pmi = run_pmis ? (run_index_at_pmi - base) / REC_SIZE : 0;
	r->pmis = run_pmis;
	if (copy_to_user(arg, r, sizeof(*r)))
		ret = -EFAULT;
out:
	kfree(ds);
	kfree(r);
	return ret;
}

static long bts_emu_user_on(struct bts_emu_user __user *arg)
{
	struct bts_emu_user u;
	u64 ctl;

	if (copy_from_user(&u, arg, sizeof(u)))
		return -EFAULT;
	/* Only user-mode recording: CPL 0 code never writes user memory. */
	if ((u.debugctl & ~BTS_BITS) || !(u.debugctl & BTS_EMU_DEBUGCTL_OFF_OS))
		return -EINVAL;
	if (!access_ok((void __user *)u.ds_area, sizeof(struct ds_area)))
		return -EFAULT;
	if (user_cpu >= 0)
		return -EBUSY;
	preempt_disable();
	user_cpu = smp_processor_id();
	rdmsrl(MSR_IA32_DS_AREA, user_saved_ds);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, user_saved_ctl);
	wrmsrl(MSR_IA32_DS_AREA, u.ds_area);
	ctl = (user_saved_ctl & ~BTS_BITS) | u.debugctl;
	wrmsrl(MSR_IA32_DEBUGCTLMSR, ctl);
	preempt_enable();
	return 0;
}

static long bts_emu_user_off(struct bts_emu_user __user *arg)
{
	struct bts_emu_user u = {};
	long ret = 0;

	preempt_disable();
	if (user_cpu != smp_processor_id()) {
		ret = user_cpu < 0 ? -EINVAL : -EIO;
	} else {
		wrmsrl(MSR_IA32_DEBUGCTLMSR, user_saved_ctl);
		wrmsrl(MSR_IA32_DS_AREA, user_saved_ds);
		rdmsrl(MSR_LSTAR, u.lstar);
		user_cpu = -1;
	}
	preempt_enable();
	if (!ret && copy_to_user(arg, &u, sizeof(u)))
		ret = -EFAULT;
	return ret;
}

static long bts_emu_msrs(struct bts_emu_msrs __user *arg)
{
	struct bts_emu_msrs m = {};
	u64 misc, ds_area, ctl;
	unsigned long flags;

	local_irq_save(flags);
	rdmsrl(MSR_IA32_MISC_ENABLE, misc);
	m.misc_enable = misc;
	/* Bits 11 (BTS unavailable) and 12 (PEBS unavailable) are read-only. */
	wrmsrl_safe(MSR_IA32_MISC_ENABLE, misc ^ (MSR_IA32_MISC_ENABLE_BTS_UNAVAIL |
						   MSR_IA32_MISC_ENABLE_PEBS_UNAVAIL));
	rdmsrl(MSR_IA32_MISC_ENABLE, m.misc_enable_after);
	wrmsrl_safe(MSR_IA32_MISC_ENABLE, misc);

	rdmsrl(MSR_IA32_DS_AREA, ds_area);
	m.ds_area_noncanonical = wrmsrl_safe(MSR_IA32_DS_AREA, 0x8000000000000000ULL);
	wrmsrl(MSR_IA32_DS_AREA, ds_area);

	rdmsrl(MSR_IA32_DEBUGCTLMSR, ctl);
	m.debugctl_reserved = wrmsrl_safe(MSR_IA32_DEBUGCTLMSR, ctl | BIT_ULL(63));
	/* OFF_OS and OFF_USR both set: BTS is on but stores nothing. */
	wrmsrl(MSR_IA32_DEBUGCTLMSR, ctl | BTS_BITS);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, m.debugctl_roundtrip);
	wrmsrl(MSR_IA32_DEBUGCTLMSR, ctl);
	local_irq_restore(flags);
	m.debugctl_roundtrip &= BTS_BITS;

	return copy_to_user(arg, &m, sizeof(m)) ? -EFAULT : 0;
}

static long bts_emu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	long ret;

	mutex_lock(&bts_emu_lock);
	switch (cmd) {
	case BTS_EMU_RUN:
		ret = bts_emu_run(uarg);
		break;
	case BTS_EMU_USER_ON:
		ret = bts_emu_user_on(uarg);
		break;
	case BTS_EMU_USER_OFF:
		ret = bts_emu_user_off(uarg);
		break;
	case BTS_EMU_MSRS:
		ret = bts_emu_msrs(uarg);
		break;
	default:
		ret = -ENOTTY;
	}
	mutex_unlock(&bts_emu_lock);
	return ret;
}

static void bts_emu_user_restore(void *unused)
{
	wrmsrl(MSR_IA32_DEBUGCTLMSR, user_saved_ctl);
	wrmsrl(MSR_IA32_DS_AREA, user_saved_ds);
}

/* A test that dies between USER_ON and USER_OFF must not leave BTS on. */
static int bts_emu_release(struct inode *inode, struct file *file)
{
	mutex_lock(&bts_emu_lock);
	if (user_cpu >= 0) {
		smp_call_function_single(user_cpu, bts_emu_user_restore, NULL, 1);
		user_cpu = -1;
	}
	mutex_unlock(&bts_emu_lock);
	return 0;
}

static const struct file_operations bts_emu_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = bts_emu_ioctl,
	.release = bts_emu_release,
};

static int __init bts_emu_init(void)
{
	int ret;

	if (!boot_cpu_has(X86_FEATURE_BTS) || !boot_cpu_has(X86_FEATURE_DTES64))
		return -ENODEV;
	ret = register_nmi_handler(NMI_LOCAL, bts_emu_nmi, 0, "bts_emu_test");
	if (ret)
		return ret;
	bts_emu_file = debugfs_create_file("bts_emu_test", 0600, NULL, NULL,
					   &bts_emu_fops);
	return 0;
}

static void __exit bts_emu_exit(void)
{
	debugfs_remove(bts_emu_file);
	unregister_nmi_handler(NMI_LOCAL, "bts_emu_test");
}

module_init(bts_emu_init);
module_exit(bts_emu_exit);
MODULE_DESCRIPTION("Test-only driver of the BTS MSRs for QEMU validation");
MODULE_LICENSE("GPL");
