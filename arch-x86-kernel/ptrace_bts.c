// SPDX-License-Identifier: GPL-2.0
/*
 * Branch Trace Store through ptrace: per-task branch and scheduling trace.
 *
 * A tracer gives a traced task a ring of struct ptrace_bts_record in
 * ordinary kernel memory.  The processor never writes into that ring: while
 * the task runs, it writes its branch records into perf's per-CPU BTS
 * buffer, which perf maps into the cpu_entry_area (see intel_ds_bts_get()).
 * The records move into the ring of the task that produced them when the
 * task leaves the CPU (ptrace_bts_switch()) and when the per-CPU buffer
 * reaches its interrupt threshold (ptrace_bts_pmi()).  Records with a kernel
 * address are dropped on the way.
 *
 * Who touches a context:
 *  - the CPU the task runs on: at the task's context switches and in the
 *    threshold PMI (NMI context).  The two hand the context over through
 *    the per-CPU bts_owner pointer, which either of them takes with
 *    this_cpu_xchg() while it drains.
 *  - the tracer, in ptrace requests.  ptrace_check_attach() has made sure
 *    that the task is stopped and has left its CPU, so its ring is complete
 *    and nothing else writes to it during the request.
 *  - the task itself, when it exits or, after its tracer went away, when
 *    it next returns to user mode (bts_orphan_work()).
 * A context is never freed while its task may run with it.
 */

#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sysctl.h>
#include <linux/task_work.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include <asm/intel_ds.h>
#include <asm/perf_event.h>
#include <asm/ptrace-bts.h>

#define PTRACE_BTS_O_ALL	(PTRACE_BTS_O_TRACE | PTRACE_BTS_O_SCHED | \
				 PTRACE_BTS_O_SIGNAL | PTRACE_BTS_O_CUT_SIZE)

/* One record as the processor writes it with the 64-bit DS layout */
struct bts_hw_record {
	u64	from;
	u64	to;
	u64	flags;
};

/**
 * struct ptrace_bts_ctx - branch trace of one task
 * @ring:	  the records
 * @nr:		  capacity of @ring in records
 * @head:	  slot the next record goes to
 * @count:	  number of records held, at most @nr
 * @flags:	  PTRACE_BTS_O_* as configured; with PTRACE_BTS_O_TRACE the
 *		  context holds a reference on the BTS hardware
 * @orphan:	  the tracer went away; @work frees the context
 * @user:	  the user charged for @locked_pages, or NULL
 * @locked_pages: pages charged against @user's RLIMIT_MEMLOCK
 * @work:	  task work that frees an orphan context
 */
struct ptrace_bts_ctx {
	struct ptrace_bts_record	*ring;
	unsigned int			nr;
	unsigned int			head;
	unsigned int			count;
	u32				flags;
	bool				orphan;
	struct user_struct		*user;
	unsigned long			locked_pages;
	struct callback_head		work;
};

/* The context whose branches the BTS buffer of this CPU is collecting */
static DEFINE_PER_CPU(struct ptrace_bts_ctx *, bts_owner);

static unsigned int bts_max_size = SZ_1M;
static unsigned int bts_max_size_min = sizeof(struct ptrace_bts_record);
static unsigned int bts_max_size_max = SZ_1G;

static struct ctl_table bts_sysctls[] = {
	{
		.procname	= "ptrace_bts_max_size",
		.data		= &bts_max_size,
		.maxlen		= sizeof(bts_max_size),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= &bts_max_size_min,
		.extra2		= &bts_max_size_max,
	},
};

static void bts_push(struct ptrace_bts_ctx *ctx,
		     const struct ptrace_bts_record *rec)
{
	ctx->ring[ctx->head] = *rec;
	if (++ctx->head == ctx->nr)
		ctx->head = 0;
	if (ctx->count < ctx->nr)
		ctx->count++;
}

/* Slot of the oldest record */
static unsigned int bts_tail(const struct ptrace_bts_ctx *ctx)
{
	return (ctx->head + ctx->nr - ctx->count) % ctx->nr;
}

static void bts_push_sched(struct ptrace_bts_ctx *ctx, u32 qualifier)
{
	struct ptrace_bts_record rec = {
		.qualifier	= qualifier,
		.cpu		= smp_processor_id(),
		.sched.time	= ktime_get_mono_fast_ns(),
	};

	bts_push(ctx, &rec);
}

/*
 * Move the records of this CPU's BTS buffer into @ctx and empty the buffer.
 * The hardware records the transitions from user mode into the kernel even
 * though it is told to skip CPL 0: drop every record with a kernel address.
 */
