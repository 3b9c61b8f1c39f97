// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An LES endpoint SA's blob is kept from add_sa until its CHILD_SA is up
 * (both directions' blobs are needed, and the PEP keys derive from them),
 * then wiped.  The keys go to each PEP from a job: a CHILD_SA comes up in a
 * thread that holds its IKE_SA, and checking out a second one there could
 * deadlock.  The job checks out (or creates) the IKE_SA of the connection
 * named for the PEP in les.peps, leaves the keys for it and queues an
 * INFORMATIONAL exchange, whose request this endpoint's message hook
 * fills in.
 */
#include "les_handover.h"
#include "les_blob.h"
#include "les_keymsg.h"
#include "les_notify.h"
#include "les_peps.h"
#include "les_wire.h"

#include <daemon.h>
#include <collections/hashtable.h>
#include <processing/jobs/callback_job.h>
#include <sa/ikev2/tasks/ike_dpd.h>
#include <threading/mutex.h>

/* Key notifies in one INFORMATIONAL request (charon takes 20 at most). */
#define LES_HANDOVER_NOTIFIES_MAX	16

typedef struct private_les_handover_t private_les_handover_t;

struct private_les_handover_t {

	les_handover_t public;

	/* kept_t*: LES endpoint SAs whose CHILD_SA has not handed over yet */
	linked_list_t *kept;

	/* origin_t*: the pep-origin-in SAs this endpoint installed */
	linked_list_t *origins;

	/* unique id of an IKE_SA to a PEP => linked_list_t* of notify_t* */
	hashtable_t *waiting;

	mutex_t *mutex;
};

/* An LES endpoint SA, as installed. */
typedef struct {
	uint32_t spi;			/* network order, as charon has it */
	host_t *src, *dst;
	bool inbound;
	ipsec_mode_t mode;
	bool encap, esn;
	uint32_t reqid, replay_window;
	uint64_t lifetime;
	mark_t mark;
	uint32_t if_id;
	bool copy_df, copy_ecn;
	dscp_copy_t copy_dscp;
	linked_list_t *src_ts, *dst_ts;
	chunk_t blob;
} kept_t;

/* A pep-origin-in SA installed here, and the PEP that holds its other end. */
typedef struct {
	uint32_t child;
	char *conn;
	kernel_ipsec_sa_id_t id;
} origin_t;

/* A notify for a PEP. */
typedef struct {
	uint16_t type;
	chunk_t data;
} notify_t;

/* What a job takes to a PEP's connection. */
typedef struct {
	private_les_handover_t *this;
	char *conn;
	notify_t *notify;
} send_t;

static inline void *id_key(uint32_t id)
{
	return (void*)(uintptr_t)id;
}

static void kept_destroy(kept_t *k)
{
	k->src->destroy(k->src);
	k->dst->destroy(k->dst);
	k->src_ts->destroy_offset(k->src_ts, offsetof(traffic_selector_t, destroy));
	k->dst_ts->destroy_offset(k->dst_ts, offsetof(traffic_selector_t, destroy));
	chunk_clear(&k->blob);
	free(k);
}

static void origin_destroy(origin_t *o)
{
	o->id.src->destroy(o->id.src);
	o->id.dst->destroy(o->id.dst);
	free(o->conn);
	free(o);
}

static void notify_destroy(notify_t *n)
{
	chunk_clear(&n->data);
	free(n);
}

static void notifies_destroy(linked_list_t *list)
{
	list->destroy_function(list, (void*)notify_destroy);
}

static void send_destroy(send_t *s)
{
	if (s->notify)
	{
		notify_destroy(s->notify);
	}
	free(s->conn);
	free(s);
}

METHOD(les_handover_t, sa_added, void,
	private_les_handover_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_add_sa_t *data, chunk_t blob)
{
	kept_t *k;

	INIT(k,
		.spi = id->spi,
		.src = id->src->clone(id->src),
		.dst = id->dst->clone(id->dst),
		.inbound = data->inbound,
		.mode = data->mode,
		.encap = data->encap,
		.esn = data->esn,
		.reqid = data->reqid,
		.replay_window = data->replay_window,
		.lifetime = data->lifetime ? data->lifetime->time.life : 0,
		.mark = id->mark,
		.if_id = id->if_id,
		.copy_df = data->copy_df,
		.copy_ecn = data->copy_ecn,
		.copy_dscp = data->copy_dscp,
		.src_ts = data->src_ts->clone_offset(data->src_ts,
							offsetof(traffic_selector_t, clone)),
		.dst_ts = data->dst_ts->clone_offset(data->dst_ts,
							offsetof(traffic_selector_t, clone)),
		.blob = chunk_clone(blob),
	);
	this->mutex->lock(this->mutex);
	this->kept->insert_last(this->kept, k);
	this->mutex->unlock(this->mutex);
}

/*
 * Removes and returns the kept SA with @spi (network order) and direction,
 * or NULL: a peer may choose for its inbound SA the SPI we chose for ours.
 */
static kept_t *take_kept(private_les_handover_t *this, uint32_t spi,
						 bool inbound)
{
	enumerator_t *e;
	kept_t *k, *found = NULL;

	e = this->kept->create_enumerator(this->kept);
	while (!found && e->enumerate(e, &k))
	{
		if (k->spi == spi && k->inbound == inbound)
		{
			this->kept->remove_at(this->kept, e);
			found = k;
		}
	}
	e->destroy(e);
	return found;
}

METHOD(les_handover_t, sa_deleted, void,
	private_les_handover_t *this, kernel_ipsec_sa_id_t *id)
{
	kept_t *k;

	enumerator_t *e;

	this->mutex->lock(this->mutex);
	e = this->kept->create_enumerator(this->kept);
	while (e->enumerate(e, &k))
	{
		if (k->spi == id->spi && k->dst->ip_equals(k->dst, id->dst))
		{
			this->kept->remove_at(this->kept, e);
			kept_destroy(k);
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
}

/* A state of the key message, from a kept SA (its blob not yet set). */
static les_keymsg_sa_t *keymsg_sa(kept_t *k, uint8_t role, uint32_t spi)
{
	les_keymsg_sa_t *sa;

	INIT(sa,
		.role = role,
		.tunnel = k->mode == MODE_TUNNEL,
		.esn = k->esn,
		.encap_sport = k->encap ? k->src->get_port(k->src) : 0,
		.encap_dport = k->encap ? k->dst->get_port(k->dst) : 0,
		.spi = ntohl(spi),
		.replay_window = k->replay_window,
		.lifetime = min(k->lifetime, UINT32_MAX),
		.src = k->src->clone(k->src),
		.dst = k->dst->clone(k->dst),
	);
	return sa;
}

/*
 * The pep-origin-in SA for PEP @pep_id on the direction of @in (toward
 * this endpoint): its SPI allocated here, as for any inbound SA.  Returns
 * its SPI (network order), 0 on failure.
 */
static uint32_t install_origin_in(kept_t *in, uint32_t pep_id)
{
	lifetime_cfg_t lifetime = { .time = { .life = in->lifetime } };
	kernel_ipsec_sa_id_t id = {
		.src = in->src,
		.dst = in->dst,
		.proto = IPPROTO_ESP,
		.mark = in->mark,
		.if_id = in->if_id,
	};
	kernel_ipsec_add_sa_t data = {
		.reqid = in->reqid,
		.mode = in->mode,
		.src_ts = in->src_ts,
		.dst_ts = in->dst_ts,
		.lifetime = &lifetime,
		.enc_alg = ENCR_AES_GCM_ICV16,
		.int_alg = AUTH_UNDEFINED,
		.replay_window = in->replay_window,
		.encap = in->encap,
		.esn = in->esn,
		.copy_df = in->copy_df,
		.copy_ecn = in->copy_ecn,
		.copy_dscp = in->copy_dscp,
		.inbound = TRUE,
		.update = TRUE,
	};
	kernel_ipsec_del_sa_t del = {};
	status_t status = FAILED;

	data.enc_key = les_blob_pep_origin(in->blob, pep_id, FALSE);
	if (data.enc_key.len &&
		charon->kernel->get_spi(charon->kernel, in->src, in->dst, IPPROTO_ESP,
								&id.spi) == SUCCESS)
	{
		status = charon->kernel->add_sa(charon->kernel, &id, &data);
		if (status != SUCCESS)
		{	/* the SPI's larval state */
			charon->kernel->del_sa(charon->kernel, &id, &del);
		}
	}
	chunk_clear(&data.enc_key);
	return status == SUCCESS ? id.spi : 0;
}

static job_requeue_t send_job(send_t *s)
{
	private_les_handover_t *this = s->this;
	peer_cfg_t *peer_cfg;
	ike_sa_t *ike_sa;
	linked_list_t *list;

	if (s->notify->type == LES_NOTIFY_KEYS_DELETE)
	{	/* no IKE_SA to the PEP: it has deleted the keys already */
		ike_sa = charon->ike_sa_manager->checkout_by_name(
									charon->ike_sa_manager, s->conn, FALSE);
	}
	else
	{
		peer_cfg = charon->backends->get_peer_cfg_by_name(charon->backends,
														  s->conn);
		if (!peer_cfg)
		{
			DBG1(DBG_IKE, "les: no connection '%s' to hand that PEP its keys",
				 s->conn);
			return JOB_REQUEUE_NONE;
		}
		ike_sa = charon->ike_sa_manager->checkout_by_config(
									charon->ike_sa_manager, peer_cfg);
		peer_cfg->destroy(peer_cfg);
	}
	if (!ike_sa)
	{
		return JOB_REQUEUE_NONE;
	}
	this->mutex->lock(this->mutex);
	list = this->waiting->get(this->waiting,
							  id_key(ike_sa->get_unique_id(ike_sa)));
	if (!list)
	{
		list = linked_list_create();
		this->waiting->put(this->waiting,
						   id_key(ike_sa->get_unique_id(ike_sa)), list);
	}
	list->insert_last(list, s->notify);
	s->notify = NULL;
	this->mutex->unlock(this->mutex);
	/* an INFORMATIONAL exchange, after IKE_AUTH if it is a new IKE_SA */
	ike_sa->queue_task(ike_sa, (task_t*)ike_dpd_create(TRUE));
	if (ike_sa->initiate(ike_sa, NULL, NULL) == DESTROY_ME)
	{
		charon->ike_sa_manager->checkin_and_destroy(charon->ike_sa_manager,
													ike_sa);
	}
	else
	{
		charon->ike_sa_manager->checkin(charon->ike_sa_manager, ike_sa);
	}
	return JOB_REQUEUE_NONE;
}

static void queue_send(private_les_handover_t *this, const char *conn,
					   uint16_t type, chunk_t data)
{
	send_t *s;

	INIT(s,
		.this = this,
		.conn = strdup(conn),
	);
	INIT(s->notify,
		.type = type,
		.data = data,
	);
	lib->processor->queue_job(lib->processor, (job_t*)callback_job_create(
			(callback_job_cb_t)send_job, s, (void*)send_destroy, NULL));
}

/* Hands PEP @pep (agreed, @conn is its connection) the keys of a CHILD_SA. */
static void hand_over(private_les_handover_t *this, uint32_t child, les_pep_t *pep, const char *conn,
					  kept_t *out, kept_t *in)
{
	les_keymsg_t msg = {
		.child = child,
		.sas = linked_list_create(),
	};
	les_keymsg_sa_t *view_out, *view_in, *origin_out;
	origin_t *origin;
	uint32_t spi;

	spi = install_origin_in(in, pep->pep_id);
	if (!spi)
	{
		DBG1(DBG_IKE, "les: installing the pep-origin-in SA for PEP '%Y' "
			 "failed: it gets no keys", pep->id);
		les_keymsg_clear(&msg);
		return;
	}
	INIT(origin,
		.child = msg.child,
		.conn = strdup(conn),
		.id = {
			.src = in->src->clone(in->src),
			.dst = in->dst->clone(in->dst),
			.spi = spi,
			.proto = IPPROTO_ESP,
			.mark = in->mark,
			.if_id = in->if_id,
		},
	);
	this->mutex->lock(this->mutex);
	this->origins->insert_last(this->origins, origin);
	this->mutex->unlock(this->mutex);

	view_out = keymsg_sa(out, LES_ROLE_PEP_VIEW, out->spi);
	view_out->blob = les_blob_pep_view(out->blob);
	view_in = keymsg_sa(in, LES_ROLE_PEP_VIEW, in->spi);
	view_in->blob = les_blob_pep_view(in->blob);
	/* the PEP's packets go this SA's way, in the peer's name */
	origin_out = keymsg_sa(in, LES_ROLE_PEP_ORIGIN_OUT, spi);
	origin_out->blob = les_blob_pep_origin(in->blob, pep->pep_id, TRUE);
	msg.sas->insert_last(msg.sas, view_out);
	msg.sas->insert_last(msg.sas, view_in);
	msg.sas->insert_last(msg.sas, origin_out);
	queue_send(this, conn, LES_NOTIFY_KEYS, les_keymsg_build(&msg));
	DBG1(DBG_IKE, "les: handing PEP '%Y' (pep_id %u) the keys of CHILD_SA "
		 "%u over '%s'", pep->id, pep->pep_id, msg.child, conn);
	les_keymsg_clear(&msg);
}

/* Hands each agreed PEP of ours the keys of a CHILD_SA whose SAs are kept. */
static void hand_over_all(private_les_handover_t *this, uint32_t child, linked_list_t *agreed, kept_t *out,
						  kept_t *in)
{
	les_peps_t *conf = les_peps_load();
	enumerator_t *e;
	les_pep_t *pep;
	const char *conn;

	e = agreed->create_enumerator(agreed);
	while (e->enumerate(e, &pep))
	{
		conn = les_peps_conn(conf, pep->id);
		if (conn)
		{	/* ours to key; the other side keys its own */
			hand_over(this, child, pep, conn, out, in);
		}
	}
	e->destroy(e);
	les_peps_destroy(conf);
}

/*
 * Both SAs of the CHILD_SA are kept by now: charon installs the outbound
 * SA with the inbound one, a rekey's too, as kernel-netlink reports
 * KERNEL_POLICY_SPI (child_sa.c register_outbound).  The kernel is called
 * here: not under the mutex, which the kernel wrapper's add_sa and del_sa
 * take.
 */
static void child_up(private_les_handover_t *this, uint32_t child,
					 uint32_t out_spi, uint32_t in_spi, linked_list_t *agreed)
{
	kept_t *out, *in;

	this->mutex->lock(this->mutex);
	out = take_kept(this, out_spi, FALSE);
	in = take_kept(this, in_spi, TRUE);
	this->mutex->unlock(this->mutex);
	if (out && in)
	{
		hand_over_all(this, child, agreed, out, in);
	}
	else if (out || in)
	{
		DBG1(DBG_IKE, "les: CHILD_SA %u has one LES SA installed: its PEPs "
			 "get no keys", child);
	}
	if (out)
	{
		kept_destroy(out);
	}
	if (in)
	{
		kept_destroy(in);
	}
}

static void child_down(private_les_handover_t *this, ike_sa_t *ike_sa,
					   child_sa_t *child_sa)
{
	kernel_ipsec_del_sa_t del = {};
	uint32_t child = child_sa->get_unique_id(child_sa);
	linked_list_t *gone = linked_list_create();
	enumerator_t *e;
	origin_t *o;

	this->mutex->lock(this->mutex);
	e = this->origins->create_enumerator(this->origins);
	while (e->enumerate(e, &o))
	{
		/* child ids are unique across IKE_SAs, and a CHILD_SA moves
		 * to the new IKE_SA when its own is rekeyed */
		if (o->child == child)
		{
			this->origins->remove_at(this->origins, e);
			gone->insert_last(gone, o);
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	while (gone->remove_first(gone, (void**)&o) == SUCCESS)
	{
		charon->kernel->del_sa(charon->kernel, &o->id, &del);
		queue_send(this, o->conn, LES_NOTIFY_KEYS_DELETE,
				   les_keymsg_build_delete(child));
		DBG1(DBG_IKE, "les: CHILD_SA %u went: deleting its keys at the PEP "
			 "of '%s'", child, o->conn);
		origin_destroy(o);
	}
	gone->destroy(gone);
}

METHOD(les_handover_t, child_updown, void,
	private_les_handover_t *this, ike_sa_t *ike_sa, child_sa_t *child_sa,
	linked_list_t *agreed, bool up)
{
	if (up)
	{
		child_up(this, child_sa->get_unique_id(child_sa),
				 child_sa->get_spi(child_sa, FALSE),
				 child_sa->get_spi(child_sa, TRUE), agreed);
	}
	else
	{
		child_down(this, ike_sa, child_sa);
	}
}

METHOD(les_handover_t, request, void,
	private_les_handover_t *this, ike_sa_t *ike_sa, message_t *message)
{
	linked_list_t *list;
	notify_t *n;
	u_int added = 0;

	if (message->get_payload(message, PLV2_DELETE))
	{	/* an IKE_SA's delete: not the place for keys */
		return;
	}
	this->mutex->lock(this->mutex);
	list = this->waiting->get(this->waiting,
							  id_key(ike_sa->get_unique_id(ike_sa)));
	/* each key message queued its own exchange: a few per request keep
	 * under charon's 20 notifies a message */
	while (list && added < LES_HANDOVER_NOTIFIES_MAX &&
		   list->remove_first(list, (void**)&n) == SUCCESS)
	{
		message->add_notify(message, FALSE, n->type, n->data);
		notify_destroy(n);
		added++;
	}
	if (list && !list->get_count(list))
	{
		this->waiting->remove(this->waiting,
							  id_key(ike_sa->get_unique_id(ike_sa)));
		list->destroy(list);
	}
	this->mutex->unlock(this->mutex);
}

METHOD(les_handover_t, response, void,
	private_les_handover_t *this, ike_sa_t *ike_sa, message_t *message)
{
	enumerator_t *e;
	payload_t *payload;
	notify_payload_t *notify;
	uint32_t child;
	uint8_t status;

	e = message->create_payload_enumerator(message);
	while (e->enumerate(e, &payload))
	{
		if (payload->get_type(payload) != PLV2_NOTIFY)
		{
			continue;
		}
		notify = (notify_payload_t*)payload;
		if (notify->get_notify_type(notify) != LES_NOTIFY_KEYS_ACK ||
			!les_keymsg_parse_child(notify->get_notification_data(notify),
									&child, &status))
		{
			continue;
		}
		if (status == LES_KEYS_OK)
		{
			DBG1(DBG_IKE, "les: PEP '%Y' took the keys of CHILD_SA %u",
				 ike_sa->get_other_id(ike_sa), child);
		}
		else
		{
			DBG1(DBG_IKE, "les: PEP '%Y' refused the keys of CHILD_SA %u "
				 "(status %u)", ike_sa->get_other_id(ike_sa), child, status);
		}
	}
	e->destroy(e);
}

METHOD(les_handover_t, ike_gone, void,
	private_les_handover_t *this, ike_sa_t *ike_sa)
{
	linked_list_t *list;

	this->mutex->lock(this->mutex);
	list = this->waiting->remove(this->waiting,
								 id_key(ike_sa->get_unique_id(ike_sa)));
	this->mutex->unlock(this->mutex);
	if (list)
	{
		DBG1(DBG_IKE, "les: keys for PEP '%Y' not delivered: its IKE_SA went",
			 ike_sa->get_other_id(ike_sa));
		notifies_destroy(list);
	}
}

METHOD(les_handover_t, ike_rekeyed, void,
	private_les_handover_t *this, uint32_t old, uint32_t new)
{
	linked_list_t *list;

	this->mutex->lock(this->mutex);
	list = this->waiting->remove(this->waiting, id_key(old));
	if (list)
	{
		list = this->waiting->put(this->waiting, id_key(new), list);
		if (list)
		{
			notifies_destroy(list);
		}
	}
	this->mutex->unlock(this->mutex);
}

METHOD(les_handover_t, destroy, void,
	private_les_handover_t *this)
{
	this->kept->destroy_function(this->kept, (void*)kept_destroy);
	this->origins->destroy_function(this->origins, (void*)origin_destroy);
	this->waiting->destroy_function(this->waiting, (void*)notifies_destroy);
	this->mutex->destroy(this->mutex);
	free(this);
}

les_handover_t *les_handover_create(void)
{
	private_les_handover_t *this;

	INIT(this,
		.public = {
			.sa_added = _sa_added,
			.sa_deleted = _sa_deleted,
			.child_updown = _child_updown,
			.request = _request,
			.response = _response,
			.ike_gone = _ike_gone,
			.ike_rekeyed = _ike_rekeyed,
			.destroy = _destroy,
		},
		.kept = linked_list_create(),
		.origins = linked_list_create(),
		.waiting = hashtable_create(hashtable_hash_ptr, hashtable_equals_ptr, 8),
		.mutex = mutex_create(MUTEX_TYPE_DEFAULT),
	);
	return &this->public;
}
