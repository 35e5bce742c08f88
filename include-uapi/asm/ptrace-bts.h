/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Branch Trace Store (BTS) through ptrace: the user-space ABI.
 *
 * A tracer configures a per-task ring of branch and scheduling records with
 * PTRACE_BTS_CONFIG and reads it back while the tracee is stopped.  See
 * Documentation/arch/x86/ptrace-bts.rst for the semantics of each request.
 *
 * Every type is fixed-width so that 32-bit and 64-bit tracers see the same
 * layout.
 */
#ifndef _UAPI_ASM_X86_PTRACE_BTS_H
#define _UAPI_ASM_X86_PTRACE_BTS_H

#include <linux/types.h>

/* ptrace requests; ADDR and DATA are described in ptrace-bts.rst */
#define PTRACE_BTS_CONFIG	40	/* ADDR: config, DATA: sizeof(config) */
#define PTRACE_BTS_STATUS	41	/* ADDR: config, DATA: sizeof(config) */
#define PTRACE_BTS_SIZE		42	/* returns the number of records */
#define PTRACE_BTS_GET		43	/* ADDR: record, DATA: index, 0 = newest */
#define PTRACE_BTS_CLEAR	44	/* empties the ring */
#define PTRACE_BTS_DRAIN	45	/* ADDR: records, DATA: size in bytes */

/* struct ptrace_bts_config::flags */
#define PTRACE_BTS_O_TRACE	0x1	/* record user-mode branches */
#define PTRACE_BTS_O_SCHED	0x2	/* record arrival on / departure from a CPU */
#define PTRACE_BTS_O_SIGNAL	0x4	/* lossless mode (not supported yet) */
#define PTRACE_BTS_O_CUT_SIZE	0x8	/* shrink a too large size to the limit */

/**
 * struct ptrace_bts_config - per-task branch trace configuration
 * @size:	  ring size in bytes; 0 stops tracing and frees the ring.
 *		  STATUS reports the size in use: a whole number of records.
 * @flags:	  PTRACE_BTS_O_* flags
 * @signal:	  signal sent in lossless mode; must be 0 otherwise
 * @record_size:  sizeof(struct ptrace_bts_record); written by STATUS,
 *		  ignored by CONFIG
 *
 * The structure may grow at its end.  The tracer passes the size of its
 * version in DATA: bytes the kernel does not know must be zero.
 */
struct ptrace_bts_config {
	__u32	size;
	__u32	flags;
	__u32	signal;
	__u32	record_size;
};

#define PTRACE_BTS_CONFIG_SIZE_VER0	16	/* first published version */

/* struct ptrace_bts_record::qualifier */
#define PTRACE_BTS_BRANCH	1	/* a taken branch: branch.from, branch.to */
#define PTRACE_BTS_TASK_ARRIVES	2	/* sched.time and cpu */
#define PTRACE_BTS_TASK_DEPARTS	3	/* sched.time and cpu */

/**
 * struct ptrace_bts_record - one record of the branch trace
 * @qualifier:	  PTRACE_BTS_BRANCH, _TASK_ARRIVES or _TASK_DEPARTS
 * @cpu:	  the CPU the task arrived on or departed from; 0 for branches
 * @branch.from:  address of the branch instruction
 * @branch.to:	  address of the branch target
 * @sched.time:	  CLOCK_MONOTONIC time in nanoseconds
 * @sched.reserved: 0
 */
struct ptrace_bts_record {
	__u32	qualifier;
	__u32	cpu;
	union {
		struct {
			__u64	from;
			__u64	to;
		} branch;
		struct {
			__u64	time;
			__u64	reserved;
		} sched;
	};
};

#endif /* _UAPI_ASM_X86_PTRACE_BTS_H */
