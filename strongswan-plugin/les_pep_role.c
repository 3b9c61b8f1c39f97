// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A PEP takes keys only over an IKE_SA whose peer authenticated as an
 * endpoint its policy names, only for the addresses that policy allows it
 * and within its quota: otherwise an endpoint could install a view under
 * another tunnel's (dst, SPI, mark).  What it installs it tracks by the
 * IKE_SA it came over, to remove it with the CHILD_SA or that IKE_SA, and
 * by the endpoint's identity and CHILD_SA: keys sent again over a new
 * IKE_SA (the endpoint lost the old one) find the same states, kept.
 */
#include "les_pep_role.h"
#include "les_keymsg.h"
#include "les_pep_engine.h"
#include "les_wire.h"

#include <daemon.h>
#include <collections/hashtable.h>
#include <threading/mutex.h>

#define LES_PEP_MAX_STATES_DEFAULT	16
#define LES_PEP_MAX_LIFETIME_DEFAULT	86400

typedef struct private_les_pep_role_t private_les_pep_role_t;

struct private_les_pep_role_t {

	les_pep_role_t public;

	/* the kernel's hard expires: a state it removed is no longer held */
	kernel_listener_t expires;

	/* installed_t*: every state installed here */
	linked_list_t *installed;

	/* IKE_SA unique id => linked_list_t* of chunk_t answers (ACK data) */
	hashtable_t *answers;

	/* les.ko took the engine settings (or there are none) */
	bool engine_set;

	mutex_t *mutex;
};

/* A state this PEP installed for an endpoint. */
typedef struct {
	/* the endpoint's policy name, for its quota */
	char *endpoint;
	/* the endpoint, the IKE_SA it came over, and its CHILD_SA */
	identification_t *peer;
	uint32_t ike;
	uint32_t child;
	uint32_t spi;
	host_t *src, *dst;
	/* UDP encapsulation's ports, 0 without */
	uint16_t encap_sport, encap_dport;
} installed_t;

static void installed_destroy(installed_t *s)
{
	free(s->endpoint);
	s->peer->destroy(s->peer);
	s->src->destroy(s->src);
	s->dst->destroy(s->dst);
	free(s);
}

static inline void *id_key(uint32_t id)
{
	return (void*)(uintptr_t)id;
}

/* The policy naming @peer (charon.plugins.les.pep.endpoints.NAME), or NULL. */
static les_keymsg_policy_t *policy_for(identification_t *peer, char **name)
{
	enumerator_t *e, *addrs;
	les_keymsg_policy_t *policy = NULL;
	identification_t *id;
	traffic_selector_t *ts;
	char *section, *value, *addr;

	e = lib->settings->create_section_enumerator(lib->settings,
							"%s.plugins.les.pep.endpoints", lib->ns);
	while (!policy && e->enumerate(e, &section))
	{
		value = lib->settings->get_str(lib->settings,
					"%s.plugins.les.pep.endpoints.%s.id", NULL, lib->ns, section);
		id = value ? identification_create_from_string(value) : NULL;
		if (!id || peer->matches(peer, id) <= ID_MATCH_NONE)
		{
			DESTROY_IF(id);
			continue;
		}
		INIT(policy,
			.id = id,
			.addrs = linked_list_create(),
			.max_states = max(0, lib->settings->get_int(lib->settings,
					"%s.plugins.les.pep.endpoints.%s.max_states",
					LES_PEP_MAX_STATES_DEFAULT, lib->ns, section)),
			.max_lifetime = max(0, lib->settings->get_int(lib->settings,
					"%s.plugins.les.pep.endpoints.%s.max_lifetime",
					LES_PEP_MAX_LIFETIME_DEFAULT, lib->ns, section)),
		);
		value = lib->settings->get_str(lib->settings,
					"%s.plugins.les.pep.endpoints.%s.addrs", "", lib->ns, section);
		addrs = enumerator_create_token(value, ",", " ");
		while (addrs->enumerate(addrs, &addr))
		{
			ts = traffic_selector_create_from_cidr(addr, 0, 0, 65535);
			if (ts)
			{
				policy->addrs->insert_last(policy->addrs, ts);
			}
			else
			{
				DBG1(DBG_CFG, "les pep: ignoring address '%s' of endpoint %s",
					 addr, section);
			}
		}
		addrs->destroy(addrs);
		*name = strdup(section);
	}
	e->destroy(e);
	return policy;
}

