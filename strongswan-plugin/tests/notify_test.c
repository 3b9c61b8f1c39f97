// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The LES notify and the PEP agreement, outside charon (tests/host.sh):
 * round trips, each side's decision over its own traffic, and a peer's
 * malformed or oversized notify refused whole.  Prints "ok - ..." or
 * "not ok - ..." per check; exit 0 if all passed.
 */
#include "../les_notify.h"
#include "../les_peps.h"

#include <bio/bio_writer.h>

#include <stdio.h>

static int failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	failed += !ok;
}

static linked_list_t *ids(const char *a, const char *b)
{
	linked_list_t *l = linked_list_create();

	if (a)
	{
		l->insert_last(l, identification_create_from_string((char*)a));
	}
	if (b)
	{
		l->insert_last(l, identification_create_from_string((char*)b));
	}
	return l;
}

/* Does @agreed hold exactly @n PEPs, the i-th named @names[i], pep_id i+1? */
static bool agreed_are(linked_list_t *agreed, int n, const char *names[])
{
	enumerator_t *e;
	les_pep_t *pep;
	identification_t *want;
	int i = 0;
	bool ok = agreed && agreed->get_count(agreed) == n;

	if (!ok)
	{
		return FALSE;
	}
	e = agreed->create_enumerator(agreed);
	while (ok && e->enumerate(e, &pep))
	{
		want = identification_create_from_string((char*)names[i]);
		ok = pep->id->equals(pep->id, want) && pep->pep_id == (uint32_t)i + 1;
		want->destroy(want);
		i++;
	}
	e->destroy(e);
	return ok;
}

/* Notify data that the parser must refuse. */
static bool refused(chunk_t data)
{
	les_notify_t n;
	const char *why = NULL;
	bool ok = !les_notify_parse(data, &n, &why) && why && !n.peps;

	les_notify_clear(&n);
	return ok;
}

/* The exchange: the initiator's request, the responder's answer, what the
 * initiator then accepts.  Returns the initiator's list (free it). */
static linked_list_t *exchange(les_peps_t *ini, les_peps_t *resp,
							   linked_list_t **resp_agreed, u_int *refused_n)
{
	les_notify_t req, ans;
	const char *why;
	chunk_t data;
	linked_list_t *agreed;

	data = les_notify_build(ini->mine, ini->trust, NULL);
	les_notify_parse(data, &req, &why);
	chunk_free(&data);
	*resp_agreed = les_peps_agree(resp, &req);
	data = les_notify_build(resp->mine, resp->trust, *resp_agreed);
	les_notify_parse(data, &ans, &why);
	chunk_free(&data);
	agreed = les_peps_accept(ini, &ans, refused_n);
	les_notify_clear(&req);
	les_notify_clear(&ans);
	return agreed;
}

static void test_round_trip(void)
{
	linked_list_t *peps = ids("C=CH, O=LES, CN=hub.pep", NULL);
	linked_list_t *trust = ids("C=CH, O=LES, CN=*", "*.pep.example");
	linked_list_t *agreed = linked_list_create();
	les_notify_t n;
	const char *why = NULL;
	chunk_t data;
	identification_t *id;
	les_pep_t *pep;
	bool ok;

	agreed->insert_last(agreed, les_pep_create(7,
					identification_create_from_string("remote.pep.example")));
	data = les_notify_build(peps, trust, agreed);
	ok = les_notify_parse(data, &n, &why) && n.version == LES_NOTIFY_VERSION &&
		 n.peps->get_count(n.peps) == 1 && n.trust->get_count(n.trust) == 2 &&
		 n.agreed && n.agreed->get_count(n.agreed) == 1 && !n.unknown_attrs;
	if (ok)
	{
		identification_t *sent;

		n.peps->get_first(n.peps, (void**)&id);
		peps->get_first(peps, (void**)&sent);
		n.agreed->get_first(n.agreed, (void**)&pep);
		ok = id->equals(id, sent) && pep->pep_id == 7 &&
			 pep->id->get_type(pep->id) == ID_FQDN;
	}
	check(ok, "a notify with PEPs, trust patterns and an agreed PEP parses "
		  "back to the same identities and pep_id");
	les_notify_clear(&n);
	chunk_free(&data);

	data = les_notify_build(NULL, NULL, NULL);
	check(data.len == LES_NOTIFY_HDR_LEN && les_notify_parse(data, &n, &why) &&
		  !n.agreed && !n.peps->get_count(n.peps),
		  "without PEPs the notify is its 4-byte header (format 1 as before)");
	les_notify_clear(&n);
	chunk_free(&data);

	/* an attribute of a type this plugin does not know: skipped */
	data = chunk_from_chars(1, 2, 0, 0, 0x7f, 0x00, 0, 2, 0xaa, 0xbb);
	check(les_notify_parse(data, &n, &why) && n.unknown_attrs == 1,
		  "an attribute of an unknown type is skipped");
	les_notify_clear(&n);

	peps->destroy_offset(peps, offsetof(identification_t, destroy));
	trust->destroy_offset(trust, offsetof(identification_t, destroy));
	les_peps_free(agreed);
}

