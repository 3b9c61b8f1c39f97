// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The listener's message hook runs on outgoing messages before they are
 * encrypted and on incoming ones before any task reads them, so it is the
 * one place where a responder can both add and read a private notify
 * (custom responder tasks cannot be added).
 */
#include "les_listener.h"
#include "les_notify.h"
#include "les_peps.h"
#include "les_handover.h"
#include "les_keymsg.h"
#include "les_pep_role.h"

#include <daemon.h>
#include <collections/hashtable.h>
#include <threading/mutex.h>

typedef struct private_les_listener_t private_les_listener_t;

struct private_les_listener_t {

	les_listener_t public;

	/* IKE_SA unique id => les_ike_t */
	hashtable_t *peers;

	/* the fourth message: this endpoint's side, and a PEP's */
	les_handover_t *handover;
	les_pep_role_t *pep;

	mutex_t *mutex;
};

/* What an IKE_SA's peer said, and what was agreed with it. */
typedef struct {
	/* LES version the peer announced */
	u_int version;
	/* les_pep_t*: the PEPs of the last CHILD_SA exchange (never NULL) */
	linked_list_t *agreed;
} les_ike_t;

static void ike_destroy(les_ike_t *ike)
{
	if (ike)
	{
		les_peps_free(ike->agreed);
		free(ike);
	}
}

/* Unique ids are small integers: they serve as their own key. */
static inline void *id_key(uint32_t id)
{
	return (void*)(uintptr_t)id;
}

/*
 * Does the message negotiate a CHILD_SA?  IKE_AUTH and CREATE_CHILD_SA
 * carry an SA payload then, and traffic selectors, which an IKE_SA rekey
 * (the other CREATE_CHILD_SA with an SA payload) never has.
 */
static bool creates_child(message_t *message)
{
	switch (message->get_exchange_type(message))
	{
		case IKE_AUTH:
		case CREATE_CHILD_SA:
			return message->get_payload(message, PLV2_SECURITY_ASSOCIATION) &&
				   message->get_payload(message, PLV2_TS_INITIATOR);
		default:
			return FALSE;
	}
}

/* Logs @agreed, the PEPs an exchange agreed on, once per exchange. */
static void log_agreed(linked_list_t *agreed)
{
	enumerator_t *e;
	les_pep_t *pep;

	if (!agreed->get_count(agreed))
	{
		DBG1(DBG_IKE, "les: no PEP agreed");
		return;
	}
	e = agreed->create_enumerator(agreed);
	while (e->enumerate(e, &pep))
	{
		DBG1(DBG_IKE, "les: PEP '%Y' agreed, pep_id %u", pep->id, pep->pep_id);
	}
	e->destroy(e);
}

/*
 * Our notify: our PEPs and trust always; in a response, the agreement on
 * the request's notify, if it had one.
 */
static void announce(private_les_listener_t *this, ike_sa_t *ike_sa,
					 message_t *message)
{
	les_peps_t *conf = les_peps_load();
	les_ike_t *ike = NULL;
	chunk_t data;

	this->mutex->lock(this->mutex);
	if (!message->get_request(message))
	{
		ike = this->peers->get(this->peers,
							   id_key(ike_sa->get_unique_id(ike_sa)));
	}
	data = les_notify_build(conf->mine, conf->trust, ike ? ike->agreed : NULL);
	this->mutex->unlock(this->mutex);
	message->add_notify(message, FALSE, LES_NOTIFY_TYPE, data);
	chunk_free(&data);
	les_peps_destroy(conf);
}

static void receive(private_les_listener_t *this, ike_sa_t *ike_sa,
					message_t *message)
{
	notify_payload_t *notify;
	les_notify_t peer;
	les_peps_t *conf;
	les_ike_t *ike, *old;
	const char *why;
	uint32_t id = ike_sa->get_unique_id(ike_sa);
	u_int refused = 0;

	notify = message->get_notify(message, LES_NOTIFY_TYPE);
	if (!notify)
	{
		return;
	}
	if (!les_notify_parse(notify->get_notification_data(notify), &peer, &why))
	{	/* as if absent: plain ESP, never a failed exchange */
		DBG1(DBG_IKE, "ignoring malformed LES notify: %s", why);
		return;
	}
	if (peer.version != LES_NOTIFY_VERSION)
	{
		DBG1(DBG_IKE, "peer speaks LES version %u, this plugin %u: not "
			 "using LES", peer.version, LES_NOTIFY_VERSION);
		les_notify_clear(&peer);
		return;
	}
	if (peer.unknown_attrs)
	{
		DBG2(DBG_IKE, "skipped %u unknown LES notify attributes",
			 peer.unknown_attrs);
	}
	/*
	 * The responder of the exchange agrees; its answer is all the
	 * initiator acts on (an agreement in a request is ignored).
	 */
	conf = les_peps_load();
	INIT(ike,
		.version = peer.version,
		.agreed = message->get_request(message) ?
				  les_peps_agree(conf, &peer) :
				  les_peps_accept(conf, &peer, &refused),
	);
	les_peps_destroy(conf);
	les_notify_clear(&peer);
	this->mutex->lock(this->mutex);
	old = this->peers->put(this->peers, id_key(id), ike);
	this->mutex->unlock(this->mutex);
	if (!old)
	{
		DBG1(DBG_IKE, "peer speaks LES version %u", ike->version);
	}
	ike_destroy(old);
	log_agreed(ike->agreed);
	/* the gate child_create.c opens for private algorithms */
	ike_sa->enable_extension(ike_sa, EXT_STRONGSWAN);
}