static void policy_destroy(les_keymsg_policy_t *policy)
{
	if (policy)
	{
		policy->id->destroy(policy->id);
		policy->addrs->destroy_offset(policy->addrs,
									  offsetof(traffic_selector_t, destroy));
		free(policy);
	}
}

/* Whether @s is of @peer's CHILD_SA @child. */
static bool of_child(installed_t *s, identification_t *peer, uint32_t child)
{
	return s->child == child && s->peer->equals(s->peer, peer);
}

/* States @endpoint holds here, but those of @peer's @child it replaces. */
static u_int held_by(private_les_pep_role_t *this, char *endpoint,
					 identification_t *peer, uint32_t child)
{
	enumerator_t *e;
	installed_t *s;
	u_int n = 0;

	e = this->installed->create_enumerator(this->installed);
	while (e->enumerate(e, &s))
	{
		n += streq(s->endpoint, endpoint) && !of_child(s, peer, child);
	}
	e->destroy(e);
	return n;
}

static void del_state(host_t *src, host_t *dst, uint32_t spi)
{
	kernel_ipsec_sa_id_t id = {
		.src = src,
		.dst = dst,
		.spi = htonl(spi),
		.proto = IPPROTO_ESP,
		.mark = { .value = LES_PEP_MARK, .mask = 0xffffffff },
	};
	kernel_ipsec_del_sa_t del = {};

	charon->kernel->del_sa(charon->kernel, &id, &del);
}

/* Deletes state @s, where @e stands in the installed list. */
static void forget(private_les_pep_role_t *this, enumerator_t *e,
				   installed_t *s)
{
	this->installed->remove_at(this->installed, e);
	del_state(s->src, s->dst, s->spi);
	installed_destroy(s);
}

/*
 * Removes the states of @peer's CHILD_SA @child, over any IKE_SA; or, with
 * @peer NULL, all that came over IKE_SA @ike.
 */
static u_int remove_states(private_les_pep_role_t *this, uint32_t ike,
						   identification_t *peer, uint32_t child)
{
	enumerator_t *e;
	installed_t *s;
	u_int n = 0;

	e = this->installed->create_enumerator(this->installed);
	while (e->enumerate(e, &s))
	{
		if (peer ? of_child(s, peer, child) : s->ike == ike)
		{
			forget(this, e, s);
			n++;
		}
	}
	e->destroy(e);
	return n;
}

/* A host selector list of one address (transport mode's SA selector). */
static linked_list_t *host_ts(host_t *host)
{
	return linked_list_create_with_items(
			traffic_selector_create_from_subnet(host->clone(host),
				host->get_family(host) == AF_INET ? 32 : 128, 0, 0, 65535),
			NULL);
}

static bool add_state(les_keymsg_sa_t *sa)
{
	lifetime_cfg_t lifetime = {
		.time = { .life = sa->lifetime },
	};
	kernel_ipsec_sa_id_t id = {
		.src = sa->src,
		.dst = sa->dst,
		.spi = htonl(sa->spi),
		.proto = IPPROTO_ESP,
		.mark = { .value = LES_PEP_MARK, .mask = 0xffffffff },
	};
	kernel_ipsec_add_sa_t data = {
		.mode = sa->tunnel ? MODE_TUNNEL : MODE_TRANSPORT,
		.src_ts = host_ts(sa->src),
		.dst_ts = host_ts(sa->dst),
		.lifetime = &lifetime,
		.enc_alg = ENCR_AES_GCM_ICV16,
		.enc_key = sa->blob,
		.int_alg = AUTH_UNDEFINED,
		.replay_window = sa->replay_window,
		.encap = sa->encap_dport != 0,
		.esn = sa->esn,
		/* kernel-netlink gives ESN and large replay windows to inbound
		 * SAs only; a pep-view state reads like an inbound one */
		.inbound = sa->role != LES_ROLE_PEP_ORIGIN_OUT,
	};
	status_t status;

	if (data.encap)
	{
		sa->src->set_port(sa->src, sa->encap_sport);
		sa->dst->set_port(sa->dst, sa->encap_dport);
	}
	status = charon->kernel->add_sa(charon->kernel, &id, &data);
	data.src_ts->destroy_offset(data.src_ts, offsetof(traffic_selector_t, destroy));
	data.dst_ts->destroy_offset(data.dst_ts, offsetof(traffic_selector_t, destroy));
	return status == SUCCESS;
}

/*
 * The state of ours that @sa names (its dst and SPI): of @peer's CHILD_SA
 * @child, or with @peer NULL of anyone's.  NULL if none.
 */
