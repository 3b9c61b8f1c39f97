// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fourth message's content outside charon (tests/host.sh): a CHILD_SA's
 * states round-trip; malformed messages are refused whole; the PEP's policy
 * takes only allowed addresses, blobs of the state's role, bounded
 * lifetimes and what fits the endpoint's quota.  Prints "ok - ..." or
 * "not ok - ..." per check; exit 0 if all passed.
 */
#include "../les_keymsg.h"
#include "../les_blob.h"
#include "les_wire.h"

#include <stdio.h>

static int failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	failed += !ok;
}

/* An endpoint blob of 32-byte keys from counting bytes (not a real key). */
static chunk_t endpoint_blob(void)
{
	u_char keymat[104];
	u_int i;

	for (i = 0; i < sizeof(keymat); i++)
	{
		keymat[i] = i * 7 + 1;
	}
	return les_blob_endpoint(chunk_from_thing(keymat), 32, FALSE);
}

static les_keymsg_sa_t *sa_new(uint8_t role, const char *src, const char *dst,
							   uint32_t spi, chunk_t blob)
{
	les_keymsg_sa_t *sa;

	INIT(sa,
		.role = role,
		.tunnel = TRUE,
		.esn = TRUE,
		.spi = spi,
		.replay_window = 4096,
		.lifetime = 3600,
		.src = host_create_from_string((char*)src, 0),
		.dst = host_create_from_string((char*)dst, 0),
		.blob = blob,
	);
	return sa;
}

/* A CHILD_SA's states for the hub: both views, its pep-origin-out. */
static void make_msg(les_keymsg_t *msg, chunk_t ep)
{
	les_keymsg_sa_t *origin;

	msg->child = 42;
	msg->sas = linked_list_create();
	msg->sas->insert_last(msg->sas, sa_new(LES_ROLE_PEP_VIEW, "192.0.2.1",
								"198.51.100.1", 0xc0000001, les_blob_pep_view(ep)));
	msg->sas->insert_last(msg->sas, sa_new(LES_ROLE_PEP_VIEW, "198.51.100.1",
								"192.0.2.1", 0xc0000002, les_blob_pep_view(ep)));
	origin = sa_new(LES_ROLE_PEP_ORIGIN_OUT, "192.0.2.1", "198.51.100.1",
					0xc0000003, les_blob_pep_origin(ep, 1, TRUE));
	origin->encap_sport = origin->encap_dport = 4500;
	msg->sas->insert_last(msg->sas, origin);
}

static bool same_sa(les_keymsg_sa_t *a, les_keymsg_sa_t *b)
{
	return a->role == b->role && a->tunnel == b->tunnel && a->esn == b->esn &&
		   a->encap_sport == b->encap_sport && a->encap_dport == b->encap_dport &&
		   a->spi == b->spi && a->replay_window == b->replay_window &&
		   a->lifetime == b->lifetime && a->src->ip_equals(a->src, b->src) &&
		   a->dst->ip_equals(a->dst, b->dst) && chunk_equals(a->blob, b->blob);
}

/* @data, changed at @off to @val (or cut to @off if @cut), must not parse. */
static bool refused(chunk_t data, size_t off, u_char val, bool cut)
{
	chunk_t bad = chunk_clone(data);
	les_keymsg_t msg;
	const char *why = NULL;
	bool ok;

	if (cut)
	{
		bad.len = off;
	}
	else
	{
		bad.ptr[off] = val;
	}
	ok = !les_keymsg_parse(bad, &msg, &why) && why && !msg.sas;
	chunk_clear(&bad);
	return ok;
}

/* A message of one view state with @spi and ports: is it refused? */
static bool one_sa_refused(chunk_t ep, uint32_t spi, uint16_t sport,
						   uint16_t dport)
{
	les_keymsg_t msg = { .child = 1, .sas = linked_list_create() };
	les_keymsg_sa_t *sa = sa_new(LES_ROLE_PEP_VIEW, "192.0.2.1",
								 "198.51.100.1", spi, les_blob_pep_view(ep));
	les_keymsg_t back;
	const char *why = NULL;
	chunk_t data;
	bool ok;

	sa->encap_sport = sport;
	sa->encap_dport = dport;
	msg.sas->insert_last(msg.sas, sa);
	data = les_keymsg_build(&msg);
	ok = !les_keymsg_parse(data, &back, &why);
	les_keymsg_clear(&back);
	les_keymsg_clear(&msg);
	chunk_clear(&data);
	return ok;
}

