// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * PEP settings and agreement.  A PEP reads the header zones of both
 * directions of the CHILD_SAs it is keyed for, so each side decides for
 * its own traffic: the initiator's PEPs are agreed only if the responder
 * trusts them, the responder's only if the initiator does.
 */
#include "les_peps.h"

/* library DBG: charon routes it to its bus (dbg_bus), tests to stderr */
#include <utils/debug.h>

/* Identities from the key = value pairs of a settings section, and their
 * keys into @names if not NULL. */
static linked_list_t *load_ids(const char *section, linked_list_t *names)
{
	linked_list_t *ids = linked_list_create();
	enumerator_t *e;
	identification_t *id;
	char *key, *value;

	e = lib->settings->create_key_value_enumerator(lib->settings,
								"%s.plugins.les.%s", lib->ns, section);
	while (e->enumerate(e, &key, &value))
	{
		id = value && *value ? identification_create_from_string(value) : NULL;
		if (!id || id->get_type(id) == ID_ANY)
		{
			DBG1(DBG_CFG, "les: ignoring %s.%s: not an identity", section, key);
			DESTROY_IF(id);
			continue;
		}
		ids->insert_last(ids, id);
		if (names)
		{
			names->insert_last(names, strdup(key));
		}
	}
	e->destroy(e);
	return ids;
}

les_peps_t *les_peps_create(linked_list_t *mine, linked_list_t *trust)
{
	les_peps_t *conf;

	INIT(conf,
		.mine = mine,
		.trust = trust,
	);
	return conf;
}

les_peps_t *les_peps_load(void)
{
	linked_list_t *conns = linked_list_create();
	les_peps_t *conf;

	conf = les_peps_create(load_ids("peps", conns), load_ids("trust", NULL));
	conf->conns = conns;
	return conf;
}

const char *les_peps_conn(les_peps_t *conf, identification_t *pep)
{
	enumerator_t *ids, *names;
	identification_t *id;
	char *name, *found = NULL;

	if (!conf->conns)
	{
		return NULL;
	}
	ids = conf->mine->create_enumerator(conf->mine);
	names = conf->conns->create_enumerator(conf->conns);
	while (!found && ids->enumerate(ids, &id) && names->enumerate(names, &name))
	{
		if (id->equals(id, pep))
		{
			found = name;
		}
	}
	ids->destroy(ids);
	names->destroy(names);
	return found;
}

void les_peps_destroy(les_peps_t *conf)
{
	if (conf)
	{
		conf->mine->destroy_offset(conf->mine,
								   offsetof(identification_t, destroy));
		conf->trust->destroy_offset(conf->trust,
									offsetof(identification_t, destroy));
		if (conf->conns)
		{
			conf->conns->destroy_function(conf->conns, free);
		}
		free(conf);
	}
}

void les_peps_free(linked_list_t *agreed)
{
	if (agreed)
	{
		agreed->destroy_function(agreed, (void*)les_pep_destroy);
	}
}

/* Does @id match one of @patterns (identification_t*)? */
static bool matches_any(identification_t *id, linked_list_t *patterns)
{
	enumerator_t *e;
	identification_t *pattern;
	bool found = FALSE;

	e = patterns->create_enumerator(patterns);
	while (!found && e->enumerate(e, &pattern))
	{
		found = id->matches(id, pattern) > ID_MATCH_NONE;
	}
	e->destroy(e);
	return found;
}

static bool listed(identification_t *id, linked_list_t *agreed)
{
	enumerator_t *e;
	les_pep_t *pep;
	bool found = FALSE;

	e = agreed->create_enumerator(agreed);
	while (!found && e->enumerate(e, &pep))
	{
		found = id->equals(id, pep->id);
	}
	e->destroy(e);
	return found;
}

/* Appends each of @ids that matches @trust and is not yet agreed. */
static void agree_trusted(linked_list_t *agreed, linked_list_t *ids,
						  linked_list_t *trust)
{
	enumerator_t *e;
	identification_t *id;

	e = ids->create_enumerator(ids);
	while (e->enumerate(e, &id))
	{
		if (matches_any(id, trust) && !listed(id, agreed))
		{
			agreed->insert_last(agreed, les_pep_create(
					agreed->get_count(agreed) + 1, id->clone(id)));
		}
	}
	e->destroy(e);
}

linked_list_t *les_peps_agree(les_peps_t *conf, les_notify_t *peer)
{
	linked_list_t *agreed = linked_list_create();

	agree_trusted(agreed, peer->peps, conf->trust);
	agree_trusted(agreed, conf->mine, peer->trust);
	return agreed;
}

static bool has_pep_id(linked_list_t *agreed, uint32_t pep_id)
{
	enumerator_t *e;
	les_pep_t *pep;
	bool found = FALSE;

	e = agreed->create_enumerator(agreed);
	while (!found && e->enumerate(e, &pep))
	{
		found = pep->pep_id == pep_id;
	}
	e->destroy(e);
	return found;
}

static bool is_mine(identification_t *id, linked_list_t *mine)
{
	enumerator_t *e;
	identification_t *own;
	bool found = FALSE;

	e = mine->create_enumerator(mine);
	while (!found && e->enumerate(e, &own))
	{
		found = id->equals(id, own);
	}
	e->destroy(e);
	return found;
}

linked_list_t *les_peps_accept(les_peps_t *conf, les_notify_t *answer,
							   u_int *refused)
{
	linked_list_t *agreed = linked_list_create();
	enumerator_t *e;
	les_pep_t *pep;

	*refused = 0;
	if (!answer->agreed)
	{
		return agreed;
	}
	e = answer->agreed->create_enumerator(answer->agreed);
	while (e->enumerate(e, &pep))
	{
		if ((!is_mine(pep->id, conf->mine) &&
			 !matches_any(pep->id, conf->trust)) ||
			has_pep_id(agreed, pep->pep_id) || listed(pep->id, agreed))
		{
			DBG1(DBG_IKE, "les: refusing agreed PEP '%Y' (pep_id %u): %s",
				 pep->id, pep->pep_id,
				 has_pep_id(agreed, pep->pep_id) || listed(pep->id, agreed) ?
				 "listed twice" : "neither ours nor trusted");
			(*refused)++;
			continue;
		}
		agreed->insert_last(agreed, les_pep_create(pep->pep_id,
												   pep->id->clone(pep->id)));
	}
	e->destroy(e);
	return agreed;
}