static installed_t *find_state(private_les_pep_role_t *this,
							   les_keymsg_sa_t *sa, identification_t *peer,
							   uint32_t child)
{
	enumerator_t *e;
	installed_t *s, *found = NULL;

	e = this->installed->create_enumerator(this->installed);
	while (!found && e->enumerate(e, &s))
	{
		if (s->spi == sa->spi && s->dst->ip_equals(s->dst, sa->dst) &&
			(!peer || of_child(s, peer, child)))
		{
			found = s;
		}
	}
	e->destroy(e);
	return found;
}

/*
 * Adds @sa; a state in its place that is in no one's books was left by a
 * charon that died without deleting its IKE_SAs: this endpoint's keys,
 * sent again, replace it.
 */
static bool add_or_replace(private_les_pep_role_t *this, les_keymsg_sa_t *sa)
{
	if (add_state(sa))
	{
		return TRUE;
	}
	if (find_state(this, sa, NULL, 0))
	{
		return FALSE;
	}
	DBG1(DBG_IKE, "les pep: replacing state %.8x, left from before a restart",
		 sa->spi);
	del_state(sa->src, sa->dst, sa->spi);
	return add_state(sa);
}

/* linked_list_match_t: whether @item, a state of a key message, is the
 * installed_t given (the same dst and SPI). */
static bool is_state(void *item, va_list args)
{
	les_keymsg_sa_t *sa = item;
	installed_t *s;

	VA_ARGS_VGET(args, s);
	return sa->spi == s->spi && sa->dst->ip_equals(sa->dst, s->dst);
}

/*
 * Removes the states of @peer's CHILD_SA that @msg, its keys sent again,
 * does not name: those at addresses the SAs left (MOBIKE).
 */
static u_int remove_unnamed(private_les_pep_role_t *this, identification_t *peer,
							les_keymsg_t *msg)
{
	enumerator_t *e;
	installed_t *s;
	u_int n = 0;

	e = this->installed->create_enumerator(this->installed);
	while (e->enumerate(e, &s))
	{
		if (of_child(s, peer, msg->child) &&
			!msg->sas->find_first(msg->sas, is_state, NULL, s))
		{
			forget(this, e, s);
			n++;
		}
	}
	e->destroy(e);
	return n;
}

/* Installs @msg's states, all or none. */
static enum les_keymsg_status install(private_les_pep_role_t *this, ike_sa_t *ike_sa,
									  char *endpoint, les_keymsg_t *msg)
{
	enumerator_t *e;
	les_keymsg_sa_t *sa;
	installed_t *s;
	identification_t *peer = ike_sa->get_other_id(ike_sa);
	uint32_t ike = ike_sa->get_unique_id(ike_sa);
	u_int kept = 0, moved;

	e = msg->sas->create_enumerator(msg->sas);
	while (e->enumerate(e, &sa))
	{
		s = find_state(this, sa, peer, msg->child);
		if (s && s->src->ip_equals(s->src, sa->src) &&
			s->encap_sport == sa->encap_sport &&
			s->encap_dport == sa->encap_dport)
		{	/* sent again over a new IKE_SA: the state stays as it is, its
			 * sequence counter and replay window with it */
			s->ike = ike;
			kept++;
			continue;
		}
		if (s)
		{	/* its source or ports moved (MOBIKE): the new state
			 * replaces it */
			this->installed->remove(this->installed, s, NULL);
			del_state(s->src, s->dst, s->spi);
			installed_destroy(s);
		}
		if (!add_or_replace(this, sa))
		{
			e->destroy(e);
			remove_states(this, ike, peer, msg->child);
			return LES_KEYS_FAILED;
		}
		INIT(s,
			.endpoint = strdup(endpoint),
			.peer = peer->clone(peer),
			.ike = ike,
			.child = msg->child,
			.spi = sa->spi,
			.src = sa->src->clone(sa->src),
			.dst = sa->dst->clone(sa->dst),
			.encap_sport = sa->encap_sport,
			.encap_dport = sa->encap_dport,
		);
		this->installed->insert_last(this->installed, s);
	}
	e->destroy(e);
	moved = remove_unnamed(this, peer, msg);
	if (kept || moved)
	{
		DBG1(DBG_IKE, "les pep: keys of CHILD_SA %u sent again: %u states "
			 "kept, %u at addresses it left removed", msg->child, kept, moved);
	}
	return LES_KEYS_OK;
}