static void test_codec(chunk_t ep)
{
	les_keymsg_t msg, back;
	enumerator_t *a, *b;
	les_keymsg_sa_t *sa, *sb;
	const char *why = NULL;
	chunk_t data, v6, short_sa;
	uint32_t child;
	uint8_t status;
	bool ok;
	/* offsets in @data: header 8, attribute header 4, then the SA */
	size_t sa0 = LES_KEYMSG_HDR_LEN + 4;

	make_msg(&msg, ep);
	data = les_keymsg_build(&msg);
	ok = les_keymsg_parse(data, &back, &why) && back.child == 42 &&
		 back.sas->get_count(back.sas) == 3;
	if (ok)
	{
		a = msg.sas->create_enumerator(msg.sas);
		b = back.sas->create_enumerator(back.sas);
		while (ok && a->enumerate(a, &sa) && b->enumerate(b, &sb))
		{
			ok = same_sa(sa, sb);
		}
		a->destroy(a);
		b->destroy(b);
	}
	check(ok, "a CHILD_SA's three states (two views, a pep-origin-out in UDP) "
		  "parse back field for field");
	les_keymsg_clear(&back);

	check(refused(data, 1, 2, FALSE), "another version (wire format 2) is refused");
	check(refused(data, sa0 + 2, 5, FALSE), "an address family not 4 or 6 is refused");
	check(refused(data, sa0 + 1, 0x09, FALSE), "an unknown SA flag is refused");
	check(one_sa_refused(ep, 0xc0000001, 4500, 0),
		  "a port without UDP encapsulation is refused");
	check(one_sa_refused(ep, 0, 0, 0), "SPI 0 is refused");
	check(!one_sa_refused(ep, 0xc0000001, 0, 0),
		  "(the same state with an SPI and no ports parses)");
	check(refused(data, data.len - 1, 0, TRUE), "a truncated message is refused");
	check(refused(data, LES_KEYMSG_HDR_LEN, 0, TRUE),
		  "a message with no state is refused");
	/* the first SA attribute, its length saying so, with 4 blob bytes */
	short_sa = chunk_clone(chunk_create(data.ptr, sa0 + 20 + 8 + 4));
	htoun16(short_sa.ptr + LES_KEYMSG_HDR_LEN + 2, 20 + 8 + 4);
	check(!les_keymsg_parse(short_sa, &back, &why),
		  "an SA attribute too short for any blob is refused");
	chunk_clear(&short_sa);

	/* four states: one more than a CHILD_SA gives a PEP */
	msg.sas->insert_last(msg.sas, sa_new(LES_ROLE_PEP_VIEW, "192.0.2.1",
								"198.51.100.1", 0xc0000004, les_blob_pep_view(ep)));
	chunk_clear(&data);
	data = les_keymsg_build(&msg);
	check(!les_keymsg_parse(data, &back, &why),
		  "more states than a CHILD_SA gives a PEP are refused");
	chunk_clear(&data);
	les_keymsg_clear(&msg);

	/* IPv6 addresses */
	make_msg(&msg, ep);
	msg.sas->get_first(msg.sas, (void**)&sa);
	sa->src->destroy(sa->src);
	sa->dst->destroy(sa->dst);
	sa->src = host_create_from_string("2001:db8::1", 0);
	sa->dst = host_create_from_string("2001:db8::2", 0);
	data = les_keymsg_build(&msg);
	ok = les_keymsg_parse(data, &back, &why);
	if (ok)
	{
		back.sas->get_first(back.sas, (void**)&sb);
		v6 = sb->dst->get_address(sb->dst);
		ok = v6.len == 16 && same_sa(sa, sb);
	}
	check(ok, "IPv6 addresses round-trip");
	les_keymsg_clear(&back);
	chunk_clear(&data);
	les_keymsg_clear(&msg);

	data = les_keymsg_build_ack(42, LES_KEYS_QUOTA);
	check(les_keymsg_parse_child(data, &child, &status) && child == 42 &&
		  status == LES_KEYS_QUOTA, "an ACK carries the child and the status");
	chunk_free(&data);
	data = les_keymsg_build_delete(7);
	check(les_keymsg_parse_child(data, &child, NULL) && child == 7,
		  "a delete carries the child");
	chunk_free(&data);
}

