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

#include <daemon.h>
#include <collections/hashtable.h>
#include <threading/mutex.h>

typedef struct private_les_listener_t private_les_listener_t;

struct private_les_listener_t {

	les_listener_t public;

	/* IKE_SA unique id => les_ike_t */
	hashtable_t *peers;

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

METHOD(listener_t, message_hook, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, message_t *message,
	bool incoming, bool plain)
{
	if (plain && ike_sa->get_version(ike_sa) == IKEV2 && creates_child(message))
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
	return TRUE;
}

METHOD(listener_t, ike_updown, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, bool up)
{
	if (!up)
	{
		forget(this, ike_sa);
	}
	return TRUE;
}

METHOD(listener_t, ike_state_change, bool,
	private_les_listener_t *this, ike_sa_t *ike_sa, ike_sa_state_t state)
{
	/* an IKE_SA that never came up gets no ike_updown */
	if (state == IKE_DESTROYING)
	{
		forget(this, ike_sa);
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

METHOD(les_listener_t, destroy, void,
	private_les_listener_t *this)
{
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
			},
			.peer_version = _peer_version,
			.destroy = _destroy,
		},
		.peers = hashtable_create(hashtable_hash_ptr, hashtable_equals_ptr, 8),
		.mutex = mutex_create(MUTEX_TYPE_DEFAULT),
	);
	return &this->public;
}