static void bts_drain_hw(struct ptrace_bts_ctx *ctx)
{
	struct debug_store *ds = this_cpu_ptr(&cpu_debug_store);
	struct ptrace_bts_record rec = { .qualifier = PTRACE_BTS_BRANCH };
	struct bts_hw_record *at, *end;

	at = (struct bts_hw_record *)(unsigned long)ds->bts_buffer_base;
	end = (struct bts_hw_record *)(unsigned long)
		min(ds->bts_index, ds->bts_absolute_maximum);

	for (; at < end; at++) {
		if (at->from >= TASK_SIZE_MAX || at->to >= TASK_SIZE_MAX)
			continue;
		rec.branch.from = at->from;
		rec.branch.to = at->to;
		bts_push(ctx, &rec);
	}

	ds->bts_index = ds->bts_buffer_base;
}

/* Stop this CPU's recording for @ctx and collect what it recorded. */
static void bts_stop_hw(void)
{
	struct ptrace_bts_ctx *ctx = this_cpu_xchg(bts_owner, NULL);

	if (ctx) {
		intel_ds_bts_disable();
		bts_drain_hw(ctx);
	}
}

/* Called from __switch_to_xtra() when @prev or @next has TIF_BTS. */
void ptrace_bts_switch(struct task_struct *prev, struct task_struct *next)
{
	struct ptrace_bts_ctx *ctx;

	if (test_tsk_thread_flag(prev, TIF_BTS)) {
		ctx = prev->thread.bts;
		bts_stop_hw();
		if (ctx->flags & PTRACE_BTS_O_SCHED)
			bts_push_sched(ctx, PTRACE_BTS_TASK_DEPARTS);
	}

	if (test_tsk_thread_flag(next, TIF_BTS)) {
		ctx = next->thread.bts;
		if (ctx->flags & PTRACE_BTS_O_SCHED)
			bts_push_sched(ctx, PTRACE_BTS_TASK_ARRIVES);
		if (ctx->flags & PTRACE_BTS_O_TRACE) {
			struct debug_store *ds = this_cpu_ptr(&cpu_debug_store);

			ds->bts_index = ds->bts_buffer_base;
			this_cpu_write(bts_owner, ctx);
			intel_ds_bts_enable_user();
		}
	}
}

/**
 * ptrace_bts_pmi - answer the BTS threshold interrupt
 *
 * Called from the PMU interrupt handler in NMI context while an in-kernel
 * BTS user holds the BTS hardware, that is, while perf has no BTS user of
 * its own: a BTS buffer at or above its threshold is ours.  If the context
 * switch code has taken the buffer's owner, it drains the buffer itself
 * right after this NMI returns.
 *
 * Return: 1 if the interrupt was ours, 0 otherwise.
 */
int ptrace_bts_pmi(void)
{
	struct debug_store *ds = this_cpu_ptr(&cpu_debug_store);
	struct ptrace_bts_ctx *ctx;

	if (ds->bts_index < ds->bts_interrupt_threshold)
		return 0;

	ctx = this_cpu_xchg(bts_owner, NULL);
	if (ctx) {
		bts_drain_hw(ctx);
		this_cpu_write(bts_owner, ctx);
	}
	return 1;
}

/* Charge @bytes to the tracer's locked memory, as perf does for its rings. */
static int bts_charge(struct ptrace_bts_ctx *ctx, size_t bytes)
{
	struct user_struct *user = current_user();
	unsigned long pages = PFN_UP(bytes);
	unsigned long limit, locked;

	if (capable(CAP_IPC_LOCK))
		return 0;

	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	locked = atomic_long_read(&user->locked_vm);
	do {
		if (locked + pages > limit)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &locked,
					  locked + pages));

	ctx->user = get_uid(user);
	ctx->locked_pages = pages;
	return 0;
}

static void bts_ctx_free(struct ptrace_bts_ctx *ctx)
{
	if (ctx->flags & PTRACE_BTS_O_TRACE)
		intel_ds_bts_put();
	if (ctx->user) {
		atomic_long_sub(ctx->locked_pages, &ctx->user->locked_vm);
		free_uid(ctx->user);
	}
	kvfree(ctx->ring);
	kfree(ctx);
}

static struct ptrace_bts_ctx *bts_ctx_alloc(unsigned int nr, u32 flags)
{
	struct ptrace_bts_ctx *ctx;
	int err;