static void test_policy(chunk_t ep)
{
	les_keymsg_policy_t policy = {
		.id = identification_create_from_string("server.example"),
		.addrs = linked_list_create(),
		.max_states = 6,
		.max_lifetime = 86400,
	};
	les_keymsg_t msg;
	les_keymsg_sa_t *sa;
	const char *why = NULL;

	policy.addrs->insert_last(policy.addrs,
		traffic_selector_create_from_cidr("192.0.2.0/24", 0, 0, 65535));
	policy.addrs->insert_last(policy.addrs,
		traffic_selector_create_from_cidr("198.51.100.1/32", 0, 0, 65535));

	make_msg(&msg, ep);
	check(les_keymsg_check(&policy, 0, &msg, &why) == LES_KEYS_OK,
		  "policy: a CHILD_SA's states within the allowed addresses are taken");
	check(les_keymsg_check(&policy, 3, &msg, &why) == LES_KEYS_OK &&
		  les_keymsg_check(&policy, 4, &msg, &why) == LES_KEYS_QUOTA,
		  "policy: up to the endpoint's quota of states, not one more");

	msg.sas->get_first(msg.sas, (void**)&sa);
	sa->dst->destroy(sa->dst);
	sa->dst = host_create_from_string("198.51.100.2", 0);
	check(les_keymsg_check(&policy, 0, &msg, &why) == LES_KEYS_NOT_ALLOWED,
		  "policy: an address outside what the endpoint may key is refused "
		  "(no view under another tunnel's SPI)");
	les_keymsg_clear(&msg);

	make_msg(&msg, ep);
	msg.sas->get_first(msg.sas, (void**)&sa);
	chunk_clear(&sa->blob);
	sa->blob = chunk_clone(ep);
	check(les_keymsg_check(&policy, 0, &msg, &why) == LES_KEYS_MALFORMED,
		  "policy: an endpoint blob (K1, the payload key) is refused");
	sa->role = LES_ROLE_PEP_ORIGIN_OUT;
	chunk_clear(&sa->blob);
	sa->blob = les_blob_pep_view(ep);
	check(les_keymsg_check(&policy, 0, &msg, &why) == LES_KEYS_MALFORMED,
		  "policy: a blob whose role is not the state's is refused");
	les_keymsg_clear(&msg);

	make_msg(&msg, ep);
	msg.sas->get_first(msg.sas, (void**)&sa);
	sa->lifetime = 0;
	check(les_keymsg_check(&policy, 0, &msg, &why) == LES_KEYS_NOT_ALLOWED,
		  "policy: a lifetime of 0 is refused");
	sa->lifetime = 86401;
	check(les_keymsg_check(&policy, 0, &msg, &why) == LES_KEYS_NOT_ALLOWED,
		  "policy: a lifetime over the policy's is refused");
	les_keymsg_clear(&msg);

	policy.id->destroy(policy.id);
	policy.addrs->destroy_offset(policy.addrs,
								 offsetof(traffic_selector_t, destroy));
}

int main(void)
{
	chunk_t ep;

	if (!library_init(NULL, "les-keymsg-test") ||
		!lib->plugins->load(lib->plugins, "sha2 hmac"))
	{
		library_deinit();
		return 2;
	}
	ep = endpoint_blob();
	check(ep.len > 0, "an endpoint blob to derive from");
	test_codec(ep);
	test_policy(ep);
	chunk_clear(&ep);
	library_deinit();
	return failed ? 1 : 0;
}