static void forget(private_les_listener_t *this, ike_sa_t *ike_sa)
{
	les_ike_t *ike;

	this->mutex->lock(this->mutex);
	ike = this->peers->remove(this->peers,
							  id_key(ike_sa->get_unique_id(ike_sa)));
	this->mutex->unlock(this->mutex);
	ike_destroy(ike);
}

/* Wipes the data of the key notifies in @message (les_keymsg.h). */
static void wipe_keys(message_t *message)
{
	enumerator_t *e;
	payload_t *payload;
	notify_payload_t *notify;
	chunk_t data;

	e = message->create_payload_enumerator(message);
	while (e->enumerate(e, &payload))
	{
		if (payload->get_type(payload) == PLV2_NOTIFY)
		{
			notify = (notify_payload_t*)payload;
			if (notify->get_notify_type(notify) == LES_NOTIFY_KEYS)
			{
				data = notify->get_notification_data(notify);
				memwipe(data.ptr, data.len);
			}
		}
	}
	e->destroy(e);
}

/* The fourth message's INFORMATIONAL exchanges, either side. */
static void informational(private_les_listener_t *this, ike_sa_t *ike_sa,
						  message_t *message, bool incoming)
{
	bool request = message->get_request(message);

	if (incoming && request)
	{
		this->pep->request(this->pep, ike_sa, message);
	}
	else if (!incoming && !request)
	{
		this->pep->response(this->pep, ike_sa, message);
	}
	else if (!incoming)
	{
		this->handover->request(this->handover, ike_sa, message);
	}
	else
	{
		this->handover->response(this->handover, ike_sa, message);
	}
}

METHOD(listener_t, message_hook, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, message_t *message,
	bool incoming, bool plain)
{
	if (ike_sa->get_version(ike_sa) != IKEV2)
	{
		return TRUE;
	}
	if (!plain)
	{	/* encrypted by now: the keys' plaintext copy goes */
		if (!incoming && message->get_exchange_type(message) == INFORMATIONAL)
		{
			wipe_keys(message);
		}
		return TRUE;
	}
	if (creates_child(message))
	{
		if (incoming)
		{
			receive(this, ike_sa, message);
		}
		else
		{
			announce(this, ike_sa, message);
		}
	}
	else if (message->get_exchange_type(message) == INFORMATIONAL &&
			 (ike_sa->get_state(ike_sa) == IKE_ESTABLISHED ||
			  ike_sa->get_state(ike_sa) == IKE_REKEYING))
	{
		informational(this, ike_sa, message, incoming);
	}
	return TRUE;
}

static void child_changed(private_les_listener_t *this, ike_sa_t *ike_sa,
						  child_sa_t *child_sa, bool up)
{
	linked_list_t *agreed;

	if (!ike_sa)
	{	/* e.g. a trap policy's CHILD_SA, destroyed outside any IKE_SA */
		return;
	}
	agreed = linked_list_create();
	enumerator_t *e;
	les_ike_t *ike;
	les_pep_t *pep;

	this->mutex->lock(this->mutex);
	ike = up ? this->peers->get(this->peers,
								id_key(ike_sa->get_unique_id(ike_sa))) : NULL;
	if (ike)
	{	/* a copy: the handover calls the kernel, not under our mutex */
		e = ike->agreed->create_enumerator(ike->agreed);
		while (e->enumerate(e, &pep))
		{
			agreed->insert_last(agreed, les_pep_create(pep->pep_id,
												pep->id->clone(pep->id)));
		}
		e->destroy(e);
	}
	this->mutex->unlock(this->mutex);
	this->handover->child_updown(this->handover, ike_sa, child_sa, agreed, up);
	les_peps_free(agreed);
}

METHOD(listener_t, child_updown, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, child_sa_t *child_sa,
	bool up)
{
	child_changed(this, ike_sa, child_sa, up);
	return TRUE;
}

/* A rekey raises no child_updown: the new CHILD_SA's PEPs get its keys. */
METHOD(listener_t, child_rekey, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, child_sa_t *old,
	child_sa_t *new)
{
	child_changed(this, ike_sa, new, TRUE);
	return TRUE;
}