	if (flags & PTRACE_BTS_O_TRACE) {
		err = intel_ds_bts_get();
		if (err)
			return ERR_PTR(err);
	}

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx) {
		if (flags & PTRACE_BTS_O_TRACE)
			intel_ds_bts_put();
		return ERR_PTR(-ENOMEM);
	}
	ctx->nr = nr;
	ctx->flags = flags;

	err = bts_charge(ctx, array_size(nr, sizeof(*ctx->ring)));
	if (err)
		goto free;

	err = -ENOMEM;
	ctx->ring = kvcalloc(nr, sizeof(*ctx->ring),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!ctx->ring)
		goto free;

	return ctx;

free:
	bts_ctx_free(ctx);
	return ERR_PTR(err);
}

/* Take @task's context away; @task is not running.  Return it or NULL. */
static struct ptrace_bts_ctx *bts_unhook(struct task_struct *task)
{
	struct ptrace_bts_ctx *ctx = task->thread.bts;

	if (ctx) {
		clear_tsk_thread_flag(task, TIF_BTS);
		task->thread.bts = NULL;
	}
	return ctx;
}

/* Stop tracing @task, which is stopped and off its CPU. */
static void bts_release(struct task_struct *task)
{
	struct ptrace_bts_ctx *ctx = bts_unhook(task);

	/* An orphan context is freed by its task work */
	if (ctx && !ctx->orphan)
		bts_ctx_free(ctx);
}

/*
 * Stop tracing the current task and return its context.  tasklist_lock
 * keeps ptrace_bts_unlink() away from a context that is about to be freed.
 */
static struct ptrace_bts_ctx *bts_unhook_current(void)
{
	struct ptrace_bts_ctx *ctx;

	read_lock_irq(&tasklist_lock);
	ctx = current->thread.bts;
	if (ctx) {
		bts_stop_hw();
		clear_thread_flag(TIF_BTS);
		current->thread.bts = NULL;
	}
	read_unlock_irq(&tasklist_lock);
	return ctx;
}

static int bts_config(struct task_struct *child, void __user *uaddr,
		      unsigned long usize)
{
	struct ptrace_bts_config cfg;
	struct ptrace_bts_ctx *ctx;
	unsigned int size, max;
	int err;

	if (usize < PTRACE_BTS_CONFIG_SIZE_VER0)
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	err = copy_struct_from_user(&cfg, sizeof(cfg), uaddr, usize);
	if (err)
		return err;

	if (cfg.flags & ~PTRACE_BTS_O_ALL)
		return -EINVAL;
	if (!valid_signal(cfg.signal))
		return -EINVAL;
	if (cfg.flags & PTRACE_BTS_O_SIGNAL)
		return -EOPNOTSUPP;
	if (cfg.signal)
		return -EINVAL;

	if (!cfg.size) {
		if (cfg.flags)
			return -EINVAL;
		bts_release(child);
		return 0;
	}

	if (!(cfg.flags & (PTRACE_BTS_O_TRACE | PTRACE_BTS_O_SCHED)))
		return -EINVAL;

	size = cfg.size;
	max = READ_ONCE(bts_max_size);
	if (size > max) {
		if (!(cfg.flags & PTRACE_BTS_O_CUT_SIZE))
			return -EINVAL;
		size = max;
	}
	if (size < sizeof(struct ptrace_bts_record))
		return -EINVAL;

	/* A failure leaves the old configuration in force */
	ctx = bts_ctx_alloc(size / sizeof(struct ptrace_bts_record), cfg.flags);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);

	bts_release(child);
	child->thread.bts = ctx;
	set_tsk_thread_flag(child, TIF_BTS);
	return 0;
}

static int bts_status(struct ptrace_bts_ctx *ctx, void __user *uaddr,
		      unsigned long usize)
{
	struct ptrace_bts_config cfg = {
		.record_size = sizeof(struct ptrace_bts_record),
	};

	if (usize < PTRACE_BTS_CONFIG_SIZE_VER0)
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;

	if (ctx) {
		cfg.size = ctx->nr * sizeof(struct ptrace_bts_record);
		cfg.flags = ctx->flags;
	}

	if (copy_to_user(uaddr, &cfg, min(usize, sizeof(cfg))))
		return -EFAULT;
	if (usize > sizeof(cfg) &&
	    clear_user(uaddr + sizeof(cfg), usize - sizeof(cfg)))
		return -EFAULT;
	return 0;
}

