/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interface of the test-only module that drives the BTS MSRs directly, so
 * that the QEMU emulation can be checked below perf: wrap, threshold PMI,
 * CPL filters and the user-to-kernel record.
 */
#ifndef BTS_EMU_TEST_H
#define BTS_EMU_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define BTS_EMU_DEV		"/sys/kernel/debug/bts_emu_test"
#define BTS_EMU_RECS_MAX	64
#define BTS_EMU_GUARD		2

#define BTS_EMU_DEBUGCTL_TR		(1ULL << 6)
#define BTS_EMU_DEBUGCTL_BTS		(1ULL << 7)
#define BTS_EMU_DEBUGCTL_BTINT		(1ULL << 8)
#define BTS_EMU_DEBUGCTL_OFF_OS		(1ULL << 9)
#define BTS_EMU_DEBUGCTL_OFF_USR	(1ULL << 10)

struct bts_emu_record {
	__u64 from;
	__u64 to;
	__u64 flags;
};

/* One run of taken branches at CPL 0 with interrupts off, on a private
 * DS area and buffer. */
struct bts_emu_run {
	/* in */
	__u64 debugctl;		/* TR/BTS/BTINT/OFF_* bits during the run */
	__u32 nr_records;	/* absolute maximum, in records from base */
	__u32 threshold;	/* interrupt threshold, in records from base */
	__u32 branches;		/* taken branches to execute */
	__u32 pad;
	/* out */
	__u64 branch_from;	/* address of the loop's taken branch */
	__u64 branch_to;	/* its target */
	__u64 index;		/* DS BTS index after the run, records from base */
	__u64 index_at_pmi;	/* index seen by the first PMI, records */
	__u64 nmi_entry;	/* the NMI handler's entry point (IDT vector 2) */
	__u32 pmis;		/* PMIs taken during the run */
	__u32 lvtpc_masked;	/* LVTPC mask bit right after the run */
	/* the buffer followed by BTS_EMU_GUARD guard records */
	struct bts_emu_record rec[BTS_EMU_RECS_MAX + BTS_EMU_GUARD];
};

/* Point this CPU's DS area at user memory and switch BTS on, until
 * BTS_EMU_USER_OFF (which returns the SYSCALL entry point, MSR_LSTAR). */
struct bts_emu_user {
	__u64 ds_area;		/* user address of a 64-bit DS save area */
	__u64 debugctl;
	__u64 lstar;		/* out, from BTS_EMU_USER_OFF */
};

struct bts_emu_msrs {
	__u64 misc_enable;		/* IA32_MISC_ENABLE as read */
	__u64 misc_enable_after;	/* ... after trying to flip bits 11, 12 */
	__s32 ds_area_noncanonical;	/* wrmsr_safe() result */
	__s32 debugctl_reserved;	/* wrmsr_safe() of a reserved bit */
	__u64 debugctl_roundtrip;	/* TR|BTS|BTINT|OFF_OS|OFF_USR read back */
};

#define BTS_EMU_RUN		_IOWR('B', 1, struct bts_emu_run)
#define BTS_EMU_USER_ON		_IOW('B', 2, struct bts_emu_user)
#define BTS_EMU_USER_OFF	_IOWR('B', 3, struct bts_emu_user)
#define BTS_EMU_MSRS		_IOR('B', 4, struct bts_emu_msrs)

#endif