/* Every CHILD_SA, rekeyed ones too, is destroyed: its PEPs' keys go. */
METHOD(listener_t, child_state_change, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, child_sa_t *child_sa,
	child_sa_state_t state)
{
	if (state == CHILD_DESTROYING)
	{
		child_changed(this, ike_sa, child_sa, FALSE);
	}
	return TRUE;
}

METHOD(listener_t, ike_updown, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, bool up)
{
	if (!up && ike_sa->get_state(ike_sa) != IKE_REKEYED)
	{
		forget(this, ike_sa);
		this->pep->ike_gone(this->pep, ike_sa);
	}
	return TRUE;
}

METHOD(listener_t, ike_state_change, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, ike_sa_state_t state)
{
	/* an IKE_SA that never came up gets no ike_updown; one rekeyed has
	 * handed its state to the new one (ike_rekey; the bus tells before
	 * the state changes) */
	if (state == IKE_DESTROYING && ike_sa->get_state(ike_sa) != IKE_REKEYED)
	{
		forget(this, ike_sa);
		this->pep->ike_gone(this->pep, ike_sa);
		this->handover->ike_gone(this->handover, ike_sa);
	}
	return TRUE;
}

METHOD(listener_t, ike_rekey, bool,
	private_les_listener_t *this, ike_sa_t *old, ike_sa_t *new)
{
	les_ike_t *ike;

	this->mutex->lock(this->mutex);
	ike = this->peers->remove(this->peers, id_key(old->get_unique_id(old)));
	if (ike)
	{
		ike_destroy(this->peers->put(this->peers,
									 id_key(new->get_unique_id(new)), ike));
	}
	this->mutex->unlock(this->mutex);
	/* the keys a PEP took over the old IKE_SA, and those waiting for it */
	this->pep->ike_rekeyed(this->pep, old->get_unique_id(old),
						   new->get_unique_id(new));
	this->handover->ike_rekeyed(this->handover, old->get_unique_id(old),
								new->get_unique_id(new));
	return TRUE;
}

METHOD(les_listener_t, peer_version, u_int,
	private_les_listener_t *this, ike_sa_t *ike_sa)
{
	les_ike_t *ike;
	u_int version;

	this->mutex->lock(this->mutex);
	ike = this->peers->get(this->peers, id_key(ike_sa->get_unique_id(ike_sa)));
	version = ike ? ike->version : 0;
	this->mutex->unlock(this->mutex);
	return version;
}

METHOD(les_listener_t, sa_added, void,
	private_les_listener_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_add_sa_t *data, chunk_t blob)
{
	ike_sa_t *ike_sa = charon->bus->get_sa(charon->bus);
	les_ike_t *ike = NULL;
	bool peps;

	/* a blob is kept only if a PEP may need keys from it */
	this->mutex->lock(this->mutex);
	if (ike_sa)
	{
		ike = this->peers->get(this->peers,
							   id_key(ike_sa->get_unique_id(ike_sa)));
	}
	peps = ike && ike->agreed->get_count(ike->agreed);
	this->mutex->unlock(this->mutex);
	if (peps)
	{
		this->handover->sa_added(this->handover, id, data, blob);
	}
}

METHOD(les_listener_t, sa_deleted, void,
	private_les_listener_t *this, kernel_ipsec_sa_id_t *id)
{
	this->handover->sa_deleted(this->handover, id);
}

METHOD(les_listener_t, sa_updated, void,
	private_les_listener_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_update_sa_t *data)
{
	this->handover->sa_updated(this->handover, id, data);
}

METHOD(les_listener_t, reload, void,
	private_les_listener_t *this)
{
	this->pep->reload(this->pep);
}

METHOD(les_listener_t, destroy, void,
	private_les_listener_t *this)
{
	this->handover->destroy(this->handover);
	this->pep->destroy(this->pep);
	this->peers->destroy_function(this->peers, (void*)ike_destroy);
	this->mutex->destroy(this->mutex);
	free(this);
}

les_listener_t *les_listener_create(void)
{
	private_les_listener_t *this;

	INIT(this,
		.public = {
			.listener = {
				.message = _message_hook,
				.ike_updown = _ike_updown,
				.ike_state_change = _ike_state_change,
				.ike_rekey = _ike_rekey,
				.child_updown = _child_updown,
				.child_rekey = _child_rekey,
				.child_state_change = _child_state_change,
			},
			.peer_version = _peer_version,
			.sa_added = _sa_added,
			.sa_deleted = _sa_deleted,
			.sa_updated = _sa_updated,
			.reload = _reload,
			.destroy = _destroy,
		},
		.peers = hashtable_create(hashtable_hash_ptr, hashtable_equals_ptr, 8),
		.mutex = mutex_create(MUTEX_TYPE_DEFAULT),
		.handover = les_handover_create(),
		.pep = les_pep_role_create(),
	);
	return &this->public;
}