static void test_malformed(void)
{
	bio_writer_t *w;
	chunk_t data;
	int i;

	check(refused(chunk_from_chars(1, 2, 0, 0, 0, 1, 0, 9, 11)),
		  "an attribute longer than the notify is refused");
	check(refused(chunk_from_chars(1, 2, 0, 0, 0, 1, 0)),
		  "a truncated attribute header is refused");
	check(refused(chunk_from_chars(1, 2, 0, 0, 0, 1, 0, 3, 0, 'a', 'b')),
		  "a PEP identity of no IKEv2 ID type is refused");
	check(refused(chunk_from_chars(1, 2, 0, 0, 0, 1, 0, 1, ID_FQDN)),
		  "an empty PEP identity is refused");
	check(refused(chunk_from_chars(1, 2, 0, 0, 0, 3, 0, 6, 0, 0, 0, 0,
								   ID_FQDN, 'a')),
		  "an agreed PEP with pep_id 0 is refused");
	check(refused(chunk_from_chars(1, 2, 0, 0, 0, 3, 0, 3, 0, 0, 1)),
		  "an agreed PEP without a whole pep_id is refused");
	check(refused(chunk_from_chars(2, 2, 0, 0)), "an unknown format is refused");

	w = bio_writer_create(64);
	w->write_data(w, chunk_from_chars(1, 2, 0, 0));
	for (i = 0; i <= LES_NOTIFY_MAX_PEPS; i++)
	{
		w->write_data(w, chunk_from_chars(0, 1, 0, 3, ID_FQDN, 'p'));
		w->write_uint8(w, 'a' + i);
	}
	data = w->get_buf(w);
	check(refused(data), "more PEPs than a tunnel has are refused "
		  "(the whole notify: plain ESP)");
	w->destroy(w);
}

static void test_agreement(void)
{
	/* client side: keys the remote PEP, trusts the operator's PEPs */
	les_peps_t *client = les_peps_create(ids("remote.pep.example", NULL),
										 ids("*.pep.example", NULL));
	/* server side: keys the hub, trusts only the remote PEP */
	les_peps_t *server = les_peps_create(ids("hub.pep.example", NULL),
										 ids("remote.pep.example", NULL));
	les_peps_t *wary = les_peps_create(ids("hub.pep.example", NULL),
									   ids(NULL, NULL));
	les_peps_t *none = les_peps_create(ids(NULL, NULL), ids(NULL, NULL));
	linked_list_t *r, *i;
	les_notify_t forged;
	u_int refused_n;
	const char *both[] = { "remote.pep.example", "hub.pep.example" };
	const char *hub[] = { "hub.pep.example" };

	i = exchange(client, server, &r, &refused_n);
	check(agreed_are(r, 2, both) && agreed_are(i, 2, both) && !refused_n,
		  "both sides trust the other's PEP: both agreed, the initiator's "
		  "first, pep_ids 1 and 2, the same on both sides");
	les_peps_free(i);
	les_peps_free(r);

	i = exchange(client, wary, &r, &refused_n);
	check(agreed_are(r, 1, hub) && agreed_are(i, 1, hub) && !refused_n,
		  "a responder that trusts no PEP of the initiator's: only its own "
		  "PEP, which the initiator trusts");
	les_peps_free(i);
	les_peps_free(r);

	i = exchange(none, server, &r, &refused_n);
	check(!r->get_count(r) && !i->get_count(i),
		  "an initiator with no PEPs and no trust: none agreed");
	les_peps_free(i);
	les_peps_free(r);

	/* a responder's answer naming a PEP the initiator neither keys nor
	 * trusts, and one pep_id twice */
	forged = (les_notify_t){
		.version = LES_NOTIFY_VERSION,
		.peps = linked_list_create(),
		.trust = linked_list_create(),
		.agreed = linked_list_create(),
	};
	forged.agreed->insert_last(forged.agreed, les_pep_create(1,
				identification_create_from_string("evil.example")));
	forged.agreed->insert_last(forged.agreed, les_pep_create(2,
				identification_create_from_string("hub.pep.example")));
	forged.agreed->insert_last(forged.agreed, les_pep_create(2,
				identification_create_from_string("remote.pep.example")));
	i = les_peps_accept(client, &forged, &refused_n);
	check(i->get_count(i) == 1 && refused_n == 2,
		  "the initiator refuses an agreed PEP it neither keys nor trusts, "
		  "and a pep_id given twice");
	les_peps_free(i);
	les_notify_clear(&forged);

	les_peps_destroy(client);
	les_peps_destroy(server);
	les_peps_destroy(wary);
	les_peps_destroy(none);
}

int main(void)
{
	if (!library_init(NULL, "les-notify-test"))
	{
		library_deinit();
		return 2;
	}
	test_round_trip();
	test_malformed();
	test_agreement();
	library_deinit();
	return failed ? 1 : 0;
}