static void answer(private_les_pep_role_t *this, ike_sa_t *ike_sa, uint32_t child,
				   uint8_t status)
{
	linked_list_t *list;
	chunk_t *data;
	uint32_t ike = ike_sa->get_unique_id(ike_sa);

	list = this->answers->get(this->answers, id_key(ike));
	if (!list)
	{
		list = linked_list_create();
		this->answers->put(this->answers, id_key(ike), list);
	}
	INIT(data);
	*data = les_keymsg_build_ack(child, status);
	list->insert_last(list, data);
}

static void take_keys(private_les_pep_role_t *this, ike_sa_t *ike_sa,
					  notify_payload_t *notify)
{
	identification_t *peer = ike_sa->get_other_id(ike_sa);
	les_keymsg_policy_t *policy;
	les_keymsg_t msg;
	enum les_keymsg_status status;
	const char *why = NULL;
	char *endpoint = NULL;

	chunk_t data = notify->get_notification_data(notify);
	bool parsed = les_keymsg_parse(data, &msg, &why);

	/* the blobs live on in @msg only */
	memwipe(data.ptr, data.len);
	if (!parsed)
	{
		DBG1(DBG_IKE, "les pep: malformed keys from '%Y': %s", peer, why);
		/* no child to name: the endpoint sees no ACK and says so */
		return;
	}
	policy = policy_for(peer, &endpoint);
	if (!policy)
	{
		why = "no policy names it";
		status = LES_KEYS_NOT_ALLOWED;
	}
	else
	{
		status = les_keymsg_check(policy, held_by(this, endpoint, peer,
												  msg.child), &msg, &why);
	}
	if (status == LES_KEYS_OK)
	{
		if (!this->engine_set)
		{	/* les.ko loaded after charon started, say */
			this->engine_set = les_pep_engine_apply();
		}
		status = install(this, ike_sa, endpoint, &msg);
		why = "the kernel refused a state";
	}
	if (status == LES_KEYS_OK)
	{
		DBG1(DBG_IKE, "les pep: installed %d states of CHILD_SA %u from '%Y'",
			 msg.sas->get_count(msg.sas), msg.child, peer);
	}
	else
	{
		DBG1(DBG_IKE, "les pep: refusing the keys of CHILD_SA %u from '%Y': %s",
			 msg.child, peer, why);
	}
	answer(this, ike_sa, msg.child, status);
	policy_destroy(policy);
	free(endpoint);
	les_keymsg_clear(&msg);
}

static void drop_keys(private_les_pep_role_t *this, ike_sa_t *ike_sa,
					  notify_payload_t *notify)
{
	uint32_t child;
	u_int n;

	if (!les_keymsg_parse_child(notify->get_notification_data(notify),
								&child, NULL))
	{
		return;
	}
	n = remove_states(this, 0, ike_sa->get_other_id(ike_sa), child);
	DBG1(DBG_IKE, "les pep: deleted %u states of CHILD_SA %u from '%Y'", n,
		 child, ike_sa->get_other_id(ike_sa));
	answer(this, ike_sa, child, LES_KEYS_OK);
}