static int bts_get(struct ptrace_bts_ctx *ctx, void __user *uaddr,
		   unsigned long index)
{
	unsigned int slot;

	if (!ctx || index >= ctx->count)
		return -EINVAL;

	/* Index 0 is the newest record, the one before head */
	slot = (ctx->head + ctx->nr - 1 - index) % ctx->nr;
	if (copy_to_user(uaddr, &ctx->ring[slot], sizeof(ctx->ring[slot])))
		return -EFAULT;
	return 0;
}

static long bts_drain(struct ptrace_bts_ctx *ctx, void __user *uaddr,
		      unsigned long usize)
{
	struct ptrace_bts_record __user *out = uaddr;
	unsigned int n, tail, first;

	if (usize < sizeof(*out))
		return -EINVAL;
	if (!ctx)
		return 0;

	n = min_t(unsigned long, ctx->count, usize / sizeof(*out));
	tail = bts_tail(ctx);
	first = min(n, ctx->nr - tail);

	if (copy_to_user(out, &ctx->ring[tail], first * sizeof(*out)))
		return -EFAULT;
	if (n > first &&
	    copy_to_user(out + first, ctx->ring, (n - first) * sizeof(*out)))
		return -EFAULT;

	ctx->count -= n;
	return n;
}

/**
 * ptrace_bts_request - the PTRACE_BTS_* requests
 * @child: the tracee, stopped and off its CPU (ptrace_check_attach())
 * @request: PTRACE_BTS_CONFIG .. PTRACE_BTS_DRAIN
 * @addr: user address
 * @data: a size or an index, see Documentation/arch/x86/ptrace-bts.rst
 *
 * Return: a record count for PTRACE_BTS_SIZE and _DRAIN, 0 for the others,
 * or a negative errno.
 */
long ptrace_bts_request(struct task_struct *child, long request,
			void __user *addr, unsigned long data)
{
	struct ptrace_bts_ctx *ctx = child->thread.bts;

	/* The context of a previous tracer is not ours to see */
	if (ctx && ctx->orphan) {
		bts_release(child);
		ctx = NULL;
	}

	switch (request) {
	case PTRACE_BTS_CONFIG:
		return bts_config(child, addr, data);
	case PTRACE_BTS_STATUS:
		return bts_status(ctx, addr, data);
	case PTRACE_BTS_SIZE:
		return ctx ? ctx->count : 0;
	case PTRACE_BTS_GET:
		return bts_get(ctx, addr, data);
	case PTRACE_BTS_CLEAR:
		if (ctx)
			ctx->count = 0;
		return 0;
	case PTRACE_BTS_DRAIN:
		return bts_drain(ctx, addr, data);
	}
	return -EIO;
}

/* copy_thread(): the configuration is not inherited. */
void ptrace_bts_fork(struct task_struct *child)
{
	child->thread.bts = NULL;
	clear_tsk_thread_flag(child, TIF_BTS);
}

/* PTRACE_DETACH: @child is stopped and off its CPU. */
void ptrace_bts_detach(struct task_struct *child)
{
	bts_release(child);
}

static void bts_orphan_work(struct callback_head *work)
{
	struct ptrace_bts_ctx *ctx;

	ctx = container_of(work, struct ptrace_bts_ctx, work);
	if (current->thread.bts == ctx)
		bts_unhook_current();
	bts_ctx_free(ctx);
}

/**
 * ptrace_bts_unlink - the tracee loses its tracer
 * @child: the tracee
 *
 * Called from __ptrace_unlink() with tasklist_lock held for writing.  After
 * PTRACE_DETACH the context is gone already; when the tracer exits, @child
 * may be running, so it stops tracing itself in task work when it next
 * returns to user mode.  If it is past exit_task_work() already, task work
 * cannot be queued and ptrace_bts_exit() frees the context.
 */
void ptrace_bts_unlink(struct task_struct *child)
{
	struct ptrace_bts_ctx *ctx = child->thread.bts;

	if (!ctx || ctx->orphan)
		return;

	ctx->orphan = true;
	init_task_work(&ctx->work, bts_orphan_work);
	task_work_add(child, &ctx->work, TWA_RESUME);
}

/* exit_thread(): @task is current. */
void ptrace_bts_exit(struct task_struct *task)
{
	struct ptrace_bts_ctx *ctx;

	if (!task->thread.bts)
		return;

	ctx = bts_unhook_current();
	if (ctx)
		bts_ctx_free(ctx);
}

static int __init ptrace_bts_init(void)
{
	register_sysctl_init("kernel", bts_sysctls);
	return 0;
}
late_initcall(ptrace_bts_init);
