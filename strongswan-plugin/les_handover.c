// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An LES endpoint SA's blob is kept from add_sa until its CHILD_SA is up
 * (both directions' blobs are needed, and the PEP keys derive from them),
 * then wiped.  The keys go to each PEP from a job: a CHILD_SA comes up in a
 * thread that holds its IKE_SA, and checking out a second one there could
 * deadlock.  The job checks out (or creates) the IKE_SA of the connection
 * named for the PEP in les.peps, leaves the keys for it and queues an
 * INFORMATIONAL exchange, whose request this endpoint's message hook
 * fills in.  A PEP's key message is kept while its CHILD_SA lives: when the
 * IKE_SA that carried it goes (the PEP restarted, DPD, it never came up),
 * it is sent again over a new one, later each time the PEP does not take it.
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
#define LES_HANDOVER_NOTIFIES_MAX	16u

/* Seconds before keys whose IKE_SA went are sent again; doubled for each
 * attempt the PEP did not answer, up to 2^4 times. */
#define LES_HANDOVER_RESEND_DELAY	30
#define LES_HANDOVER_RESEND_SHIFT_MAX	4u

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

	/*
	 * Held across the kernel calls that put a pep-origin-in SA anew (a
	 * move, a lost IKE_SA to the PEP), never with @mutex held: one at a
	 * time, each from a copy it checks is still the origin's place.
	 */
	mutex_t *origin_lock;
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

/*
 * A pep-origin-in SA installed here, and the PEP that holds its other end:
 * the key message that PEP got, to send again if need be.
 */
typedef struct {
	uint32_t child;
	char *conn;
	kernel_ipsec_sa_id_t id;
	/* the pep-origin-in SA as installed, its blob the key */
	kept_t *in;
	chunk_t keys;
	/* the IKE_SA the keys went or go over, 0 if they are due again */
	uint32_t ike;
	/* attempts since the PEP last answered */
	u_int attempts;
} origin_t;

/* A notify for a PEP. */
typedef struct {
	uint16_t type;
	chunk_t data;
} notify_t;

/*
 * What a job takes to a PEP's connection: a delete notify, or (@notify
 * NULL) the keys of every origin of @conn that are due.
 */
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

/* @k's SA, with @blob (given up) as its key. */
static kept_t *kept_clone(kept_t *k, chunk_t blob)
{
	kept_t *c;

	INIT(c);
	*c = *k;
	c->src = k->src->clone(k->src);
	c->dst = k->dst->clone(k->dst);
	c->src_ts = k->src_ts->clone_offset(k->src_ts,
							offsetof(traffic_selector_t, clone));
	c->dst_ts = k->dst_ts->clone_offset(k->dst_ts,
							offsetof(traffic_selector_t, clone));
	c->blob = blob;
	return c;
}

static void origin_destroy(origin_t *o)
{
	o->id.src->destroy(o->id.src);
	o->id.dst->destroy(o->id.dst);
	kept_destroy(o->in);
	free(o->conn);
	chunk_clear(&o->keys);
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

/* @h, moved to @to: its address, and its port if NAT-T has one. */
static void host_move(host_t **h, host_t *to)
{
	(*h)->destroy(*h);
	*h = to->clone(to);
}

/* Host selectors of @from in @list go to @to. */
static void ts_move(linked_list_t *list, host_t *from, host_t *to)
{
	enumerator_t *e;
	traffic_selector_t *ts;

	e = list->create_enumerator(list);
	while (e->enumerate(e, &ts))
	{
		if (ts->is_host(ts, from))
		{
			ts->set_address(ts, to);
		}
	}
	e->destroy(e);
}

/* A state of the key message moved with the SA it reads (MOBIKE). */
static void keymsg_sa_move(les_keymsg_sa_t *sa, kernel_ipsec_update_sa_t *data)
{
	host_move(&sa->src, data->new_src);
	host_move(&sa->dst, data->new_dst);
	sa->encap_sport = data->new_encap ? data->new_src->get_port(data->new_src) : 0;
	sa->encap_dport = data->new_encap ? data->new_dst->get_port(data->new_dst) : 0;
}

/*
 * Moves what @o's key message says of the SA @id to @data's addresses; the
 * pep-origin-in SA goes with the inbound SA.  True if it named that SA
 * (mutex held).
 */
static bool origin_move(origin_t *o, kernel_ipsec_sa_id_t *id,
						kernel_ipsec_update_sa_t *data, bool *inbound)
{
	les_keymsg_t msg;
	les_keymsg_sa_t *sa;
	enumerator_t *e;
	const char *why;
	bool moved = FALSE;

	*inbound = o->in->spi == id->spi && o->in->dst->ip_equals(o->in->dst, id->dst);
	if (!les_keymsg_parse(o->keys, &msg, &why))
	{
		return FALSE;
	}
	e = msg.sas->create_enumerator(msg.sas);
	while (e->enumerate(e, &sa))
	{
		if ((sa->role == LES_ROLE_PEP_VIEW && sa->spi == ntohl(id->spi) &&
			 sa->dst->ip_equals(sa->dst, id->dst)) ||
			(*inbound && sa->role == LES_ROLE_PEP_ORIGIN_OUT &&
			 sa->spi == ntohl(o->id.spi)))
		{
			keymsg_sa_move(sa, data);
			moved = TRUE;
		}
	}
	e->destroy(e);
	if (moved)
	{	/* due again; with the inbound SA, once its pep-origin-in SA is
		 * in place (due_again()) */
		chunk_clear(&o->keys);
		o->keys = les_keymsg_build(&msg);
		if (!*inbound)
		{
			o->ike = 0;
			o->attempts = 0;
		}
	}
	if (moved && *inbound)
	{	/* its selectors too, if of its hosts (transport mode), and its
		 * reqid, as charon moves the inbound SA's */
		ts_move(o->in->src_ts, o->in->src, data->new_src);
		ts_move(o->in->dst_ts, o->in->dst, data->new_dst);
		host_move(&o->in->src, data->new_src);
		host_move(&o->in->dst, data->new_dst);
		o->in->encap = data->new_encap;
		if (data->new_reqid)
		{
			o->in->reqid = data->new_reqid;
		}
		host_move(&o->id.src, data->new_src);
		host_move(&o->id.dst, data->new_dst);
	}
	les_keymsg_clear(&msg);
	return moved;
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
 * The pep-origin-in SA @in (the inbound SA's settings, the pep-origin-in
 * blob its key) under SPI @spi (network order), or, @spi 0, one allocated
 * here as for any inbound SA.  Returns its SPI, 0 on failure.
 */
static uint32_t install_origin_in(kept_t *in, uint32_t spi)
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
		.update = !spi,
		.enc_key = in->blob,
	};
	kernel_ipsec_del_sa_t del = {};
	status_t status = FAILED;

	id.spi = spi;
	if (spi || charon->kernel->get_spi(charon->kernel, in->src, in->dst,
									   IPPROTO_ESP, &id.spi) == SUCCESS)
	{
		status = charon->kernel->add_sa(charon->kernel, &id, &data);
		if (status != SUCCESS && !spi)
		{	/* the SPI's larval state */
			charon->kernel->del_sa(charon->kernel, &id, &del);
		}
	}
	return status == SUCCESS ? id.spi : 0;
}

/* Leaves @n for the next INFORMATIONAL request of @ike_sa (mutex held). */
static void leave_for(private_les_handover_t *this, ike_sa_t *ike_sa,
					  notify_t *n)
{
	linked_list_t *list;
	void *key = id_key(ike_sa->get_unique_id(ike_sa));

	list = this->waiting->get(this->waiting, key);
	if (!list)
	{
		list = linked_list_create();
		this->waiting->put(this->waiting, key, list);
	}
	list->insert_last(list, n);
}

/* Whether keys for @conn are due (mutex held). */
static bool keys_due(private_les_handover_t *this, const char *conn)
{
	enumerator_t *e;
	origin_t *o;
	bool due = FALSE;

	e = this->origins->create_enumerator(this->origins);
	while (!due && e->enumerate(e, &o))
	{
		due = !o->ike && streq(o->conn, conn);
	}
	e->destroy(e);
	return due;
}

/* Leaves the keys due for @conn for @ike_sa; returns how many (mutex held). */
static u_int leave_keys(private_les_handover_t *this, const char *conn,
						ike_sa_t *ike_sa)
{
	enumerator_t *e;
	origin_t *o;
	notify_t *n;
	u_int count = 0;

	e = this->origins->create_enumerator(this->origins);
	while (e->enumerate(e, &o))
	{
		if (o->ike || !streq(o->conn, conn))
		{
			continue;
		}
		INIT(n,
			.type = LES_NOTIFY_KEYS,
			.data = chunk_clone(o->keys),
		);
		leave_for(this, ike_sa, n);
		o->ike = ike_sa->get_unique_id(ike_sa);
		o->attempts++;
		count++;
	}
	e->destroy(e);
	return count;
}

static job_requeue_t send_job(send_t *s)
{
	private_les_handover_t *this = s->this;
	peer_cfg_t *peer_cfg;
	ike_sa_t *ike_sa;
	u_int count = 1;

	if (s->notify)
	{	/* a delete; no IKE_SA to the PEP: it has deleted the keys already */
		ike_sa = charon->ike_sa_manager->checkout_by_name(
									charon->ike_sa_manager, s->conn, FALSE);
	}
	else
	{
		this->mutex->lock(this->mutex);
		count = keys_due(this, s->conn);
		this->mutex->unlock(this->mutex);
		if (!count)
		{	/* another job took them */
			return JOB_REQUEUE_NONE;
		}
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
	if (s->notify)
	{
		leave_for(this, ike_sa, s->notify);
		s->notify = NULL;
	}
	else
	{
		count = leave_keys(this, s->conn, ike_sa);
	}
	this->mutex->unlock(this->mutex);
	if (!count)
	{	/* another job took them meanwhile */
		if (ike_sa->get_state(ike_sa) == IKE_CREATED)
		{
			charon->ike_sa_manager->checkin_and_destroy(
											charon->ike_sa_manager, ike_sa);
		}
		else
		{
			charon->ike_sa_manager->checkin(charon->ike_sa_manager, ike_sa);
		}
		return JOB_REQUEUE_NONE;
	}
	/* an INFORMATIONAL exchange, after IKE_AUTH if it is a new IKE_SA: one
	 * for each LES_HANDOVER_NOTIFIES_MAX notifies left */
	do
	{
		ike_sa->queue_task(ike_sa, (task_t*)ike_dpd_create(TRUE));
		count -= min(count, LES_HANDOVER_NOTIFIES_MAX);
	}
	while (count);
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

static job_t *send_job_create(private_les_handover_t *this, const char *conn,
							  notify_t *notify)
{
	send_t *s;

	INIT(s,
		.this = this,
		.conn = strdup(conn),
		.notify = notify,
	);
	return (job_t*)callback_job_create((callback_job_cb_t)send_job, s,
									   (void*)send_destroy, NULL);
}

/* Sends the keys due for @conn: now, or in @delay seconds. */
static void queue_keys(private_les_handover_t *this, const char *conn,
					   uint32_t delay)
{
	job_t *job = send_job_create(this, conn, NULL);

	if (delay)
	{
		lib->scheduler->schedule_job(lib->scheduler, job, delay);
	}
	else
	{
		lib->processor->queue_job(lib->processor, job);
	}
}

static void queue_delete(private_les_handover_t *this, const char *conn,
						 uint32_t child)
{
	notify_t *n;

	INIT(n,
		.type = LES_NOTIFY_KEYS_DELETE,
		.data = les_keymsg_build_delete(child),
	);
	lib->processor->queue_job(lib->processor, send_job_create(this, conn, n));
}

/* Hands PEP @pep (agreed, @conn is its connection) the keys of a CHILD_SA. */
static void hand_over(private_les_handover_t *this, uint32_t child,
					  les_pep_t *pep, const char *conn, kept_t *out, kept_t *in)
{
	les_keymsg_t msg = {
		.child = child,
		.sas = linked_list_create(),
	};
	les_keymsg_sa_t *view_out, *view_in, *origin_out;
	origin_t *origin;
	kept_t *origin_in;
	uint32_t spi;

	origin_in = kept_clone(in, les_blob_pep_origin(in->blob, pep->pep_id,
												   FALSE));
	spi = origin_in->blob.len ? install_origin_in(origin_in, 0) : 0;
	if (!spi)
	{
		DBG1(DBG_IKE, "les: installing the pep-origin-in SA for PEP '%Y' "
			 "failed: it gets no keys", pep->id);
		kept_destroy(origin_in);
		les_keymsg_clear(&msg);
		return;
	}
	INIT(origin,
		.child = msg.child,
		.conn = strdup(conn),
		.in = origin_in,
		.id = {
			.src = in->src->clone(in->src),
			.dst = in->dst->clone(in->dst),
			.spi = spi,
			.proto = IPPROTO_ESP,
			.mark = in->mark,
			.if_id = in->if_id,
		},
	);
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
	origin->keys = les_keymsg_build(&msg);
	this->mutex->lock(this->mutex);
	this->origins->insert_last(this->origins, origin);
	this->mutex->unlock(this->mutex);
	queue_keys(this, conn, 0);
	DBG1(DBG_IKE, "les: handing PEP '%Y' (pep_id %u) the keys of CHILD_SA "
		 "%u over '%s'", pep->id, pep->pep_id, msg.child, conn);
	les_keymsg_clear(&msg);
}

/* Hands each agreed PEP of ours the keys of a CHILD_SA whose SAs are kept. */
static void hand_over_all(private_les_handover_t *this, uint32_t child,
						  linked_list_t *agreed, kept_t *out, kept_t *in)
{
	les_peps_t *conf = les_peps_load();
	peer_cfg_t *peer_cfg;
	enumerator_t *e;
	les_pep_t *pep;
	const char *conn;

	e = agreed->create_enumerator(agreed);
	while (e->enumerate(e, &pep))
	{
		conn = les_peps_conn(conf, pep->id);
		if (!conn)
		{	/* the other side keys its own */
			continue;
		}
		peer_cfg = charon->backends->get_peer_cfg_by_name(charon->backends,
														  (char*)conn);
		if (!peer_cfg)
		{
			DBG1(DBG_IKE, "les: no connection '%s' to hand PEP '%Y' its keys",
				 conn, pep->id);
			continue;
		}
		peer_cfg->destroy(peer_cfg);
		hand_over(this, child, pep, conn, out, in);
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
		queue_delete(this, o->conn, child);
		DBG1(DBG_IKE, "les: CHILD_SA %u went: deleting its keys at the PEP "
			 "of '%s'", child, o->conn);
		origin_destroy(o);
	}
	gone->destroy(gone);
}

/* The keys of the origin @c copies are due again. */
static void due_again(private_les_handover_t *this, origin_t *c)
{
	enumerator_t *e;
	origin_t *o;

	this->mutex->lock(this->mutex);
	e = this->origins->create_enumerator(this->origins);
	while (e->enumerate(e, &o))
	{
		if (o->child == c->child && streq(o->conn, c->conn))
		{
			o->ike = 0;
			o->attempts = 0;
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
}

/* Whether the origin @c copies is still where @c has it. */
static bool origin_at(private_les_handover_t *this, origin_t *c)
{
	enumerator_t *e;
	origin_t *o;
	bool at = FALSE;

	this->mutex->lock(this->mutex);
	e = this->origins->create_enumerator(this->origins);
	while (!at && e->enumerate(e, &o))
	{
		at = o->child == c->child && streq(o->conn, c->conn) &&
			 o->id.spi == c->id.spi &&
			 o->id.src->ip_equals(o->id.src, c->id.src) &&
			 o->id.dst->ip_equals(o->id.dst, c->id.dst);
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	return at;
}

/* Removes and returns the origin of CHILD_SA @child for @conn, or NULL. */
static origin_t *take_origin(private_les_handover_t *this, uint32_t child,
							 const char *conn)
{
	enumerator_t *e;
	origin_t *o, *found = NULL;

	this->mutex->lock(this->mutex);
	e = this->origins->create_enumerator(this->origins);
	while (!found && e->enumerate(e, &o))
	{
		if (o->child == child && streq(o->conn, conn))
		{
			this->origins->remove_at(this->origins, e);
			found = o;
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	return found;
}

/*
 * kernel-netlink moves an SA by deleting it and adding it anew under its
 * SPI; les.ko deletes the pep-origin-in SA bound to an inbound one with it
 * (kernel/sa_bind.c).  That SA is installed again at the new addresses,
 * bound to the SA as it is now, and each PEP that holds the CHILD_SA's
 * keys gets them again, moved: its states at the old addresses no longer
 * see the tunnel's packets.  The kernel is called outside the mutex.
 */
METHOD(les_handover_t, sa_updated, void,
	private_les_handover_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_update_sa_t *data)
{
	linked_list_t *conns = linked_list_create(), *fresh = linked_list_create();
	kernel_ipsec_del_sa_t del = {};
	enumerator_t *e;
	origin_t *o, *c;
	host_t *was_src, *was_dst;
	char *conn;
	bool inbound, installed;

	this->mutex->lock(this->mutex);
	e = this->origins->create_enumerator(this->origins);
	while (e->enumerate(e, &o))
	{
		was_src = o->id.src->clone(o->id.src);
		was_dst = o->id.dst->clone(o->id.dst);
		if (!origin_move(o, id, data, &inbound))
		{
			was_src->destroy(was_src);
			was_dst->destroy(was_dst);
			continue;
		}
		DBG1(DBG_IKE, "les: SA %.8x moved to %H - %H: the PEP of '%s' gets "
			 "the keys of CHILD_SA %u again", ntohl(id->spi), data->new_src,
			 data->new_dst, o->conn, o->child);
		if (inbound)
		{	/* a copy, as keys_lost() makes: .in where it goes, .id
			 * where it was */
			INIT(c,
				.child = o->child,
				.conn = strdup(o->conn),
				.id = o->id,
				.in = kept_clone(o->in, chunk_clone(o->in->blob)),
			);
			c->id.src = was_src;
			c->id.dst = was_dst;
			fresh->insert_last(fresh, c);
			continue;
		}
		was_src->destroy(was_src);
		was_dst->destroy(was_dst);
		if (!conns->find_first(conns, linked_list_match_str, NULL, o->conn))
		{
			conns->insert_last(conns, strdup(o->conn));
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	/*
	 * The pep-origin-in SA first: the PEP's ACKs follow its keys.  les.ko
	 * deletes the old one only once the inbound SA it is bound to is
	 * destroyed, after xfrm's grace period: where its address did not
	 * change (the peer moved) it would still be in the new one's place.
	 */
	while (fresh->remove_first(fresh, (void**)&c) == SUCCESS)
	{
		this->origin_lock->lock(this->origin_lock);
		charon->kernel->del_sa(charon->kernel, &c->id, &del);
		installed = install_origin_in(c->in, c->id.spi);
		this->origin_lock->unlock(this->origin_lock);
		if (installed)
		{
			due_again(this, c);
			if (!conns->find_first(conns, linked_list_match_str, NULL,
								   c->conn))
			{
				conns->insert_last(conns, strdup(c->conn));
			}
		}
		else if ((o = take_origin(this, c->child, c->conn)))
		{
			DBG1(DBG_IKE, "les: installing the pep-origin-in SA %.8x at %H "
				 "failed: deleting the keys of CHILD_SA %u at the PEP of "
				 "'%s'", ntohl(c->id.spi), c->in->dst, c->child, c->conn);
			queue_delete(this, o->conn, o->child);
			origin_destroy(o);
		}
		origin_destroy(c);
	}
	fresh->destroy(fresh);
	while (conns->remove_first(conns, (void**)&conn) == SUCCESS)
	{
		queue_keys(this, conn, 0);
		free(conn);
	}
	conns->destroy(conns);
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

/*
 * The PEP answered for @child over IKE_SA @ike: attempts start again; keys
 * it refused are not sent again, and their pep-origin-in SA goes.
 */
static void answered(private_les_handover_t *this, uint32_t ike,
					 uint32_t child, bool refused)
{
	kernel_ipsec_del_sa_t del = {};
	enumerator_t *e;
	origin_t *o, *gone = NULL;

	this->mutex->lock(this->mutex);
	e = this->origins->create_enumerator(this->origins);
	while (e->enumerate(e, &o))
	{
		if (o->ike == ike && o->child == child)
		{
			o->attempts = 0;
			if (refused)
			{
				this->origins->remove_at(this->origins, e);
				gone = o;
				break;
			}
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	if (gone)
	{
		charon->kernel->del_sa(charon->kernel, &gone->id, &del);
		origin_destroy(gone);
	}
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
		answered(this, ike_sa->get_unique_id(ike_sa), child,
				 status != LES_KEYS_OK);
		if (status == LES_KEYS_OK)
		{
			DBG1(DBG_IKE, "les: PEP '%Y' took the keys of CHILD_SA %u",
				 ike_sa->get_other_id(ike_sa), child);
		}
		else
		{
			DBG1(DBG_IKE, "les: PEP '%Y' refused the keys of CHILD_SA %u "
				 "(status %u): not sent again", ike_sa->get_other_id(ike_sa),
				 child, status);
		}
	}
	e->destroy(e);
}

/*
 * The keys that went over IKE_SA @ike are due again (mutex held): returns
 * the connections to send them on, each once, with the delay of its most
 * tried CHILD_SA; and in @fresh a copy (origin_t, no keys) of each of
 * their pep-origin-in SAs.
 */
static linked_list_t *keys_lost(private_les_handover_t *this, uint32_t ike,
								u_int *delay, linked_list_t *fresh)
{
	linked_list_t *conns = linked_list_create();
	enumerator_t *e;
	origin_t *o, *c;
	uint32_t base;
	u_int shift = 0;

	e = this->origins->create_enumerator(this->origins);
	while (e->enumerate(e, &o))
	{
		if (o->ike != ike)
		{
			continue;
		}
		o->ike = 0;
		shift = max(shift, o->attempts ? o->attempts - 1 : 0);
		if (!conns->find_first(conns, linked_list_match_str, NULL, o->conn))
		{
			conns->insert_last(conns, strdup(o->conn));
		}
		INIT(c,
			.child = o->child,
			.conn = strdup(o->conn),
			.id = o->id,
			.in = kept_clone(o->in, chunk_clone(o->in->blob)),
		);
		c->id.src = o->id.src->clone(o->id.src);
		c->id.dst = o->id.dst->clone(o->id.dst);
		fresh->insert_last(fresh, c);
	}
	e->destroy(e);
	/* at least a second: an IKE_SA that fails at once must not spin */
	base = max(1u, min(lib->settings->get_time(lib->settings,
							"%s.plugins.les.resend_delay",
							LES_HANDOVER_RESEND_DELAY, lib->ns), 3600u));
	*delay = base << min(shift, LES_HANDOVER_RESEND_SHIFT_MAX);
	return conns;
}

METHOD(les_handover_t, ike_gone, void,
	private_les_handover_t *this, ike_sa_t *ike_sa)
{
	linked_list_t *list, *conns, *fresh = linked_list_create();
	kernel_ipsec_del_sa_t del = {};
	origin_t *o;
	char *conn;
	u_int delay;

	this->mutex->lock(this->mutex);
	list = this->waiting->remove(this->waiting,
								 id_key(ike_sa->get_unique_id(ike_sa)));
	conns = keys_lost(this, ike_sa->get_unique_id(ike_sa), &delay, fresh);
	this->mutex->unlock(this->mutex);
	if (list)
	{
		notifies_destroy(list);
	}
	/*
	 * Each pep-origin-in SA anew under its SPI, its replay window empty: a
	 * PEP that restarted installs its pep-origin-out state anew too, and
	 * counts from 1 again.  (A CHILD_SA that goes meanwhile leaves this SA
	 * to its lifetime.)
	 */
	while (fresh->remove_first(fresh, (void**)&o) == SUCCESS)
	{
		this->origin_lock->lock(this->origin_lock);
		/* not if its SA moved meanwhile (MOBIKE): that put it anew */
		if (origin_at(this, o))
		{
			charon->kernel->del_sa(charon->kernel, &o->id, &del);
			if (!install_origin_in(o->in, o->id.spi))
			{
				DBG1(DBG_IKE, "les: installing a pep-origin-in SA again failed");
			}
		}
		this->origin_lock->unlock(this->origin_lock);
		origin_destroy(o);
	}
	fresh->destroy(fresh);
	while (conns->remove_first(conns, (void**)&conn) == SUCCESS)
	{
		DBG1(DBG_IKE, "les: the IKE_SA to the PEP of '%s' went: its keys "
			 "go again in %u s", conn, delay);
		queue_keys(this, conn, delay);
		free(conn);
	}
	conns->destroy(conns);
}

METHOD(les_handover_t, ike_rekeyed, void,
	private_les_handover_t *this, uint32_t old, uint32_t new)
{
	linked_list_t *list;
	enumerator_t *e;
	origin_t *o;

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
	e = this->origins->create_enumerator(this->origins);
	while (e->enumerate(e, &o))
	{
		if (o->ike == old)
		{
			o->ike = new;
		}
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
}

METHOD(les_handover_t, destroy, void,
	private_les_handover_t *this)
{
	this->kept->destroy_function(this->kept, (void*)kept_destroy);
	this->origins->destroy_function(this->origins, (void*)origin_destroy);
	this->waiting->destroy_function(this->waiting, (void*)notifies_destroy);
	this->mutex->destroy(this->mutex);
	this->origin_lock->destroy(this->origin_lock);
	free(this);
}

les_handover_t *les_handover_create(void)
{
	private_les_handover_t *this;

	INIT(this,
		.public = {
			.sa_added = _sa_added,
			.sa_deleted = _sa_deleted,
			.sa_updated = _sa_updated,
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
		.origin_lock = mutex_create(MUTEX_TYPE_DEFAULT),
	);
	return &this->public;
}
