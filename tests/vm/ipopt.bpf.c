// SPDX-License-Identifier: GPL-2.0
/*
 * A tc program for `accel outer ip options`: gives each outer IPv4 packet
 * carrying ESP (or ESP in UDP) that leaves a device four bytes of IP
 * options (NOP, NOP, NOP, end of list), as a router on the path may.
 * GSO packets and packets with options already pass as they are.
 * Built with clang -target bpf; no libbpf headers needed.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>

#define SEC(name) __attribute__((section(name), used))

static long (*bpf_skb_load_bytes)(const struct __sk_buff *skb, __u32 off,
				  void *to, __u32 len) = (void *)BPF_FUNC_skb_load_bytes;
static long (*bpf_skb_store_bytes)(struct __sk_buff *skb, __u32 off,
				   const void *from, __u32 len, __u64 flags) =
	(void *)BPF_FUNC_skb_store_bytes;
static long (*bpf_skb_adjust_room)(struct __sk_buff *skb, __s32 len_diff,
				   __u32 mode, __u64 flags) = (void *)BPF_FUNC_skb_adjust_room;

SEC("tc")
int ip_options(struct __sk_buff *skb)
{
	__u8 hdr[24];
	__u32 sum = 0;
	__u16 len;
	int i;

	if (skb->protocol != __builtin_bswap16(ETH_P_IP) || skb->gso_segs > 1)
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, hdr, 20))
		return TC_ACT_OK;
	if (hdr[0] != 0x45 || (hdr[9] != IPPROTO_ESP && hdr[9] != IPPROTO_UDP))
		return TC_ACT_OK;
	/* Room between the IP header and what it carries. */
	if (bpf_skb_adjust_room(skb, 4, BPF_ADJ_ROOM_NET, 0))
		return TC_ACT_OK;
	hdr[0] = 0x46;
	len = (__u16)((hdr[2] << 8) | hdr[3]) + 4;
	hdr[2] = len >> 8;
	hdr[3] = len & 0xff;
	hdr[10] = 0;
	hdr[11] = 0;
	hdr[20] = 1;
	hdr[21] = 1;
	hdr[22] = 1;
	hdr[23] = 0;
#pragma clang loop unroll(full)
	for (i = 0; i < 24; i += 2)
		sum += (hdr[i] << 8) | hdr[i + 1];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	hdr[10] = sum >> 8;
	hdr[11] = sum & 0xff;
	if (bpf_skb_store_bytes(skb, ETH_HLEN, hdr, sizeof(hdr), 0))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