METHOD(les_pep_role_t, request, void,
	private_les_pep_role_t *this, ike_sa_t *ike_sa, message_t *message)
{
	enumerator_t *e;
	payload_t *payload;
	notify_payload_t *notify;
	u_int type;

	this->mutex->lock(this->mutex);
	e = message->create_payload_enumerator(message);
	while (e->enumerate(e, &payload))
	{
		if (payload->get_type(payload) != PLV2_NOTIFY)
		{
			continue;
		}
		notify = (notify_payload_t*)payload;
		/* private types: not in notify_type_t */
		type = notify->get_notify_type(notify);
		if (type == LES_NOTIFY_KEYS)
		{
			take_keys(this, ike_sa, notify);
		}
		else if (type == LES_NOTIFY_KEYS_DELETE)
		{
			drop_keys(this, ike_sa, notify);
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
}

METHOD(les_pep_role_t, response, void,
	private_les_pep_role_t *this, ike_sa_t *ike_sa, message_t *message)
{
	linked_list_t *list;
	chunk_t *data;

	this->mutex->lock(this->mutex);
	list = this->answers->remove(this->answers,
								 id_key(ike_sa->get_unique_id(ike_sa)));
	this->mutex->unlock(this->mutex);
	if (!list)
	{
		return;
	}
	while (list->remove_first(list, (void**)&data) == SUCCESS)
	{
		message->add_notify(message, FALSE, LES_NOTIFY_KEYS_ACK, *data);
		chunk_free(data);
		free(data);
	}
	list->destroy(list);
}

static void answers_destroy(linked_list_t *list)
{
	chunk_t *data;

	while (list->remove_first(list, (void**)&data) == SUCCESS)
	{
		chunk_free(data);
		free(data);
	}
	list->destroy(list);
}

METHOD(les_pep_role_t, ike_gone, void,
	private_les_pep_role_t *this, ike_sa_t *ike_sa)
{
	uint32_t ike = ike_sa->get_unique_id(ike_sa);
	linked_list_t *list;
	u_int n;

	this->mutex->lock(this->mutex);
	n = remove_states(this, ike, NULL, 0);
	list = this->answers->remove(this->answers, id_key(ike));
	this->mutex->unlock(this->mutex);
	if (list)
	{
		answers_destroy(list);
	}
	if (n)
	{
		DBG1(DBG_IKE, "les pep: the IKE_SA from '%Y' went: deleted its %u "
			 "states", ike_sa->get_other_id(ike_sa), n);
	}
}

METHOD(les_pep_role_t, ike_rekeyed, void,
	private_les_pep_role_t *this, uint32_t old, uint32_t new)
{
	enumerator_t *e;
	installed_t *s;
	linked_list_t *list;

	this->mutex->lock(this->mutex);
	e = this->installed->create_enumerator(this->installed);
	while (e->enumerate(e, &s))
	{
		if (s->ike == old)
		{
			s->ike = new;
		}
	}
	e->destroy(e);
	list = this->answers->remove(this->answers, id_key(old));
	if (list)
	{
		list = this->answers->put(this->answers, id_key(new), list);
		if (list)
		{
			answers_destroy(list);
		}
	}
	this->mutex->unlock(this->mutex);
}

/*
 * A state reaches its hard lifetime (the endpoint's CHILD_SA's) when the
 * endpoint never deleted it: it went without a word.  Not ours if no
 * state of ours has that (SPI, dst): kernel-netlink's expire carries no
 * mark.
 */
static bool expire(kernel_listener_t *listener, uint8_t protocol,
				   uint32_t spi, host_t *dst, bool hard)
{
	private_les_pep_role_t *this = (void*)((char*)listener -
							offsetof(private_les_pep_role_t, expires));
	enumerator_t *e;
	installed_t *s;

	if (!hard || protocol != IPPROTO_ESP)
	{
		return TRUE;
	}
	this->mutex->lock(this->mutex);
	e = this->installed->create_enumerator(this->installed);
	while (e->enumerate(e, &s))
	{
		if (htonl(s->spi) == spi && s->dst->ip_equals(s->dst, dst))
		{
			DBG1(DBG_IKE, "les pep: state %.8x of CHILD_SA %u from '%Y' "
				 "expired", s->spi, s->child, s->peer);
			this->installed->remove_at(this->installed, e);
			installed_destroy(s);
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	return TRUE;
}

METHOD(les_pep_role_t, reload, void,
	private_les_pep_role_t *this)
{
	bool set = les_pep_engine_apply();

	this->mutex->lock(this->mutex);
	this->engine_set = set;
	this->mutex->unlock(this->mutex);
}

METHOD(les_pep_role_t, destroy, void,
	private_les_pep_role_t *this)
{
	installed_t *s;

	charon->kernel->remove_listener(charon->kernel, &this->expires);

	/* charon is going: the states go with their lifetime or a flush,
	 * not from here, where the kernel interface may be gone */
	while (this->installed->remove_first(this->installed, (void**)&s) == SUCCESS)
	{
		installed_destroy(s);
	}
	this->installed->destroy(this->installed);
	this->answers->destroy_function(this->answers, (void*)answers_destroy);
	this->mutex->destroy(this->mutex);
	free(this);
}

les_pep_role_t *les_pep_role_create(void)
{
	private_les_pep_role_t *this;

	INIT(this,
		.public = {
			.request = _request,
			.response = _response,
			.ike_gone = _ike_gone,
			.ike_rekeyed = _ike_rekeyed,
			.reload = _reload,
			.destroy = _destroy,
		},
		.engine_set = les_pep_engine_apply(),
		.expires = {
			.expire = expire,
		},
		.installed = linked_list_create(),
		.answers = hashtable_create(hashtable_hash_ptr, hashtable_equals_ptr, 8),
		.mutex = mutex_create(MUTEX_TYPE_DEFAULT),
	);
	charon->kernel->add_listener(charon->kernel, &this->expires);
	return &this->public;
}
